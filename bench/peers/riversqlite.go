// `peers river-sqlite` measures River (github.com/riverqueue/river) on
// SQLite through riversqlite and modernc.org/sqlite (the database/sql driver
// River's SQLite docs use and River tests with), for comparison with
// `rota bench`: a drain of N pre-inserted no-op jobs, or steady enqueue→start
// latency at a fixed rate. It prints one JSON line.

package main

import (
	"context"
	"database/sql"
	"flag"
	"os"
	"path/filepath"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite"
)

// riverSQLiteMain is `peers river-sqlite`.
func riverSQLiteMain(args []string) error {
	var o riverOptions
	fs := flag.NewFlagSet("river-sqlite", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the database file (default: a new temporary one, removed afterwards)")
	riverFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		return err
	}
	d := *dir
	if d == "" {
		t, err := os.MkdirTemp("", "peers-river-sqlite-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(t)
		d = t
	}
	stop := startCPUProfile()
	r, err := runSQLite(context.Background(), filepath.Join(d, "river.sqlite3"), o)
	stop()
	if err != nil {
		return err
	}
	emit(r)
	return nil
}

func runSQLite(ctx context.Context, path string, o riverOptions) (map[string]any, error) {
	// A fresh file per run (as rota bench). WAL, as River's own tests and
	// CLI open it; synchronous left at SQLite's default (FULL: each commit
	// syncs the WAL); one connection, as River's SQLite docs require.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var version, journal string
	var synchronous int
	db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version)
	db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&journal)
	db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&synchronous)
	b := backend[*sql.Tx]{
		store: "sqlite", driver: riversqlite.New(db),
		reset: func(context.Context) error { return nil }, // a fresh file
		afterFill: func(ctx context.Context) error {
			// As rota bench: fold the fill's WAL back into the database first.
			_, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
			return err
		},
		serverCPUSince: func() func() time.Duration { return func() time.Duration { return 0 } },
		completed: func(ctx context.Context) (int, error) {
			var n int
			err := db.QueryRowContext(ctx, "SELECT count(*) FROM river_job WHERE state = ?", jobStateCompleted).Scan(&n)
			return n, err
		},
		info: map[string]any{
			"store_version": version, "journal_mode": journal,
			"synchronous":   []string{"OFF", "NORMAL", "FULL", "EXTRA"}[min(max(synchronous, 0), 3)],
			"sqlite_driver": "modernc.org/sqlite " + moduleVersion("modernc.org/sqlite"), "max_open_conns": 1,
		},
	}
	return runRiver(ctx, b, o)
}
