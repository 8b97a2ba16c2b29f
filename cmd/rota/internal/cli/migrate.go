package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/internal/migrate"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
	"github.com/rotajobs/rota/store/sqlite"
)

// migrateCommand is `rota migrate`: it brings a store's schema up to date,
// or with --status only reports its version, or with --print-sql shows the
// SQL it would run. Stores migrate by themselves when they open; this is
// for deployments that run migrations as a step of their own (and start
// PostgreSQL nodes that skip them), and for people who review them first.
func migrateCommand() *cobra.Command {
	var dsn, schema, dataDir string
	var status, printSQL bool
	cmd := &cobra.Command{
		Use:   "migrate [--store postgres://…|PATH] [--status | --print-sql]",
		Short: "Create or upgrade a store's schema, show its version, or print the SQL it would run",
		Long: `Create or upgrade the schema of a store: the embedded SQLite database
(--data, or --store PATH) or a PostgreSQL one (--store postgres://…).

Migrations are versioned and embedded in rota; each applies once: on
SQLite all in one transaction, on PostgreSQL each in its own (or statement
by statement, to build indexes concurrently) without holding locks on
rota's tables for long, so that nodes of the previous release keep
working meanwhile (docs/postgres.md, Rolling upgrades). Several nodes
(or several runs of this command) may migrate at once: they queue on a lock and the first applies what is
missing. With --status, nothing changes; the schema's version is printed
next to the version this rota knows. With --print-sql, nothing changes
either; the SQL of the missing migrations is printed, as it would run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status && printSQL {
				return usageErrorf("--status and --print-sql: choose one")
			}
			if dsn == "" {
				dsn = filepath.Join(dataDir, "rota.db")
			}
			out := cmd.OutOrStdout()
			var (
				have, now int
				latest    int
				where     string
				pending   []migrate.Migration
				apply     func() error
				version   func() (int, error)
			)
			switch store.SchemeOf(dsn) {
			case "postgres", "postgresql":
				ctx := cmd.Context()
				st, err := postgres.Open(ctx, dsn, postgres.Config{
					Schema: schema, SkipMigrate: true, NoListen: true, NoNotify: true, MaxConns: 2,
				})
				if err != nil {
					return err
				}
				defer st.Close()
				where, latest = "schema "+st.Schema(), postgres.LatestSchemaVersion()
				version = func() (int, error) { return st.SchemaVersion(ctx) }
				apply = func() error { return st.Migrate(ctx) }
				if printSQL {
					if pending, err = st.PendingMigrations(ctx); err != nil {
						return err
					}
				}
			case "sqlite":
				path := strings.TrimPrefix(dsn, "sqlite:")
				where, latest = "database "+path, sqlite.LatestSchemaVersion()
				version = func() (int, error) {
					p, err := sqlite.PendingMigrations(path)
					return latest - len(p), err
				}
				apply = func() error {
					st, err := sqlite.Open(path, sqlite.Config{}) // opening migrates
					if err != nil {
						return err
					}
					return st.Close()
				}
				if printSQL {
					var err error
					if pending, err = sqlite.PendingMigrations(path); err != nil {
						return err
					}
				}
			default:
				return usageErrorf("--store %q: want a SQLite path, sqlite:PATH or postgres://…", dsn)
			}
			if printSQL {
				if len(pending) == 0 {
					fmt.Fprintf(out, "-- %s is up to date at version %d: nothing to run\n", where, latest)
					return nil
				}
				how := "in one transaction"
				if store.SchemeOf(dsn) != "sqlite" && latest-len(pending) > 0 {
					how = "each in a transaction of its own, or statement by statement where it says rota:no-transaction"
				}
				fmt.Fprintf(out, "-- %s: %d migration(s) to run, %s\n\n%s", where, len(pending), how, migrate.Script(pending))
				return nil
			}
			have, err := version()
			if err != nil {
				return err
			}
			if status {
				fmt.Fprintf(out, "%s: version %d; this rota knows up to version %d\n", where, have, latest)
				switch {
				case have < latest:
					fmt.Fprintln(out, "run `rota migrate` to apply the missing migrations")
				case have > latest:
					fmt.Fprintln(out, "the schema is newer than this rota: upgrade rota")
				}
				return nil
			}
			if err := apply(); err != nil {
				return err
			}
			if now, err = version(); err != nil {
				return err
			}
			if now == have {
				fmt.Fprintf(out, "%s: up to date at version %d\n", where, now)
			} else {
				fmt.Fprintf(out, "%s: migrated from version %d to %d\n", where, have, now)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "store", "", "the store: a postgres:// URL, or a SQLite path (default: the database in --data)")
	f.StringVar(&dataDir, "data", "rota-data", "directory of the embedded SQLite database, when --store is not given")
	f.StringVar(&schema, "schema", "rota", "PostgreSQL: the schema that holds rota's tables")
	f.BoolVar(&status, "status", false, "only print the schema's version")
	f.BoolVar(&printSQL, "print-sql", false, "only print the SQL of the migrations that would run")
	return cmd
}
