package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// The checks the chaos tests make at the end, against what producers,
// workers and subscribers recorded.

// chaosProgram is the shell program chaos workers run: it records each
// run's start and end in file (one O_APPEND write each, so lines never
// interleave) and takes a little while.
func chaosProgram(file string) string {
	return `echo "start $ROTA_JOB_ID $ROTA_JOB_ATTEMPT $(date +%s%N)" >> '` + file + `'
sleep 0.05
echo "end $ROTA_JOB_ID $ROTA_JOB_ATTEMPT $(date +%s%N)" >> '` + file + `'`
}

// checkLedger waits up to wait for every acknowledged add (ids) to
// complete, and reports those missing and those unfinished.
func checkLedger(t *testing.T, rs *remote.Store, ids []int64, wait time.Duration) (missing, unfinished []int64) {
	t.Helper()
	missing, unfinished = readLedger(t, rs, ids, wait)
	if len(missing) > 0 {
		t.Errorf("%d acknowledged adds are gone, e.g. job %d", len(missing), missing[0])
	}
	if len(unfinished) > 0 {
		t.Errorf("%d acknowledged jobs did not complete in %v, e.g. job %d", len(unfinished), wait, unfinished[0])
	}
	return missing, unfinished
}

// readLedger is checkLedger for tests that count what is lost rather than
// require nothing is: it returns the acknowledged adds missing and those
// unfinished after waiting up to wait, and reports nothing.
func readLedger(t *testing.T, rs *remote.Store, ids []int64, wait time.Duration) (missing, unfinished []int64) {
	t.Helper()
	sort.Slice(ids, func(i, k int) bool { return ids[i] < ids[k] })
	deadline := time.Now().Add(wait)
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
	return missing, unfinished
}

type span struct{ start, end int64 }

// checkOverlaps reads the runs chaosProgram recorded and reports any two
// runs of one job that overlapped. It returns how many runs there were,
// the runs by job, and the overlaps.
func checkOverlaps(t *testing.T, file string) (int, map[string][]*span, int) {
	t.Helper()
	n, byJob, overlaps := readRuns(t, file)
	for _, o := range overlaps {
		t.Error(o)
	}
	return n, byJob, len(overlaps)
}

// readRuns is checkOverlaps without failing the test: it returns the
// overlaps as messages.
func readRuns(t *testing.T, file string) (int, map[string][]*span, []string) {
	t.Helper()
	spans := map[string]*span{} // "job attempt" → its run
	byJob := map[string][]*span{}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
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
	var overlaps []string
	for job, ss := range byJob {
		for i := range ss {
			for k := i + 1; k < len(ss); k++ {
				a, b := ss[i], ss[k]
				if a.end == 0 || b.end == 0 {
					continue // a run killed with its worker has no end; its lease fenced it out
				}
				if a.start < b.end && b.start < a.end {
					overlaps = append(overlaps, fmt.Sprintf("job %s: two runs overlapped: %v and %v", job, *a, *b))
				}
			}
		}
	}
	return len(spans), byJob, overlaps
}

// completions records, from an event subscription, the leases under which
// each job completed, and completed jobs that changed again.
type completions struct {
	mu       sync.Mutex
	by       map[int64]map[string]bool // job → lease tags of its completions
	first    map[int64]time.Time       // job → when its first completion was seen
	reverted map[int64]bool            // completed jobs that changed again
	lateAdds int                       // adds that arrived after the job's completion
}

// watchCompletions subscribes to the jobs of typ through c until the test
// ends.
func watchCompletions(t *testing.T, c *rota.Client, typ string) *completions {
	t.Helper()
	w := &completions{by: map[int64]map[string]bool{}, first: map[int64]time.Time{}, reverted: map[int64]bool{}}
	sub, err := c.SubscribeTypes(t.Context(), typ)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	go func() {
		for ev := range sub.C {
			w.mu.Lock()
			switch {
			case ev.State == store.Completed:
				if w.by[ev.ID] == nil {
					w.by[ev.ID] = map[string]bool{}
					w.first[ev.ID] = time.Now()
				}
				w.by[ev.ID][ev.Lease] = true
			case w.by[ev.ID] == nil || ev.Removed:
			case ev.State == store.Pending && ev.Lease == "" && !ev.Failed && !ev.Expired:
				// The job's add, sent by the node that added it, arriving
				// after the claiming node delivered its own claim and
				// completion: across nodes a job's changes can arrive in
				// another order than they committed (docs/postgres.md,
				// Wake-ups across nodes). These jobs are never added
				// again, and a run that ends without completing, or a
				// completion lost and run again, comes as a failed
				// pending or a running under another lease.
				w.lateAdds++
			default:
				w.reverted[ev.ID] = true // a completed job changed again
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// check reports jobs completed under more than one lease (a stale token
// accepted) and completed jobs that changed again; it returns how many of
// each.
func (w *completions) check(t *testing.T) (twice, reverted int) {
	t.Helper()
	twice, reverted = w.counts()
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, leases := range w.by {
		if len(leases) > 1 {
			t.Errorf("job %d was completed under %d leases: a stale token was accepted", id, len(leases))
		}
	}
	if reverted > 0 {
		t.Errorf("%d completed jobs changed again", reverted)
	}
	return twice, reverted
}

// counts is check without failing the test.
func (w *completions) counts() (twice, reverted int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, leases := range w.by {
		if len(leases) > 1 {
			twice++
		}
	}
	return twice, len(w.reverted)
}

// late is how many adds arrived after their job's completion.
func (w *completions) late() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lateAdds
}

// firstAfter is when the first completion after t0 was seen (zero if
// none was).
func (w *completions) firstAfter(t0 time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, at := range w.first {
		if at.After(t0) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// unseen returns the jobs of ids whose completion was not seen.
func (w *completions) unseen(ids []int64) []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int64
	for _, id := range ids {
		if w.by[id] == nil {
			out = append(out, id)
		}
	}
	return out
}

// producers add jobs of one type through the given servers, each a job
// every 10 ms, keeping a ledger of the adds the servers acknowledged.
type producers struct {
	mu      sync.Mutex
	ledger  map[int64]bool
	at      map[int64]time.Time // when each add was acknowledged
	refused int
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

func startProducers(clients []*remote.Store, n int, typ string) *producers {
	ctx, stop := context.WithCancel(context.Background())
	p := &producers{ledger: map[int64]bool{}, at: map[int64]time.Time{}, stop: stop}
	for k := range n {
		rs := clients[k%len(clients)]
		p.wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				res, err := rs.Add(context.Background(), []store.AddParams{{Type: typ, Data: []byte(fmt.Sprintf(`{"p":%d,"i":%d}`, k, i))}})
				p.mu.Lock()
				if err == nil {
					p.ledger[res[0].Job.ID] = true
					p.at[res[0].Job.ID] = time.Now()
				} else {
					p.refused++
				}
				p.mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	return p
}

// halt stops the producers and returns the acknowledged adds and how many
// adds were refused.
func (p *producers) halt() ([]int64, int) {
	p.stop()
	p.wg.Wait()
	ids := make([]int64, 0, len(p.ledger))
	for id := range p.ledger {
		ids = append(ids, id)
	}
	return ids, p.refused
}

// ackedAfter returns the adds acknowledged after t0, and when the first
// of them was.
func (p *producers) ackedAfter(t0 time.Time) (ids []int64, first time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, at := range p.at {
		if at.After(t0) {
			ids = append(ids, id)
			if first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	return ids, first
}

// refusedCount is how many adds were refused so far.
func (p *producers) refusedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}
