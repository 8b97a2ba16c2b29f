package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkHotStatements runs the drain's two statements, the claim
// (claimSQL) and the completion (completeManyQuery), 500 jobs at a time
// each in its own transaction on one connection, as the writer does, on
// rota's schema and on the same schema with a part of it taken away (or
// replaced by a narrower form that would keep what it is for): what each
// part costs a job, and so how far from the raw-SQL ceiling
// (internal/bench/raw.go) this schema can get. One op is one job; the
// figure is SQLite's and database/sql's time, without rota's Go code
// around the statements.
//
//	go test ./store/sqlite -run X -bench HotStatements -benchtime 200000x
func BenchmarkHotStatements(b *testing.B) {
	cases := []struct {
		name string
		drop []string // schema objects dropped
		add  []string // schema objects created after the drops
		ret  string   // the claim's RETURNING columns, when not claimColumns
	}{
		{name: "rota"},
		{name: "no-group-trigger", drop: []string{"TRIGGER rota_jobs_groups_update"}},
		{name: "no-next-index", drop: []string{"INDEX rota_jobs_next"}},
		{name: "no-state-index", drop: []string{"INDEX rota_jobs_state"}},
		{name: "returning-4", ret: "id, data, attempt, token"},
		// Narrower forms of the next-run and listing indexes, which a
		// claim would not touch: the next run only of jobs added or
		// retried for later (a job due when added is found by the due
		// index), listings only of paused and ended jobs.
		{name: "next-future", drop: []string{"INDEX rota_jobs_next"}, add: []string{nextFuture}},
		{name: "state-ended", drop: []string{"INDEX rota_jobs_state"}, add: []string{stateEnded}},
		{name: "narrower-three", drop: []string{"TRIGGER rota_jobs_groups_update", "INDEX rota_jobs_next", "INDEX rota_jobs_state"},
			add: []string{nextFuture, stateEnded}},
		{name: "all-four", drop: []string{"TRIGGER rota_jobs_groups_update", "INDEX rota_jobs_next", "INDEX rota_jobs_state"},
			ret: "id, data, attempt, token"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			claim := claimSQL
			if c.ret != "" {
				claim = strings.Replace(claimSQL, claimColumns, c.ret, 1)
			}
			conn := hotSchema(b, c.drop, c.add, b.N)
			ctx := context.Background()
			exec := func(q string, args ...any) {
				if _, err := conn.ExecContext(ctx, q, args...); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for done := 0; done < b.N; {
				now := time.Now().UnixMicro()
				exec("BEGIN IMMEDIATE")
				rows, err := conn.QueryContext(ctx, `SELECT id FROM rota_jobs INDEXED BY rota_jobs_due
					WHERE state = 0 AND attempt = 0 AND type = 'bench' AND grp = '' AND run_at <= ?
					ORDER BY priority DESC, run_at, id LIMIT 500`, now)
				if err != nil {
					b.Fatal(err)
				}
				ids := []byte{'['}
				for rows.Next() {
					var id int64
					if err := rows.Scan(&id); err != nil {
						b.Fatal(err)
					}
					if len(ids) > 1 {
						ids = append(ids, ',')
					}
					ids = strconv.AppendInt(ids, id, 10)
				}
				rows.Close()
				ids = append(ids, ']')
				if rows, err = conn.QueryContext(ctx, claim, "w", now, 300e6, 300e6, now, now, string(ids)); err != nil {
					b.Fatal(err)
				}
				cols, _ := rows.Columns()
				row := newColumns(cols...)
				items := []byte{'['}
				n := 0
				for rows.Next() {
					if err := row.scan(rows); err != nil {
						b.Fatal(err)
					}
					if n > 0 {
						items = append(items, ',')
					}
					items = append(items, '[')
					items = strconv.AppendInt(items, row.int64(0), 10)
					items = append(items, ',', '"')
					items = append(items, row.str(slices.Index(cols, "token"))...)
					items = append(items, '"', ']')
					n++
				}
				rows.Close()
				items = append(items, ']')
				if n == 0 {
					b.Fatalf("claimed nothing after %d jobs", done)
				}
				exec(`UPDATE rota_groups SET pending = pending - ?, running = running + ? WHERE type = 'bench' AND grp = ''`, n, n)
				exec("COMMIT")
				exec("BEGIN IMMEDIATE")
				if rows, err = conn.QueryContext(ctx, completeManyQuery, now, now, string(items)); err != nil {
					b.Fatal(err)
				}
				m := 0
				for rows.Next() {
					m++
				}
				rows.Close()
				if m != n {
					b.Fatalf("completed %d of %d", m, n)
				}
				exec(`UPDATE rota_groups SET running = running - ? WHERE type = 'bench' AND grp = ''`, n)
				exec("COMMIT")
				done += n
			}
		})
	}
}

const (
	nextFuture = "INDEX rota_jobs_next ON rota_jobs (type, run_at) WHERE state = 0 AND run_at > created_at"
	stateEnded = "INDEX rota_jobs_state ON rota_jobs (state, id) WHERE state > 1"
)

// hotSchema makes a database with rota's schema, less drop, plus add, and
// n pending jobs, and returns a connection to it as the writer's
// (synchronous=NORMAL).
func hotSchema(b *testing.B, drop, add []string, n int) *sql.Conn {
	b.Helper()
	path := filepath.Join(b.TempDir(), "hot.db")
	st, err := Open(path, Config{})
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	db, err := sql.Open(driverName, dsn(path, map[string][]string{"_synchronous": {"NORMAL"}, "_mutex": {"no"}}, 5*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	ctx := context.Background()
	for _, d := range drop {
		if _, err := conn.ExecContext(ctx, "DROP "+d); err != nil {
			b.Fatal(err)
		}
	}
	for _, a := range add {
		if _, err := conn.ExecContext(ctx, "CREATE "+a); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now().UnixMicro()
	for done := 0; done < n; done += 1000 {
		if _, err := conn.ExecContext(ctx, `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
			INSERT INTO rota_jobs (type, grp, state, run_at, data, max_attempts, backoff_base, backoff_max, created_at, updated_at)
			SELECT 'bench', '', 0, ?, X'7B7D', 20, 1000000, 3600000000, ?, ? FROM k`, min(1000, n-done), now, now, now); err != nil {
			b.Fatal(err)
		}
	}
	// The store's add counts what it adds; these inserts are counted here.
	if _, err := conn.ExecContext(ctx, `INSERT INTO rota_groups (type, grp, pending) VALUES ('bench', '', ?)`, n); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	return conn
}
