package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
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

	// The program records each run's start and end (one O_APPEND write
	// each, so lines never interleave) and takes a little while.
	runs := filepath.Join(dir, "runs")
	program := `echo "start $ROTA_JOB_ID $ROTA_JOB_ATTEMPT $(date +%s%N)" >> '` + runs + `'
sleep 0.05
echo "end $ROTA_JOB_ID $ROTA_JOB_ATTEMPT $(date +%s%N)" >> '` + runs + `'`
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

	// The subscriber: every completion it sees, by job and lease.
	var evMu sync.Mutex
	completedBy := map[int64]map[string]bool{} // job → lease tags of its completions
	reverted := 0
	sub, err := c.SubscribeTypes(t.Context(), "chaos")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	go func() {
		for ev := range sub.C {
			evMu.Lock()
			switch {
			case ev.State == store.Completed:
				if completedBy[ev.ID] == nil {
					completedBy[ev.ID] = map[string]bool{}
				}
				completedBy[ev.ID][ev.Lease] = true
			case completedBy[ev.ID] != nil && !ev.Removed:
				reverted++ // a completed job changed again
			}
			evMu.Unlock()
		}
	}()

	// The producers: the ledger holds every add the server acknowledged.
	ctx, stopProducers := context.WithCancel(context.Background())
	var ledgerMu sync.Mutex
	ledger := map[int64]bool{}
	var failedAdds int
	var wg sync.WaitGroup
	for p := range 3 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				res, err := rs.Add(context.Background(), []store.AddParams{{Type: "chaos", Data: []byte(fmt.Sprintf(`{"p":%d,"i":%d}`, p, i))}})
				ledgerMu.Lock()
				if err == nil {
					ledger[res[0].Job.ID] = true
				} else {
					failedAdds++
				}
				ledgerMu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}

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
	stopProducers()
	wg.Wait()

	// Every acknowledged add completes.
	ledgerMu.Lock()
	ids := make([]int64, 0, len(ledger))
	for id := range ledger {
		ids = append(ids, id)
	}
	ledgerMu.Unlock()
	sort.Slice(ids, func(i, k int) bool { return ids[i] < ids[k] })
	deadline := time.Now().Add(90 * time.Second)
	var missing, unfinished []int64
	for {
		missing, unfinished = missing[:0], unfinished[:0]
		for start := 0; start < len(ids); start += 500 {
			chunk := ids[start:min(start+500, len(ids))]
			jobs, err := rs.Get(context.Background(), chunk)
			if err != nil {
				t.Fatal(err)
			}
			for i, j := range jobs {
				switch {
				case j.ID == 0:
					missing = append(missing, chunk[i])
				case j.State != store.Completed:
					unfinished = append(unfinished, chunk[i])
				}
			}
		}
		if len(unfinished) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(missing) > 0 {
		t.Errorf("%d acknowledged adds are gone, e.g. job %d", len(missing), missing[0])
	}
	if len(unfinished) > 0 {
		t.Errorf("%d acknowledged jobs did not complete in 90s, e.g. job %d", len(unfinished), unfinished[0])
	}

	// No two runs of one job overlapped.
	type span struct{ start, end int64 }
	spans := map[string]*span{} // "job attempt" → its run
	byJob := map[string][]*span{}
	f, err := os.Open(runs)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			continue
		}
		ns, _ := strconv.ParseInt(fs[3], 10, 64)
		key := fs[1] + " " + fs[2]
		if spans[key] == nil {
			spans[key] = &span{}
			byJob[fs[1]] = append(byJob[fs[1]], spans[key])
		}
		if fs[0] == "start" {
			spans[key].start = ns
		} else {
			spans[key].end = ns
		}
	}
	f.Close()
	overlaps := 0
	for job, ss := range byJob {
		for i := range ss {
			for k := i + 1; k < len(ss); k++ {
				a, b := ss[i], ss[k]
				if a.end == 0 || b.end == 0 {
					continue // a run killed with its worker has no end; its lease fenced it out
				}
				if a.start < b.end && b.start < a.end {
					overlaps++
					t.Errorf("job %s: two runs overlapped: %v and %v", job, *a, *b)
				}
			}
		}
	}

	// No completion was reverted or made twice by different leases.
	evMu.Lock()
	twice := 0
	for id, leases := range completedBy {
		if len(leases) > 1 {
			twice++
			t.Errorf("job %d was completed under %d leases: a stale token was accepted", id, len(leases))
		}
	}
	if reverted > 0 {
		t.Errorf("%d completed jobs changed again", reverted)
	}
	evMu.Unlock()
	rerun := 0
	for _, ss := range byJob {
		if len(ss) > 1 {
			rerun++
		}
	}
	t.Logf("chaos: %d server kills and 1 worker kill survived; %d jobs acknowledged (%d adds refused while the server was down), %d runs, %d jobs ran more than once; lost = %d, unfinished = %d, overlaps = %d, stale completions = %d, reverted = %d",
		kills, len(ids), failedAdds, len(spans), rerun, len(missing), len(unfinished), overlaps, twice, reverted)
	fmt.Printf("chaos: %d server kills, 1 worker kill; %d jobs; lost = %d; overlaps = %d; stale completions = %d; reverted = %d\n",
		kills, len(ids), len(missing), overlaps, twice, reverted)
	for _, w := range workers {
		w.signal(t, syscall.SIGTERM)
	}
}
