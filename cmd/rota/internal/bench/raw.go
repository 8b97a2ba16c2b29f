package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver rota's SQLite store uses
)

// The ceiling for the drain: the least SQL that drains a durable queue
// with fenced leases, on the same kind of database file as rota's store
// (WAL; the claim commits with synchronous=NORMAL and the completion with
// FULL, the guarantees rota gives them), with none of rota's bookkeeping (fair
// scheduling, per-state indexes, change feed, worker runtime). One
// goroutine alternates a claim of 500 jobs (one UPDATE … WHERE id IN
// (SELECT … LIMIT 500) RETURNING) and their completion (one UPDATE … FROM
// json_each), each in its own transaction. docs/sqlite-driver.md measured
// this shape at about 105k jobs/s on this machine kind.
const rawSchema = `
CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, grp TEXT NOT NULL DEFAULT '',
	priority INTEGER NOT NULL DEFAULT 0, state INTEGER NOT NULL, run_at INTEGER NOT NULL, data BLOB NOT NULL,
	attempt INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL DEFAULT 20, token TEXT, worker TEXT,
	lease_until INTEGER, result BLOB, created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER,
	updated_at INTEGER NOT NULL);
CREATE INDEX jobs_due ON jobs (type, priority DESC, run_at, id) WHERE state = 0;
CREATE INDEX jobs_lease ON jobs (lease_until) WHERE state = 1;
`

const (
	rawInsert = `INSERT INTO jobs (type, state, run_at, data, created_at, updated_at) VALUES (?, 0, ?, ?, ?, ?)`
	rawClaim  = `UPDATE jobs SET state = 1, token = lower(hex(randomblob(16))), worker = ?, lease_until = ?,
		attempt = attempt + 1, started_at = ?, updated_at = ?
		WHERE id IN (SELECT id FROM jobs WHERE state = 0 AND type = ? AND run_at <= ? ORDER BY priority DESC, run_at, id LIMIT 500)
		RETURNING id, type, grp, priority, run_at, data, attempt, max_attempts, token, created_at`
	rawComplete = `UPDATE jobs SET state = 3, result = NULL, lease_until = NULL, finished_at = ?, updated_at = ?
		FROM json_each(?) AS j WHERE jobs.id = j.value->>'$[0]' AND jobs.token = j.value->>'$[1]' AND jobs.state = 1`
)

// RawSQLiteDrain drains n jobs with raw batched SQL in a fresh database
// file in dir and returns jobs per second and CPU µs per job.
func RawSQLiteDrain(ctx context.Context, dir string, n int) (float64, float64, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "rota-bench-")
		if err != nil {
			return 0, 0, err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	path := filepath.Join(dir, "raw.db")
	removeDB(path)
	defer removeDB(path)
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, rawSchema); err != nil {
		return 0, 0, err
	}
	// Set-up: n jobs, 1,000 per transaction.
	ins, err := conn.PrepareContext(ctx, rawInsert)
	if err != nil {
		return 0, 0, err
	}
	defer ins.Close()
	data := noopData
	for done := 0; done < n; {
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return 0, 0, err
		}
		now := time.Now().UnixMicro()
		for i := done; i < min(done+1000, n); i++ {
			if _, err := ins.ExecContext(ctx, "bench", now, data, now, now); err != nil {
				conn.ExecContext(ctx, "ROLLBACK")
				return 0, 0, err
			}
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return 0, 0, err
		}
		done = min(done+1000, n)
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, 0, err
	}
	claim, err := conn.PrepareContext(ctx, rawClaim)
	if err != nil {
		return 0, 0, err
	}
	defer claim.Close()
	complete, err := conn.PrepareContext(ctx, rawComplete)
	if err != nil {
		return 0, 0, err
	}
	defer complete.Close()
	type claimed struct {
		id, runAt, created    int64
		typ, grp, token       string
		priority, att, maxAtt int
		data                  []byte
	}
	var batch []claimed
	var buf []byte
	total := 0
	exec := func(q string) error {
		_, err := conn.ExecContext(ctx, q)
		return err
	}
	begin, cpu0 := time.Now(), cpuTime()
	for {
		if err := errors.Join(exec("PRAGMA synchronous = NORMAL"), exec("BEGIN IMMEDIATE")); err != nil {
			return 0, 0, err
		}
		now := time.Now().UnixMicro()
		rows, err := claim.QueryContext(ctx, "bench-worker", now+300_000_000, now, now, "bench", now)
		if err != nil {
			exec("ROLLBACK")
			return 0, 0, err
		}
		batch = batch[:0]
		for rows.Next() {
			var c claimed
			if err := rows.Scan(&c.id, &c.typ, &c.grp, &c.priority, &c.runAt, &c.data, &c.att, &c.maxAtt, &c.token, &c.created); err != nil {
				rows.Close()
				exec("ROLLBACK")
				return 0, 0, err
			}
			batch = append(batch, c)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			exec("ROLLBACK")
			return 0, 0, err
		}
		if err := exec("COMMIT"); err != nil {
			return 0, 0, err
		}
		if len(batch) == 0 {
			break
		}
		buf = append(buf[:0], '[')
		for i, c := range batch {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '[')
			buf = strconv.AppendInt(buf, c.id, 10)
			buf = append(buf, ',', '"')
			buf = append(buf, c.token...)
			buf = append(buf, '"', ']')
		}
		buf = append(buf, ']')
		if err := errors.Join(exec("PRAGMA synchronous = FULL"), exec("BEGIN IMMEDIATE")); err != nil {
			return 0, 0, err
		}
		now = time.Now().UnixMicro()
		res, err := complete.ExecContext(ctx, now, now, string(buf))
		if err != nil {
			exec("ROLLBACK")
			return 0, 0, err
		}
		if k, err := res.RowsAffected(); err != nil || k != int64(len(batch)) {
			exec("ROLLBACK")
			return 0, 0, fmt.Errorf("raw drain: completed %d of %d (%v)", k, len(batch), err)
		}
		if err := exec("COMMIT"); err != nil {
			return 0, 0, err
		}
		total += len(batch)
	}
	elapsed, cpu := time.Since(begin), cpuTime()-cpu0
	if total != n {
		return 0, 0, fmt.Errorf("raw drain: drained %d of %d", total, n)
	}
	return float64(n) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(n), nil
}
