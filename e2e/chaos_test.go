package e2e_test

import (
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
)

// TestChaos kills `rota serve` with SIGKILL several times under mixed load
// (producers adding jobs, two `rota work` workers running a program,
// an event-stream subscriber), and kills a worker mid-job, then checks
// against the producers' ledger: every acknowledged add exists and
// completed, no completion was reverted or accepted from a stale lease,
// and no two runs of one job overlapped. It prints its figures.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes for a while")
	}
	t.Parallel()
	const (
		kills    = 3
		interval = 2500 * time.Millisecond
	)
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := serveOn(t, filepath.Join(dir, "data"), addr)
	defer func() { stop(t, srv, syscall.SIGTERM) }()
	s := &server{URL: "http://" + addr}

	runs := filepath.Join(dir, "runs")
	program := chaosProgram(runs)
	worker := func() *process {
		return s.start(t, "work", "--type", "chaos", "--concurrency", "8", "--lease", "3s", "--", "sh", "-c", program)
	}
	workers := []*process{worker(), worker()}

	rs, err := remote.New(s.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	c, err := rota.NewClient(rs, rota.Config{NoMaintenance: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The subscriber: every completion it sees, by job and lease. The
	// producers: the ledger of every add the server acknowledged.
	done := watchCompletions(t, c, "chaos")
	prod := startProducers([]*remote.Store{rs}, 3, "chaos")

	for k := range kills {
		time.Sleep(interval)
		if k == 1 {
			// A worker dies mid-job; another takes its jobs after their leases.
			workers[0].signal(t, syscall.SIGKILL)
			workers[0] = worker()
		}
		if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		srv.Wait()
		time.Sleep(300 * time.Millisecond)
		srv = serveOn(t, filepath.Join(dir, "data"), addr)
	}
	time.Sleep(interval)
	ids, failedAdds := prod.halt()
	missing, unfinished := checkLedger(t, rs, ids, 90*time.Second)
	spans, byJob, overlaps := checkOverlaps(t, runs)
	twice, reverted := done.check(t)
	rerun := 0
	for _, ss := range byJob {
		if len(ss) > 1 {
			rerun++
		}
	}
	t.Logf("chaos: %d server kills and 1 worker kill survived; %d jobs acknowledged (%d adds refused while the server was down), %d runs, %d jobs ran more than once; lost = %d, unfinished = %d, overlaps = %d, stale completions = %d, reverted = %d",
		kills, len(ids), failedAdds, spans, rerun, len(missing), len(unfinished), overlaps, twice, reverted)
	fmt.Printf("chaos: %d server kills, 1 worker kill; %d jobs; lost = %d; overlaps = %d; stale completions = %d; reverted = %d\n",
		kills, len(ids), len(missing), overlaps, twice, reverted)
	for _, w := range workers {
		w.signal(t, syscall.SIGTERM)
	}
}
