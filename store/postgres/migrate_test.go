package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store/postgres"
)

// migrationLockBound is the longest a migration that older nodes run
// beside (every one but those marked offline) may keep a write or read of
// rota.jobs waiting, on a table of 1,000,000 jobs (docs/postgres.md,
// Rolling upgrades): migrationLockTimeout (0.5 s) for its lock, plus what
// it does while it holds it.
const migrationLockBound = time.Second

// TestMigrationLocks upgrades a schema from version 2 (the last offline
// migration) to the latest, one migration at a time, while its job tables
// hold ROTA_MIGRATION_JOBS jobs (20,000 by default; docs/benchmarks.md
// has the figures for 1,000,000) and a prober updates and reads a job of
// rota.jobs every few milliseconds. Each migration must keep the probes
// waiting less than migrationLockBound, and the upgraded schema must be
// the one a fresh schema gets (its columns and indexes).
func TestMigrationLocks(t *testing.T) {
	n := 20000
	if v := os.Getenv("ROTA_MIGRATION_JOBS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			t.Fatalf("ROTA_MIGRATION_JOBS=%q: want a number of jobs, at least 1000", v)
		}
	}
	ctx := t.Context()
	schema := newSchema(t)
	s := openIn(t, schema, postgres.Config{SkipMigrate: true, NoListen: true, NoNotify: true})
	all := postgres.Migrations()
	first := 0
	for _, m := range all {
		if m.Offline {
			first = m.Version
		}
	}
	if err := postgres.MigrateTo(s, ctx, first); err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{schema}.Sanitize()
	start := time.Now()
	// Jobs as a node of version 2 writes them: a tenth running, a
	// quarter with keys; as many ended ones.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO `+q+`.jobs (type, grp, key, priority, state, run_at, max_attempts, backoff_base,
		backoff_max, created_at, updated_at, data)
		SELECT 'lock.t' || (i % 5), 'g' || (i % 100), CASE WHEN i % 4 = 0 THEN 'k' || i END, i % 3, CASE WHEN i % 10 = 0 THEN 1 ELSE 0 END,
			now(), 3, 1000000, 3600000000, now(), now(), convert_to('{"i":' || i || '}', 'UTF8')
		FROM generate_series(1, $1) i`, n); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO `+q+`.jobs_ended (id, type, grp, key, priority, state, run_at, max_attempts, backoff_base,
		backoff_max, created_at, updated_at, finished_at, data)
		SELECT $1 + i, 'lock.t' || (i % 5), 'g' || (i % 100), CASE WHEN i % 4 = 1 THEN 'e' || i END, 0, 3, now(), 3, 1000000, 3600000000,
			now(), now(), now(), convert_to('{"i":' || i || '}', 'UTF8')
		FROM generate_series(1, $1) i`, n); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE `+q+`.jobs; ANALYZE `+q+`.jobs_ended`); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs and %d ended jobs written in %v", n, n, time.Since(start).Round(time.Millisecond))

	var report []string
	for _, m := range all[first:] {
		p := startProbe(t, s, q, n)
		began := time.Now()
		err := postgres.MigrateTo(s, ctx, m.Version)
		took := time.Since(began)
		longest, probes := p.stop()
		if err != nil {
			t.Fatalf("migration %s: %v", m.Name, err)
		}
		line := fmt.Sprintf("%-26s %8.1f ms to apply, probes waited at most %7.1f ms (%d probes)", m.Name,
			float64(took.Microseconds())/1000, float64(longest.Microseconds())/1000, probes)
		report = append(report, line)
		if longest > migrationLockBound {
			t.Errorf("migration %s kept a write or read of rota.jobs waiting %v on %d jobs, more than the bound of %v", m.Name, longest, n, migrationLockBound)
		}
	}
	t.Logf("migrations from version %d on %d jobs:\n%s", first, n, strings.Join(report, "\n"))
	if os.Getenv("ROTA_MIGRATION_JOBS") != "" {
		fmt.Printf("migrations on %d jobs:\n%s\n", n, strings.Join(report, "\n"))
	}

	// The upgraded schema is a fresh one's.
	fresh := open(t)
	if got, want := schemaShape(t, s, schema), schemaShape(t, fresh, fresh.Schema()); !slices.Equal(got, want) {
		t.Errorf("the upgraded schema differs from a fresh one:\nupgraded: %q\nfresh:    %q", got, want)
	}
}

// schemaShape lists a schema's columns and indexes, its name left out.
func schemaShape(t *testing.T, s *postgres.Store, schema string) []string {
	t.Helper()
	rows, err := s.Pool().Query(t.Context(), `
		SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || coalesce(column_default, '') FROM information_schema.columns WHERE table_schema = $1
		UNION ALL SELECT replace(indexdef, $1, 'S') FROM pg_indexes WHERE schemaname = $1
		ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// probe updates and reads a random job of rota.jobs every 2 ms, each in a
