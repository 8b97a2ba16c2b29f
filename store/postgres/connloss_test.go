package postgres_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/internal/pgtest"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// restartable is the database the connection-loss test restarts: by
// default a PostgreSQL of the test's own (internal/pgtest), because
// restarting the shared server of ROTA_TEST_POSTGRES would break the
// PostgreSQL tests of every other package, which go test runs at the
// same time. ROTA_TEST_POSTGRES_RESTART, a shell command that restarts the
// server of ROTA_TEST_POSTGRES, makes the test use that server instead: for
// a database where PostgreSQL's programs are not installed (a remote one, a
// container), at the cost of disturbing whatever else uses it meanwhile.
func restartable(t *testing.T) (dsn string, restart func() error, what string) {
	t.Helper()
	if cmd := os.Getenv("ROTA_TEST_POSTGRES_RESTART"); cmd != "" {
		dsn := testDSN(t)
		return dsn, func() error {
			if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
				return fmt.Errorf("ROTA_TEST_POSTGRES_RESTART (%s): %w\n%s", cmd, err, out)
			}
			return nil
		}, cmd
	}
	pg := pgtest.Start(t)
	return pg.DSN("postgres"), func() error {
		pg.Ctl(t, "restart", "-m", "fast")
		return nil
	}, "a private PostgreSQL on port " + pg.Port + ", pg_ctl restart -m fast"
}

