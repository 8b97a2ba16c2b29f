//go:build linux

package e2e_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rotajobs/rota/internal/pgtest"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// TestChaosWorkflow kills `rota serve` (SQLite) with SIGKILL three times
// while producers add workflows (five levels of three jobs, each after
// every job of the level above, in one atomic add each) and two `rota
// work` workers run them. Then: every acknowledged job exists and
// completed, no two runs of a job overlapped, and no run of a job started
// before every run of each of its dependencies had ended.
func TestChaosWorkflow(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes for a while")
	}
	t.Parallel()
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
	chaosWorkflows(t, dir, []*server{s, s}, func(k int) {
		if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		srv.Wait()
		time.Sleep(300 * time.Millisecond)
		srv = serveOn(t, filepath.Join(dir, "data"), addr)
	})
}

// TestChaosWorkflowPostgres is TestChaosWorkflow on two nodes of one
// PostgreSQL database, a worker and a producer on each: node 0 is killed
// with SIGKILL (and started again on its address) three times.
func TestChaosWorkflowPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes for a while")
	}
	t.Parallel()
	pg := pgtest.Start(t)
	dir := t.TempDir()
	var nodes []*server
	for range 2 {
		nodes = append(nodes, startServer(t, "--store", pg.DSN("postgres")))
	}
	chaosWorkflows(t, dir, nodes, func(k int) {
		n := nodes[0]
		if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		n.cmd.Wait()
		time.Sleep(300 * time.Millisecond)
		again := serveAt(t, n.URL[len("http://"):], n.data, n.args...)
		n.cmd, n.log = again.cmd, again.log
	})
}

// chaosWorkflows runs workflows on nodes (a worker and a producer on each;
// a node may be named twice) while kill takes one down three times, and
// checks what the tests above say.
func chaosWorkflows(t *testing.T, dir string, nodes []*server, kill func(k int)) {
	const (
		kills    = 3
		interval = 2500 * time.Millisecond
		typ      = "chaos.wf"
	)
	runs := filepath.Join(dir, "runs")
	program := chaosProgram(runs)
	var workers []*process
	for _, n := range nodes {
		workers = append(workers, n.start(t, "work", "--type", typ, "--concurrency", "8", "--lease", "3s", "--", "sh", "-c", program))
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

	// The producers: each acknowledged workflow's jobs, with the jobs each
	// one runs after.
	var mu sync.Mutex
	after := map[int64][]int64{}
	refused := 0
	ctx, halt := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for p, rs := range clients {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				var ps []store.AddParams
				for lvl := range 5 {
					for k := range 3 {
						a := store.AddParams{Type: typ, Key: fmt.Sprintf("p%d-w%d-l%d-%d", p, i, lvl, k)}
						if lvl > 0 {
							for k2 := range 3 {
								a.AfterKeys = append(a.AfterKeys, fmt.Sprintf("p%d-w%d-l%d-%d", p, i, lvl-1, k2))
							}
						}
						if k == 2 {
							a.OnDepFailure = store.DepRun
						}
						ps = append(ps, a)
					}
				}
				res, err := rs.Add(context.Background(), ps)
				mu.Lock()
				if err != nil {
					refused++
				} else {
					for j, r := range res {
						lvl := j / 3
						var deps []int64
						if lvl > 0 {
							for k2 := range 3 {
								deps = append(deps, res[(lvl-1)*3+k2].Job.ID)
							}
						}
						after[r.Job.ID] = deps
					}
				}
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	for k := range kills {
		time.Sleep(interval)
		kill(k)
	}
	time.Sleep(interval)
	halt()
	wg.Wait()

	ids := make([]int64, 0, len(after))
	for id := range after {
		ids = append(ids, id)
	}
	missing, unfinished := checkLedger(t, clients[len(clients)-1], ids, 120*time.Second)
	spans, byJob, overlaps := checkOverlaps(t, runs)
	early := 0
	for id, deps := range after {
		for _, run := range byJob[strconv.FormatInt(id, 10)] {
			for _, d := range deps {
				for _, dr := range byJob[strconv.FormatInt(d, 10)] {
					if dr.end == 0 || run.start <= dr.end {
						early++
						if early <= 5 {
							t.Errorf("job %d started at %d, before its dependency %d's run ended (%d–%d)", id, run.start, d, dr.start, dr.end)
						}
					}
				}
			}
		}
	}
	fmt.Printf("chaos workflows: %d kills; %d jobs in %d acknowledged workflows (%d adds refused), %d runs; lost = %d, unfinished = %d, overlaps = %d, started before a dependency ended = %d\n",
		kills, len(ids), len(ids)/15, refused, spans, len(missing), len(unfinished), overlaps, early)
}
