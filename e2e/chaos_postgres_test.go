//go:build linux

package e2e_test

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/internal/pgtest"
	"github.com/rotajobs/rota/remote"
)

// TestChaosPostgres runs two `rota serve` nodes on one PostgreSQL under
// load (producers on both nodes, a `rota work` worker on each, an event
// subscriber) and takes PostgreSQL away twice: a fast restart, then a
// crash (stop -m immediate, recovery at start). Then it checks the
// producers' ledger as TestChaos does: nothing acknowledged lost, every
// job completed, no overlapping runs, no stale completion. It prints its
// figures.
func TestChaosPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts PostgreSQL for a while")
	}
	t.Parallel()
	pg := pgtest.Start(t)
	dir := t.TempDir()
	var nodes []*server
	for range 2 {
		nodes = append(nodes, startServer(t, "--store", pg.DSN("postgres")))
	}
	runs := filepath.Join(dir, "runs")
	program := chaosProgram(runs)
	var workers []*process
	for _, n := range nodes {
		workers = append(workers, n.start(t, "work", "--type", "chaos", "--concurrency", "8", "--lease", "3s", "--", "sh", "-c", program))
	}
	defer func() {
		for _, w := range workers {
			w.signal(t, syscall.SIGTERM)
		}
	}()
	var clients []*remote.Store
	for _, n := range nodes {
		rs, err := remote.New(n.URL, remote.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		clients = append(clients, rs)
	}
	c, err := rota.NewClient(clients[1], rota.Config{NoMaintenance: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	done := watchCompletions(t, c, "chaos")
	prod := startProducers(clients, 4, "chaos")
	const interval = 2500 * time.Millisecond
	time.Sleep(interval)
	pg.Ctl(t, "restart", "-m", "fast")
	time.Sleep(interval)
	pg.Ctl(t, "stop", "-m", "immediate") // a crash: recovery replays the WAL
	time.Sleep(500 * time.Millisecond)
	pg.Ctl(t, "start")
	time.Sleep(interval)
	ids, failedAdds := prod.halt()
	for i, n := range nodes {
		if n.cmd.ProcessState != nil {
			t.Errorf("node %d exited when PostgreSQL went away:\n%s", i, n.log)
		}
	}

	missing, unfinished := checkLedger(t, clients[0], ids, 90*time.Second)
	spans, _, overlaps := checkOverlaps(t, runs)
	twice, reverted := done.check(t)
	fmt.Printf("chaos: PostgreSQL restarted and crashed under 2 nodes; %d jobs acknowledged (%d adds refused while it was down), %d runs; lost = %d, unfinished = %d, overlaps = %d, stale completions = %d, reverted = %d, adds delivered after their completion = %d\n",
		len(ids), failedAdds, spans, len(missing), len(unfinished), overlaps, twice, reverted, done.late())
}
