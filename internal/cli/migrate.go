package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/store/postgres"
)

// migrateCommand is `rota migrate`: it brings a PostgreSQL store's schema
// up to date, or with --status only reports its version. Nodes migrate by
// themselves when they open the store; this is for deployments that run
// migrations as a step of their own (and start nodes that skip them).
func migrateCommand() *cobra.Command {
	var dsn, schema string
	var status bool
	cmd := &cobra.Command{
		Use:   "migrate --store postgres://… [--status]",
		Short: "Create or upgrade the schema of a PostgreSQL store, or show its version",
		Long: `Create or upgrade the schema of a PostgreSQL store.

Migrations are versioned and embedded in rota; each applies once, all in
one transaction. Several nodes (or several runs of this command) may
migrate at once: they queue on a lock and the first applies what is
missing. With --status, nothing changes; the schema's version is printed
next to the version this rota knows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
				return usageErrorf("--store %q: want a postgres:// URL", dsn)
			}
			ctx := cmd.Context()
			st, err := postgres.Open(ctx, dsn, postgres.Config{
				Schema: schema, SkipMigrate: true, NoListen: true, NoNotify: true, MaxConns: 2,
			})
			if err != nil {
				return err
			}
			defer st.Close()
			have, err := st.SchemaVersion(ctx)
			if err != nil {
				return err
			}
			latest := postgres.LatestSchemaVersion()
			out := cmd.OutOrStdout()
			if status {
				fmt.Fprintf(out, "schema %s: version %d; this rota knows up to version %d\n", st.Schema(), have, latest)
				switch {
				case have < latest:
					fmt.Fprintln(out, "run `rota migrate` to apply the missing migrations")
				case have > latest:
					fmt.Fprintln(out, "the schema is newer than this rota: upgrade rota")
				}
				return nil
			}
			if err := st.Migrate(ctx); err != nil {
				return err
			}
			now, err := st.SchemaVersion(ctx)
			if err != nil {
				return err
			}
			if now == have {
				fmt.Fprintf(out, "schema %s: up to date at version %d\n", st.Schema(), now)
			} else {
				fmt.Fprintf(out, "schema %s: migrated from version %d to %d\n", st.Schema(), have, now)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "store", "", "the PostgreSQL store: a postgres:// URL (required)")
	f.StringVar(&schema, "schema", "rota", "the schema that holds rota's tables")
	f.BoolVar(&status, "status", false, "only print the schema's version")
	cmd.MarkFlagRequired("store")
	return cmd
}
