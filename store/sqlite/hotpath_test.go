package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
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
// (cmd/rota/internal/bench/raw.go) this schema can get. One op is one job; the
// figure is SQLite's and database/sql's time, without rota's Go code
// around the statements, and without the read of the claimed jobs that
// follows the commit on a reader connection (readClaimed), since that is
// not the writer's.
//
//	go test ./store/sqlite -run X -bench HotStatements -benchtime 200000x
func BenchmarkHotStatements(b *testing.B) {
	cases := []struct {
		name string
		drop []string // schema objects dropped
		add  []string // schema objects created after the drops
		// claim replaces claimSQL; with sqliteTokens, it makes the tokens
		// itself and returns them, given a JSON array of ids.
		claim        string
		sqliteTokens bool
	}{
		{name: "rota"},
		// The claim before readClaimed: SQLite made the tokens, and the
		// claim returned every column of the job that the worker needs.
		{name: "returning-every-column", claim: claimEveryColumnSQL, sqliteTokens: true},
		{name: "returning-nothing", claim: claimSQL[:strings.Index(claimSQL, "RETURNING")]},
		// The update trigger that counted jobs until migration 0014,
		// present as it was for these statements: not firing.
		{name: "with-group-trigger", add: []string{groupTrigger()}},
		{name: "no-next-index", drop: []string{"INDEX rota_jobs_next"}},
		{name: "no-state-index", drop: []string{"INDEX rota_jobs_state"}},
		// Narrower forms of the next-run and listing indexes, which a
		// claim would not touch: the next run only of jobs added or
		// retried for later (a job due when added is found by the due
		// index), listings only of paused and ended jobs.
		{name: "next-future", drop: []string{"INDEX rota_jobs_next"}, add: []string{nextFuture}},
		{name: "state-ended", drop: []string{"INDEX rota_jobs_state"}, add: []string{stateEnded}},
		{name: "narrower-two", drop: []string{"INDEX rota_jobs_next", "INDEX rota_jobs_state"}, add: []string{nextFuture, stateEnded}},
		{name: "no-next-no-state", drop: []string{"INDEX rota_jobs_next", "INDEX rota_jobs_state"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			claim := claimSQL
			if c.claim != "" {
				claim = c.claim
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
				items, n := []byte{'['}, 0
				arg := string(ids)
				if !c.sqliteTokens {
					items, n = goTokens(b, items, ids)
					arg = string(items)
				}
				if rows, err = conn.QueryContext(ctx, claim, hotClaimArgs(now, arg)...); err != nil {
					b.Fatal(err)
				}
				cols, _ := rows.Columns()
				row := newColumns(cols...)
				k := 0
				for ; rows.Next(); k++ {
					if err := row.scan(rows); err != nil {
						b.Fatal(err)
					}
					if !c.sqliteTokens {
						continue
					}
					if k > 0 {
						items = append(items, ',')
					}
					items = append(items, '[')
					items = strconv.AppendInt(items, row.int64(0), 10)
					items = append(items, ',', '"')
					items = append(items, row.str(slices.Index(cols, "token"))...)
					items = append(items, '"', ']')
				}
				rows.Close()
				if c.sqliteTokens {
					items, n = append(items, ']'), k
				}
				if n == 0 || k != n && len(cols) > 0 {
					b.Fatalf("claimed %d of %d after %d jobs", k, n, done)
				}
				exec(`UPDATE rota_groups SET pending = pending - ?, running = running + ? WHERE type = 'bench' AND grp = ''`, n, n)
				exec("COMMIT")
				exec("BEGIN IMMEDIATE")
				if rows, err = conn.QueryContext(ctx, stmt("complete_many"), now, now, string(items)); err != nil {
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

// claimEveryColumnSQL is the claim as it was before readClaimed, for
// comparison: given a JSON array of ids, it made the tokens and returned
// every column of the job that a claim does not set itself.
const claimEveryColumnSQL = `UPDATE rota_jobs SET state = 1, token = lower(hex(randomblob(16))), worker = ?1,
	lease_until = ?2 + coalesce(retry_after, ?3), lease_timeout = coalesce(retry_after, ?5), attempt = attempt + 1,
	prev_started_at = started_at, started_at = ?7, cancel_requested = 0, updated_at = ?8,
	bulk = NOT bulk
	WHERE id IN (SELECT value FROM json_each(?9)) AND state = 0 RETURNING id, key, priority, run_at, data, attempt,
	max_attempts, backoff_base, backoff_max, token, resubmit, progress, last_error, errors, result, created_at,
	finished_at, meta, coalesce(repeat, ''), missed, slot, coalesce(retry_after, 0), coalesce(parent_id, 0),
	has_children, coalesce(bedrock_id, 0), prev_started_at`

// hotClaimArgs are claimSQL's arguments as the writer passes them (accept's
// claim): the worker, the time, the lease, the type's run timeout (none),
// the lease and the run timeout again, the start and update times, and the
// items. A claim of another shape takes the same nine, by number.
func hotClaimArgs(now int64, items string) []any {
	return []any{"w", now, int64(300e6), nil, int64(300e6), nil, now, now, items}
}

// goTokens appends to items a token (newTokens) for each id of the JSON
// array ids, as [id, "token"] pairs, and returns how many.
func goTokens(b *testing.B, items, ids []byte) ([]byte, int) {
	var list []int64
	if err := json.Unmarshal(ids, &list); err != nil {
		b.Fatal(err)
	}
	tokens, err := newTokens(len(list))
	if err != nil {
		b.Fatal(err)
	}
	for i, id := range list {
		if i > 0 {
			items = append(items, ',')
		}
		items = append(items, '[')
		items = strconv.AppendInt(items, id, 10)
		items = append(items, ',', '"')
		items = append(items, tokens[i]...)
		items = append(items, '"', ']')
	}
	return append(items, ']'), len(list)
}

const (
	nextFuture = "INDEX rota_jobs_next ON rota_jobs (type, run_at) WHERE state = 0 AND run_at > created_at"
	stateEnded = "INDEX rota_jobs_state ON rota_jobs (state, id) WHERE state > 1"
)

// groupTrigger is the update trigger of migration 0003, which counted
// jobs until 0014, with a condition as false for the claim and the
// completion as its own was when they flipped bulk to skip it.
func groupTrigger() string {
	b, err := migrationFiles.ReadFile("migrations/0003_bulk_counts.sql")
	if err != nil {
		panic(err)
	}
	t := string(b[strings.Index(string(b), "TRIGGER rota_jobs_groups_update AFTER"):])
	t = t[:strings.Index(t, "END;")+len("END")]
	return strings.Replace(t, "OLD.bulk = NEW.bulk", "OLD.bulk = NEW.bulk + 1", 1)
}

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
