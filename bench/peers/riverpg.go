// `peers river-pg` measures River (github.com/riverqueue/river) on
// PostgreSQL through riverpgxv5, for comparison with `rota bench`: a drain of
// N pre-inserted no-op jobs, or steady enqueue→start latency at a fixed rate.
// It prints one JSON line.

package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// riverPGMain is `peers river-pg`.
func riverPGMain(args []string) error {
	var o riverOptions
	fs := flag.NewFlagSet("river-pg", flag.ContinueOnError)
	dsn := fs.String("dsn", os.Getenv("ROTA_BENCH_POSTGRES"), "PostgreSQL URL (default $ROTA_BENCH_POSTGRES)")
	schema := fs.String("schema", "", "schema for River's tables (created if missing; default: the search_path's)")
	poolSize := fs.Int("pool", 0, "pgxpool MaxConns (0: pgxpool's default, max(4, cores), as `river bench`)")
	riverFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dsn == "" {
		return errors.New("give -dsn or $ROTA_BENCH_POSTGRES")
	}
	ctx := context.Background()
	stop := startCPUProfile()
	r, err := runPG(ctx, *dsn, *schema, int32(*poolSize), o)
	stop()
	if err != nil {
		return err
	}
	emit(r)
	return nil
}

func runPG(ctx context.Context, dsn, schema string, poolSize int32, o riverOptions) (map[string]any, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "rota-peers-river-pg"
	if poolSize > 0 {
		cfg.MaxConns = poolSize
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if schema != "" {
		if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return nil, err
		}
	}
	table := func(name string) string {
		if schema == "" {
			return name
		}
		return pgx.Identifier{schema, name}.Sanitize()
	}
	driver := riverpgxv5.New(pool)
	var version, syncCommit, fsync string
	pool.QueryRow(ctx, "SHOW server_version").Scan(&version)
	pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&syncCommit)
	pool.QueryRow(ctx, "SHOW fsync").Scan(&fsync)
	b := backend[pgx.Tx]{
		store: "postgres", driver: driver, schema: schema,
		reset: func(ctx context.Context) error {
			// As River's bench: truncate its tables and VACUUM FULL the jobs table.
			if err := driver.GetExecutor().TableTruncate(ctx, &riverdriver.TableTruncateParams{
				Schema: schema, Table: driver.GetMigrationTruncateTables(riverdriver.MigrationLineMain, 0),
			}); err != nil {
				return err
			}
			_, err := pool.Exec(ctx, "VACUUM FULL "+table("river_job"))
			return err
		},
		afterFill:      func(context.Context) error { return nil },
		serverCPUSince: func() func() time.Duration { return procCPUSince(postmasterPID(ctx, pool), true) },
		completed: func(ctx context.Context) (int, error) {
			var n int
			err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table("river_job")+" WHERE state = $1", jobStateCompleted).Scan(&n)
			return n, err
		},
		info: map[string]any{
			"store_version": version, "synchronous_commit": syncCommit, "fsync": fsync,
			"pool_max_conns": pool.Config().MaxConns,
		},
	}
	return runRiver(ctx, b, o)
}

// postmasterPID is the parent of this connection's backend, when the server
// runs on this machine; otherwise 0.
func postmasterPID(ctx context.Context, pool *pgxpool.Pool) int {
	var pid int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return 0
	}
	f := procStat(pid)
	if len(f) < 4 || f[1] != "postgres" {
		return 0
	}
	pm, _ := strconv.Atoi(f[3])
	return pm
}