// TestConnectionLoss restarts PostgreSQL while producers add jobs and
// workers take and complete them: calls during the restart fail with
// errors that say the database is unavailable, the store recovers by
// itself (pool, LISTEN connection, leadership), and every add and finish
// that was acknowledged is there afterwards.
func TestConnectionLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the database server")
	}
	dsn, restart, what := restartable(t)
	schema := newSchemaAt(t, dsn)
	a := openAt(t, dsn, schema, postgres.Config{LeaderRetry: 50 * time.Millisecond})
	b := openAt(t, dsn, schema, postgres.Config{})
	ctx := t.Context()

	var (
		mu        sync.Mutex
		added     = map[int64]bool{}
		finished  = map[int64]bool{}
		failures  []error
		restarted atomic.Bool
		okAfter   [4]atomic.Int64 // successes of each goroutine after the restart
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	ok := func(g int) {
		if restarted.Load() {
			okAfter[g].Add(1)
		}
	}
	for g := range 2 { // producers
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				ps := make([]store.AddParams, 10)
				for k := range ps {
					ps[k] = store.AddParams{Type: "cl", Data: []byte(fmt.Sprintf(`{"p":%d,"i":%d}`, g, i))}
				}
				res, err := a.Add(ctx, ps)
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				for _, r := range res {
					added[r.Job.ID] = true
				}
				mu.Unlock()
				ok(g)
			}
		})
	}
	for g := 2; g < 4; g++ { // workers
		wg.Go(func() {
			for !stop.Load() {
				res, err := a.Accept(ctx, store.AcceptParams{Types: []string{"cl"}, Limit: 10})
				if err != nil {
					fail(err)
					continue
				}
				if len(res.Jobs) == 0 {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				ps := make([]store.FinishParams, len(res.Jobs))
				for i, j := range res.Jobs {
					ps[i] = store.FinishParams{Lease: j.Lease(), As: store.Complete}
				}
				errs, err := a.Finish(ctx, ps)
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				for i, e := range errs {
					if e == nil {
						finished[ps[i].ID] = true
					}
				}
				mu.Unlock()
				ok(g)
			}
		})
	}
	// A reader through the engine's client: its reads are tried again
	// while the database is unreachable, so none fails.
	rc, err := rota.NewClient(a, rota.Config{NoMaintenance: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var clientReads, clientFailures atomic.Int64
	var clientErr atomic.Value
	wg.Go(func() {
		for !stop.Load() {
			if _, err := rc.Stats(ctx); err != nil {
				clientFailures.Add(1)
				clientErr.Store(err)
			} else if restarted.Load() {
				clientReads.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	defer func() { stop.Store(true); wg.Wait() }()

	waitFor := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, limit)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("load running", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(added) >= 300 && len(finished) >= 100
	})
	if _, _, err := a.ExpireLeases(ctx, time.Now()); err != nil || !a.IsLeader() {
		t.Fatalf("ExpireLeases before the restart: %v (leader %v)", err, a.IsLeader())
	}

	mu.Lock()
	before := len(failures)
	mu.Unlock()
	if err := restart(); err != nil {
		t.Fatalf("restarting PostgreSQL: %v", err)
	}
	restarted.Store(true)
	t.Logf("PostgreSQL restarted under load (%s)", what)

	// Every producer and worker gets going again by itself.
	waitFor("producers and workers recovered after the restart", 60*time.Second, func() bool {
		for g := range okAfter {
			if okAfter[g].Load() < 20 {
				return false
			}
		}
		return true
	})
	stop.Store(true)
	wg.Wait()

	mu.Lock()
	failed := failures[before:]
	mu.Unlock()
	if len(failed) == 0 {
		t.Errorf("no call failed while the server restarted; the test did not exercise connection loss")
	}
	for i, err := range failed {
		if !errors.Is(err, postgres.ErrUnavailable) || !strings.HasPrefix(err.Error(), "postgres: ") {
			t.Errorf("a call during the restart failed with %q; want an error that names the store and matches ErrUnavailable", err)
		} else if i < 3 {
			t.Logf("a call during the restart: %v", err)
		}
	}
	t.Logf("%d calls failed during the restart; %d adds and %d finishes acknowledged", len(failed), len(added), len(finished))
	if n := clientFailures.Load(); n > 0 || clientReads.Load() == 0 {
		t.Errorf("reads through rota.Client: %d failed (last: %v), %d succeeded after the restart; want every read to succeed by trying again", n, clientErr.Load(), clientReads.Load())
	}

	// Nothing acknowledged was lost.
	all := readAll(t, a, added)
	for id := range added {
		if all[id].ID != id {
			t.Errorf("acknowledged add of job %d is lost", id)
		}
	}
	for id := range finished {
		if all[id].State != store.Completed {
			t.Errorf("acknowledged finish of job %d is lost: the job is %v", id, all[id].State)
		}
	}

	// The sweep leadership and the LISTEN connection came back too: the
	// leader sweeps again, and node B hears of a job node A adds.
	waitFor("the leader sweeps again", 30*time.Second, func() bool {
		_, _, err := a.ExpireLeases(ctx, time.Now())
		return err == nil && a.IsLeader()
	})
	// B's LISTEN connection comes back with back-off, possibly after A's
	// producers and sweeps have: a notification sent before it is back is
	// lost by design (afterReconnect wakes the acceptors instead). So A adds
	// a job every 200ms until B hears of one.
	var (
		heardMu sync.Mutex
		heard   = map[int64]bool{}
		sent    []int64
		sentAt  time.Time
	)
	unwatch := b.Watch(func(cs []store.Event) {
		heardMu.Lock()
		defer heardMu.Unlock()
		for _, c := range cs {
			heard[c.ID] = true
		}
	})
	defer unwatch()
	waitFor("node B hears of a job added on node A after the restart (its LISTEN connection came back)", 30*time.Second, func() bool {
		if time.Since(sentAt) >= 200*time.Millisecond {
			res, err := a.Add(ctx, []store.AddParams{{Type: "after.restart"}})
			if err != nil {
				t.Fatalf("Add after the restart: %v", err)
			}
			sent, sentAt = append(sent, res[0].Job.ID), time.Now()
		}
		heardMu.Lock()
		defer heardMu.Unlock()
		for _, id := range sent {
			if heard[id] {
				return true
			}
		}
		return false
	})
	t.Logf("node B heard of a job added on node A after the restart (%d added)", len(sent))
}
