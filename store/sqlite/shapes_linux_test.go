package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkHotShapes measures what bounds the SQLite drain against the
// raw-SQL ceiling of `rota bench drain` (cmd/rota/internal/bench/raw.go):
// the drain's claim and completion, 500 jobs per transaction on one
// connection, with the same Go around each (ids read off the due index,
// tokens made in Go, every returned column scanned, a group count kept),
// on three shapes of table:
//
//   - rota: rota's schema and statements (claimSQL, complete_many), as
//     BenchmarkHotStatements runs them.
//   - memory-leases: rota's schema with leases held by the writer in
//     memory, written only when the job ends: the claim reads what
//     claimSQL returns and writes nothing, the completion moves the job
//     from pending to completed with its attempt and lease in one update.
//     It gives up a lease that survives a restart, a running job's row and
//     its count (Get, listings, the lease monitor, FinishTx in a caller's
//     transaction would all read the writer's memory) and the attempt
//     counted before the handler runs.
//   - split3: the shape that keeps every guarantee with the fewest row and
//     index writes measured so far (benchmarks.md, "Round 3, third
//     session"): a narrow table of live jobs (the due, retry, next-run and
//     lease indexes) beside the wide rows, which the hot path never
//     rewrites, and a narrow table of ended jobs indexed by state; a claim
//     updates the live row, a completion moves it to the ended table.
//   - split3-lean: split3 without the next-run index and the ended jobs'
//     state index, whose features (a waiting worker's next run time,
//     listings of ended jobs by state) would have to be found another way.
//   - raw: the ceiling's own table and statements (raw.go: one table of 17
//     columns, a due and a lease index), with the same Go as the others.
//
// One op is one job; the figure is SQLite's and database/sql's time for
// the writer's statements and commits (synchronous=NORMAL, as rota's
// writer; the fsyncs are another goroutine's), without the rest of rota.
//
//	go test ./store/sqlite -run X -bench HotShapes -benchtime 200000x
func BenchmarkHotShapes(b *testing.B) {
	for _, sh := range []hotShape{rotaShape(), memoryLeasesShape(), split3Shape(false), split3Shape(true), rawShape()} {
		b.Run(sh.name, func(b *testing.B) {
			conn := sh.setup(b, b.N)
			ctx := context.Background()
			exec := func(q string, args ...any) {
				if _, err := conn.ExecContext(ctx, q, args...); err != nil {
					b.Fatal(err)
				}
			}
			query := func(q string, args ...any) int {
				rows, err := conn.QueryContext(ctx, q, args...)
				if err != nil {
					b.Fatal(err)
				}
				defer rows.Close()
				cols, _ := rows.Columns()
				row := newColumns(cols...)
				n := 0
				for ; rows.Next(); n++ {
					if err := row.scan(rows); err != nil {
						b.Fatal(err)
					}
				}
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				return n
			}
			// The thread's CPU time as well as the wall clock's: on a
			// shared machine the one moves with the load, the other much
			// less. The statements run on this goroutine's thread (cgo).
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU(b)
			b.ResetTimer()
			defer func() {
				b.ReportMetric(float64((threadCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			}()
			for done := 0; done < b.N; {
				now := time.Now().UnixMicro()
				exec("BEGIN IMMEDIATE")
				rows, err := conn.QueryContext(ctx, sh.due, now)
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
				items, n := goTokens(b, []byte{'['}, append(ids, ']'))
				if k := query(sh.claim, hotClaimArgs(now, string(items))...); k != n || n == 0 {
					b.Fatalf("claimed %d of %d after %d jobs", k, n, done)
				}
				exec(`UPDATE rota_groups SET pending = pending - ?, running = running + ? WHERE type = 'bench' AND grp = ''`, n, n)
				exec("COMMIT")
				exec("BEGIN IMMEDIATE")
				for i, q := range sh.complete {
					k := 0
					if i == 0 {
						k = query(q, now, now, string(items))
					} else {
						k = query(q, string(items))
					}
					if k != n && i == 0 {
						b.Fatalf("completed %d of %d", k, n)
					}
				}
				exec(`UPDATE rota_groups SET running = running - ? WHERE type = 'bench' AND grp = ''`, n)
				exec("COMMIT")
				done += n
			}
		})
	}
}

// threadCPU is the calling thread's CPU time, user and system.
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD, Linux only */, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hotShape is a table shape and the drain's statements on it. due takes
// the time and returns up to 500 ids; claim takes hotClaimArgs, with the
// [id, "token"] items; the first statement of complete takes the finish
// and update times and the items, the others the items.
type hotShape struct {
	name     string
	setup    func(b *testing.B, n int) *sql.Conn
	due      string
	claim    string
	complete []string
}

func rotaShape() hotShape {
	return hotShape{
		name:  "rota",
		setup: func(b *testing.B, n int) *sql.Conn { return hotSchema(b, nil, nil, n) },
		due: `SELECT id FROM rota_jobs INDEXED BY rota_jobs_due WHERE state = 0 AND attempt = 0 AND type = 'bench'
			AND grp = '' AND run_at <= ? ORDER BY priority DESC, run_at, id LIMIT 500`,
		claim:    claimSQL,
		complete: []string{stmt("complete_many")},
	}
}

func memoryLeasesShape() hotShape {
	sh := rotaShape()
	sh.name = "memory-leases"
	sh.claim = `SELECT rota_jobs.id, attempt + 1, coalesce(retry_after, 0), CASE WHEN missed = 1 THEN repeat END, slot,
		coalesce(parent_id, 0), has_children, coalesce(run_timeout, ?4, ?6, 0), ?1, ?2 + ?3, ?5, ?7, ?8
		FROM json_each(?9) AS j JOIN rota_jobs ON rota_jobs.id = j.value->>0 WHERE +rota_jobs.state = 0`
	sh.complete = []string{`UPDATE rota_jobs SET state = 3, result = unhex(j.value->>2), token = j.value->>1, worker = 'w',
		attempt = attempt + 1, prev_started_at = started_at, started_at = ?1, finished_at = ?1, updated_at = ?2
		FROM json_each(?3) AS j
		WHERE rota_jobs.id = j.value->>0 AND +rota_jobs.state = 0 AND rota_jobs.resubmit = 0
			AND rota_jobs.repeat IS NULL AND rota_jobs.parent_id IS NULL AND rota_jobs.has_children = 0
			AND rota_jobs.has_dependants = 0
		RETURNING rota_jobs.id, rota_jobs.type, rota_jobs.grp, rota_jobs.run_at, coalesce(rota_jobs.batch_id, 0)`}
	return sh
}

// split3Shape adds the live and ended tables to rota's schema and fills
// the live one; the wide rows stay as they are, unread by the hot path.
func split3Shape(lean bool) hotShape {
	name, next, ended := "split3", "CREATE INDEX rota_live_next ON rota_live (type, run_at) WHERE state = 0;",
		"CREATE INDEX rota_ended_state ON rota_ended (state, id);"
	if lean {
		name, next, ended = "split3-lean", "", ""
	}
	schema := `CREATE TABLE rota_live (id INTEGER PRIMARY KEY, type TEXT NOT NULL, grp TEXT NOT NULL, priority INTEGER NOT NULL,
		run_at INTEGER NOT NULL, state INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, token TEXT, worker TEXT,
		lease_until INTEGER, lease_timeout INTEGER, retry_after INTEGER, run_timeout INTEGER, run_limit INTEGER,
		started_at INTEGER, prev_started_at INTEGER, cancel_requested INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL,
		expires_at INTEGER,
		flags INTEGER NOT NULL DEFAULT 0); -- resubmit, repeat, family, dependants: any makes the general path finish it
	CREATE INDEX rota_live_deadline ON rota_live (expires_at) WHERE state = 0 AND expires_at IS NOT NULL;
	CREATE INDEX rota_live_due ON rota_live (type, grp, priority DESC, run_at, id) WHERE state = 0 AND attempt = 0;
	CREATE INDEX rota_live_retry ON rota_live (type, grp, priority DESC, run_at, id) WHERE state = 0 AND attempt > 0;
	CREATE INDEX rota_live_lease ON rota_live (lease_until) WHERE state = 1;
	` + next + `
	CREATE TABLE rota_ended (id INTEGER PRIMARY KEY, state INTEGER NOT NULL, attempt INTEGER NOT NULL, token TEXT, worker TEXT,
		result BLOB, started_at INTEGER, finished_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
	` + ended
	return hotShape{
		name: name,
		setup: func(b *testing.B, n int) *sql.Conn {
			conn := hotSchema(b, nil, nil, n)
			ctx := context.Background()
			if _, err := conn.ExecContext(ctx, schema); err != nil {
				b.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, `INSERT INTO rota_live (id, type, grp, priority, run_at, state, updated_at)
				SELECT id, type, grp, priority, run_at, state, updated_at FROM rota_jobs`); err != nil {
				b.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				b.Fatal(err)
			}
			return conn
		},
		due: `SELECT id FROM rota_live INDEXED BY rota_live_due WHERE state = 0 AND attempt = 0 AND type = 'bench'
			AND grp = '' AND run_at <= ? ORDER BY priority DESC, run_at, id LIMIT 500`,
		// What claimSQL sets and returns, on the live row; the wide row's
		// rarer fields (a schedule, a parent) would be flags here.
		claim: `UPDATE rota_live SET state = 1, token = j.value->>1, worker = ?1,
			lease_until = ?2 + min(coalesce(retry_after, ?3), coalesce(run_timeout, ?4, 9223372036854775807)),
			lease_timeout = coalesce(retry_after, ?5), run_limit = coalesce(run_timeout, ?6), attempt = attempt + 1,
			prev_started_at = started_at, started_at = ?7, cancel_requested = 0, updated_at = ?8
			FROM json_each(?9) AS j WHERE rota_live.id = j.value->>0 AND +rota_live.state = 0
			RETURNING rota_live.id, attempt, coalesce(retry_after, 0), flags, coalesce(run_limit, 0)`,
		complete: []string{
			`INSERT INTO rota_ended (id, state, attempt, token, worker, result, started_at, finished_at, updated_at)
				SELECT l.id, 3, l.attempt, l.token, l.worker, unhex(j.value->>2), l.started_at, ?, ?
				FROM json_each(?) AS j JOIN rota_live AS l ON l.id = j.value->>0
				WHERE l.token = j.value->>1 AND +l.state = 1 AND l.flags = 0
				RETURNING id`,
			`DELETE FROM rota_live WHERE id IN (SELECT j.value->>0 FROM json_each(?) AS j) AND +state = 1 AND flags = 0`,
		},
	}
}

// rawShape is the ceiling's table and statements (raw.go), the tokens
// made in Go as for the others.
func rawShape() hotShape {
	return hotShape{
		name: "raw",
		setup: func(b *testing.B, n int) *sql.Conn {
			b.Helper()
			path := filepath.Join(b.TempDir(), "raw.db")
			db, err := sql.Open(driverName, dsn(path, map[string][]string{"_synchronous": {"NORMAL"}, "_mutex": {"no"}}, 5*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			db.SetMaxOpenConns(1)
			ctx := context.Background()
			conn, err := db.Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { conn.Close() })
			now := time.Now().UnixMicro()
			for _, q := range []string{
				`CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, grp TEXT NOT NULL DEFAULT '',
					priority INTEGER NOT NULL DEFAULT 0, state INTEGER NOT NULL, run_at INTEGER NOT NULL, data BLOB NOT NULL,
					attempt INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL DEFAULT 20, token TEXT, worker TEXT,
					lease_until INTEGER, result BLOB, created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER,
					updated_at INTEGER NOT NULL)`,
				`CREATE INDEX jobs_due ON jobs (type, priority DESC, run_at, id) WHERE state = 0`,
				`CREATE INDEX jobs_lease ON jobs (lease_until) WHERE state = 1`,
				// The group count the others keep, so that the commits
				// carry the same page.
				`CREATE TABLE rota_groups (type TEXT, grp TEXT, pending INTEGER, running INTEGER, PRIMARY KEY (type, grp))`,
				`INSERT INTO rota_groups VALUES ('bench', '', ` + strconv.Itoa(n) + `, 0)`,
			} {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			for done := 0; done < n; done += 1000 {
				if _, err := conn.ExecContext(ctx, `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
					INSERT INTO jobs (type, state, run_at, data, created_at, updated_at) SELECT 'bench', 0, ?, X'7B7D', ?, ? FROM k`,
					min(1000, n-done), now, now, now); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				b.Fatal(err)
			}
			return conn
		},
		due: `SELECT id FROM jobs WHERE state = 0 AND type = 'bench' AND run_at <= ? ORDER BY priority DESC, run_at, id LIMIT 500`,
		// raw.go's claim returns the job's columns for the worker; its
		// ids come from its own subquery, here from due as for the others.
		claim: `UPDATE jobs SET state = 1, token = j.value->>1, worker = ?1, lease_until = ?2 + ?3, attempt = attempt + 1,
			started_at = ?7, updated_at = ?8
			FROM json_each(?9) AS j WHERE jobs.id = j.value->>0 AND +jobs.state = 0
			RETURNING jobs.id, type, grp, priority, run_at, data, attempt, max_attempts, token, created_at`,
		complete: []string{`UPDATE jobs SET state = 3, result = NULL, lease_until = NULL, finished_at = ?, updated_at = ?
			FROM json_each(?) AS j WHERE jobs.id = j.value->>0 AND jobs.token = j.value->>1 AND jobs.state = 1
			RETURNING jobs.id`},
	}
}
