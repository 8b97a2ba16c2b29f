//go:build linux

package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/internal/pgtest"
	"github.com/rotajobs/rota/remote"
)

// TestChaosPostgresFailover runs two `rota serve` nodes on a primary and
// a streaming standby, given both hosts in one connection string
// (target_session_attrs=read-write), with producers and a `rota work`
// worker on each node. It SIGKILLs the primary's every process under
// load, promotes the standby, and checks that the nodes follow: the
// pool (adds and completions resume), the LISTEN connections and the
// sweep leader (on the new primary, seen in pg_stat_activity; and each
// node's event stream shows the completions made through the other
// node, which reach it only by LISTEN). Then it checks the ledger.
//
// With synchronous replication nothing acknowledged may be lost: no add,
// no completion reverted, no job completed under two leases, no two runs
// of a job at once. With asynchronous replication the same failover may
// lose the last acknowledged writes; that variant counts them and asserts
// only what does not depend on replication. It prints its figures:
// docs/postgres.md (Failover) and docs/benchmarks.md quote them.
func TestChaosPostgresFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a primary and a standby and kills the primary")
	}
	t.Parallel()
	t.Run("synchronous", func(t *testing.T) { runFailover(t, true) })
	t.Run("asynchronous", func(t *testing.T) { runFailover(t, false) })
}

// runFailover runs one failover, with synchronous or asynchronous
// replication.
func runFailover(t *testing.T, synchronous bool) {
	primary := pgtest.Start(t)
	standby := primary.Standby(t, "rota_standby")
	mode := "async"
	if synchronous {
		mode = "sync"
		pgExec(t, primary.DSN("postgres"), `ALTER SYSTEM SET synchronous_standby_names = 'rota_standby'`, `SELECT pg_reload_conf()`)
	}
	waitWithin(t, 20*time.Second, "the standby to stream ("+mode+")", func() bool {
		var state string
		pgQueryRow(t, primary.DSN("postgres"), `SELECT coalesce((SELECT sync_state FROM pg_stat_replication WHERE application_name = 'rota_standby' AND state = 'streaming'), '')`, &state)
		return state == mode
	})

	dsn := fmt.Sprintf("postgres://rota@127.0.0.1:%s,127.0.0.1:%s/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=5", primary.Port, standby.Port)
	var nodes []*server
	for range 2 {
		nodes = append(nodes, startServer(t, "--store", dsn))
	}
	runs := filepath.Join(t.TempDir(), "runs")
	program := chaosProgram(runs)
	var workers []*process
	for _, n := range nodes {
		workers = append(workers, n.start(t, "work", "--type", "failover", "--concurrency", "8", "--lease", "3s", "--", "sh", "-c", program))
	}
	defer func() {
		for _, w := range workers {
			w.signal(t, syscall.SIGTERM)
		}
	}()
	var clients []*remote.Store
	var seen []*completions // per node, from its event stream
	for _, n := range nodes {
		rs, err := remote.New(n.URL, remote.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		clients = append(clients, rs)
		c, err := rota.NewClient(rs, rota.Config{NoMaintenance: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		seen = append(seen, watchCompletions(t, c, "failover"))
	}
	prod := startProducers(clients, 4, "failover")
	time.Sleep(2500 * time.Millisecond)

	killed := time.Now()
	primary.Kill(t)
	standby.Promote(t)
	promoted := time.Now()

	// Work resumes: an add acknowledged, a job completed, on the new
	// primary.
	var added, completed time.Time
	waitWithin(t, 30*time.Second, "an add and a completion after the promotion", func() bool {
		_, added = prod.ackedAfter(promoted)
		completed = seen[0].firstAfter(promoted)
		return !added.IsZero() && !completed.IsZero()
	})
	// The sessions of their own follow: each node's LISTEN connection and
	// one leader are on the new primary.
	waitWithin(t, 20*time.Second, "both LISTEN connections and a sweep leader on the new primary", func() bool {
		var listen, lead int
		pgQueryRow(t, standby.DSN("postgres"), `SELECT count(*) FILTER (WHERE application_name = 'rota listen'), count(*) FILTER (WHERE application_name = 'rota leader') FROM pg_stat_activity`, &listen, &lead)
		return listen == 2 && lead == 1
	})
	sessions := time.Now()

	time.Sleep(3 * time.Second)
	ids, refused := prod.halt()
	for i, n := range nodes {
		if n.cmd.ProcessState != nil {
			t.Errorf("node %d exited in the failover:\n%s", i, n.log)
		}
	}

	var missing []int64
	var overlaps []string
	var spans, twice, reverted int
	if synchronous {
		missing, _ = checkLedger(t, clients[0], ids, 90*time.Second)
		var n int
		spans, _, n = checkOverlaps(t, runs)
		overlaps = make([]string, n)
		for _, s := range seen {
			tw, rv := s.check(t)
			twice, reverted = max(twice, tw), max(reverted, rv)
		}
	} else {
		var unfinished []int64
		missing, unfinished = readLedger(t, clients[0], ids, 90*time.Second)
		if len(unfinished) > 0 {
			t.Errorf("%d acknowledged jobs did not complete, e.g. job %d", len(unfinished), unfinished[0])
		}
		spans, _, overlaps = readRuns(t, runs)
		for _, s := range seen {
			tw, rv := s.counts()
			twice, reverted = max(twice, tw), max(reverted, rv)
		}
	}

	// Jobs added once the nodes were back on the new primary: each node's
	// event stream shows every completion, its own and the other node's
	// (those reach it through its LISTEN connection only).
	after, _ := prod.ackedAfter(sessions)
	var unseen [2][]int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		for i, s := range seen {
			unseen[i] = s.unseen(after)
		}
		if len(unseen[0])+len(unseen[1]) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, u := range unseen {
		if len(u) > 0 {
			t.Errorf("node %d's event stream did not show %d of the %d completions after the failover, e.g. job %d: its LISTEN connection did not follow the primary", i, len(u), len(after), u[0])
		}
	}
	if len(after) == 0 {
		t.Error("no add was acknowledged after the nodes moved to the new primary")
	}

	fmt.Printf("failover (%s replication): %d jobs acknowledged (%d adds refused in the failover), %d runs; primary killed, standby promoted in %v; first add acknowledged %v after the promotion, first completion %v after (%v after the kill); LISTEN and leader on the new primary %v after; lost adds = %d, completed jobs that changed again = %d, jobs completed under two leases = %d, overlapping runs = %d\n",
		mode, len(ids), refused, spans, promoted.Sub(killed).Round(time.Millisecond),
		added.Sub(promoted).Round(time.Millisecond), completed.Sub(promoted).Round(time.Millisecond), completed.Sub(killed).Round(time.Millisecond),
		sessions.Sub(promoted).Round(time.Millisecond), len(missing), reverted, twice, len(overlaps))
}

// pgExec runs statements on the database at dsn.
func pgExec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, q := range stmts {
		if _, err := c.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// pgQueryRow scans one row of q on the database at dsn.
func pgQueryRow(t *testing.T, dsn, q string, dest ...any) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(t.Context(), q).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// waitWithin polls cond every 50 ms until it holds, failing the test after
// limit.
func waitWithin(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
