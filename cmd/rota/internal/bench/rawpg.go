package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// The PostgreSQL ceiling for the drain, the counterpart of RawSQLiteDrain:
// the least SQL that drains a durable queue with fenced leases, in a schema
// of its own that is dropped afterwards. One connection claims 500 jobs at
// a time (FOR UPDATE SKIP LOCKED in a CTE, committed with
// synchronous_commit off, since a lost claim only makes a job run again)
// while two others complete the claimed batches (one UPDATE by primary key
// per batch, committed durably), so that claims and completions overlap.
const rawPGSchema = `
CREATE TABLE %[1]s.jobs (id bigserial PRIMARY KEY, type text NOT NULL, grp text NOT NULL DEFAULT '',
	priority int NOT NULL DEFAULT 0, state smallint NOT NULL, run_at timestamptz NOT NULL, data bytea NOT NULL,
	attempt int NOT NULL DEFAULT 0, max_attempts int NOT NULL DEFAULT 20, token text, worker text,
	lease_until timestamptz, result bytea, created_at timestamptz NOT NULL, started_at timestamptz,
	finished_at timestamptz, updated_at timestamptz NOT NULL);
CREATE INDEX ON %[1]s.jobs (type, priority DESC, run_at, id) WHERE state = 0;
CREATE INDEX ON %[1]s.jobs (lease_until) WHERE state = 1;
`

// RawPostgresDrain drains n jobs with raw batched SQL on the database dsn
// names and returns jobs per second, this process's CPU µs per job and the
// database server's (0 unless it runs on this machine).
func RawPostgresDrain(ctx context.Context, dsn string, n int) (float64, float64, float64, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return 0, 0, 0, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close()
	schema := pgx.Identifier{"rota_bench_raw_" + randHex(4)}.Sanitize()
	if _, err := conn.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		return 0, 0, 0, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DROP SCHEMA `+schema+` CASCADE`)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(rawPGSchema, schema)); err != nil {
		return 0, 0, 0, err
	}
	for done := 0; done < n; done += 10_000 {
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+schema+`.jobs (type, state, run_at, data, created_at, updated_at)
			SELECT 'bench', 0, now(), $1, now(), now() FROM generate_series(1, $2)`, noopData, min(10_000, n-done)); err != nil {
			return 0, 0, 0, err
		}
	}
	if _, err := conn.ExecContext(ctx, `VACUUM ANALYZE `+schema+`.jobs`); err != nil {
		return 0, 0, 0, err
	}
	claim := `WITH picked AS (SELECT id FROM ` + schema + `.jobs WHERE state = 0 AND type = 'bench' AND run_at <= now()
			ORDER BY priority DESC, run_at, id LIMIT 500 FOR UPDATE SKIP LOCKED)
		UPDATE ` + schema + `.jobs j SET state = 1, token = md5(random()::text), worker = 'bench-worker',
			lease_until = now() + interval '5 minutes', attempt = j.attempt + 1, started_at = now(), updated_at = now()
		FROM picked WHERE j.id = picked.id
		RETURNING j.id, j.type, j.grp, j.priority, j.run_at, j.data, j.attempt, j.max_attempts, j.token, j.created_at`
	// The completion finds its rows by primary key and each row's token in
	// a JSON object keyed by id, not joined to unnest(ids, tokens): for
	// that join the planner, misled by statistics that say no job runs,
	// hashes the input and scans the whole table per batch, which would
	// make this baseline slower than rota itself.
	complete := `UPDATE ` + schema + `.jobs j SET state = 3, result = NULL, lease_until = NULL, finished_at = now(), updated_at = now()
		WHERE j.id = ANY($1::bigint[]) AND j.token = $2::jsonb ->> j.id::text AND j.state + 0 = 1`
	type batch struct {
		ids    []int64
		tokens string
	}
	// Claims and completions overlap, as the worker runtime's accepts and
	// finishes do: one connection claims and hands batches to completers
	// on connections of their own, each completion a synchronous commit
	// (concurrent commits share WAL flushes); at most completers+1
	// batches are claimed and not yet completed.
	const completers = 2
	todo := make(chan batch, 1)
	claimer := func(conn *sql.Conn) (int, error) {
		defer close(todo)
		total := 0
		for {
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				return total, err
			}
			if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
				tx.Rollback()
				return total, err
			}
			rows, err := tx.QueryContext(ctx, claim)
			if err != nil {
				tx.Rollback()
				return total, err
			}
			var b batch
			tokens := []byte{'{'}
			for rows.Next() {
				var id int64
				var typ, grp, token string
				var priority, attempt, maxAttempts int
				var runAt, created time.Time
				var data []byte
				if err := rows.Scan(&id, &typ, &grp, &priority, &runAt, &data, &attempt, &maxAttempts, &token, &created); err != nil {
					rows.Close()
					tx.Rollback()
					return total, err
				}
				if len(b.ids) > 0 {
					tokens = append(tokens, ',')
				}
				b.ids = append(b.ids, id)
				tokens = fmt.Appendf(tokens, `"%d":"%s"`, id, token)
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				tx.Rollback()
				return total, err
			}
			if err := tx.Commit(); err != nil {
				return total, err
			}
			if len(b.ids) == 0 {
				return total, nil
			}
			b.tokens = string(append(tokens, '}'))
			select {
			case todo <- b:
			case <-ctx.Done():
				return total, ctx.Err()
			}
			total += len(b.ids)
		}
	}
	completer := func(conn *sql.Conn) (int, error) {
		total := 0
		for b := range todo {
			res, err := conn.ExecContext(ctx, complete, b.ids, b.tokens)
			if err != nil {
				return total, err
			}
			if k, err := res.RowsAffected(); err != nil || k != int64(len(b.ids)) {
				return total, fmt.Errorf("raw drain: completed %d of %d (%v)", k, len(b.ids), err)
			}
			total += len(b.ids)
		}
		return total, nil
	}
	cs := make([]*sql.Conn, 1+completers)
	cs[0] = conn
	for i := 1; i < len(cs); i++ {
		if cs[i], err = db.Conn(ctx); err != nil {
			return 0, 0, 0, err
		}
		defer cs[i].Close()
	}
	var wg sync.WaitGroup
	totals := make([]int, len(cs))
	errs := make([]error, len(cs))
	serverCPU := serverCPUSince(ctx, dsn)
	begin, cpu0 := time.Now(), cpuTime()
	for i := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				totals[i], errs[i] = claimer(cs[i])
				return
			}
			totals[i], errs[i] = completer(cs[i])
			if errs[i] != nil {
				for range todo { // let the claimer end
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, err
	}
	total := 0
	for _, t := range totals[1:] {
		total += t
	}
	elapsed, cpu, scpu := time.Since(begin), cpuTime()-cpu0, serverCPU()
	if total != n {
		return 0, 0, 0, fmt.Errorf("raw drain: drained %d of %d", total, n)
	}
	return float64(n) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(n), float64(scpu.Microseconds()) / float64(n), nil
}