// statement of its own, and keeps the longest wait.
type probe struct {
	stopped chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	longest time.Duration
	n       int
}

func startProbe(t *testing.T, s *postgres.Store, q string, jobs int) *probe {
	p := &probe{stopped: make(chan struct{})}
	p.wg.Go(func() {
		for {
			select {
			case <-p.stopped:
				return
			case <-time.After(2 * time.Millisecond):
			}
			id := 1 + rand.Int64N(int64(jobs))
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := s.Pool().Exec(ctx, `UPDATE `+q+`.jobs SET progress = progress WHERE id = $1`, id)
			if err == nil {
				var one int
				err = s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+q+`.jobs WHERE id = $1`, id).Scan(&one)
			}
			cancel()
			if err != nil {
				t.Errorf("probe: %v", err)
				return
			}
			p.mu.Lock()
			p.longest = max(p.longest, time.Since(began))
			p.n++
			p.mu.Unlock()
		}
	})
	return p
}

func (p *probe) stop() (time.Duration, int) {
	close(p.stopped)
	p.wg.Wait()
	return p.longest, p.n
}

// TestMigrationYieldsToLongTransactions: a migration that needs a lock a
// long transaction holds (a caller's AddTx, say) does not wait for it
// with every other statement on the table queued behind its request: it
// gives up after migrationLockTimeout, lets them through, tries again,
// and applies once the transaction ends.
func TestMigrationYieldsToLongTransactions(t *testing.T) {
	ctx := t.Context()
	schema := newSchema(t)
	s := openIn(t, schema, postgres.Config{SkipMigrate: true, NoListen: true, NoNotify: true})
	var target int // the first migration after the last offline one that alters jobs
	for _, m := range postgres.Migrations() {
		if m.Version > 2 && !m.NoTransaction && strings.Contains(m.SQL, "ALTER TABLE jobs ") {
			target = m.Version
		}
	}
	if err := postgres.MigrateTo(s, ctx, target-1); err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO `+q+`.jobs (type, state, run_at, max_attempts, backoff_base, backoff_max, created_at, updated_at, data)
		SELECT 'long', 0, now(), 3, 1, 1, now(), now(), '{}' FROM generate_series(1, 10)`); err != nil {
		t.Fatal(err)
	}
	long, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Rollback(context.Background())
	if _, err := long.Exec(ctx, `UPDATE `+q+`.jobs SET progress = 0.5 WHERE id = 10`); err != nil {
		t.Fatal(err)
	}
	migrated := make(chan error, 1)
	go func() { migrated <- postgres.MigrateTo(s, context.Background(), target) }()
	p := startProbe(t, s, q, 9) // jobs 1 to 9: not the long transaction's
	const held = 3 * time.Second
	time.Sleep(held)
	if err := long.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-migrated:
		if err != nil {
			t.Fatalf("migration %d: %v", target, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("migration %d did not apply after the long transaction ended", target)
	}
	longest, probes := p.stop()
	if longest > migrationLockBound {
		t.Errorf("while migration %d waited %v for a long transaction, writes and reads of rota.jobs waited up to %v (%d probes), more than %v", target, held, longest, probes, migrationLockBound)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != target {
		t.Errorf("schema version %d, %v; want %d", v, err, target)
	}
}

// TestNewerSchema: a node opens a schema that a newer rota migrated only
// when every newer migration was recorded compatible (it then runs beside
// the newer nodes); otherwise Open refuses, saying to upgrade rota.
func TestNewerSchema(t *testing.T) {
	ctx := t.Context()
	schema := newSchema(t)
	s := openIn(t, schema, postgres.Config{NoListen: true, NoNotify: true})
	latest := postgres.LatestSchemaVersion()
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO `+q+`.schema_migrations (version, name, compatible) VALUES ($1, 'next.sql', true)`, latest+1); err != nil {
		t.Fatal(err)
	}
	again := openIn(t, schema, postgres.Config{NoListen: true, NoNotify: true})
	if v, err := again.SchemaVersion(ctx); err != nil || v != latest+1 {
		t.Fatalf("beside a compatible newer migration: schema version %d, %v", v, err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO `+q+`.schema_migrations (version, name, compatible) VALUES ($1, 'after.sql', false)`, latest+2); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, testDSN(t), postgres.Config{Schema: schema, NoListen: true, NoNotify: true})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("migration %d does not let older nodes run beside it: upgrade rota", latest+2)) {
		t.Fatalf("Open on a schema newer by an incompatible migration: %v", err)
	}
}
