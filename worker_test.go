package rota_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// newClient opens a client on a fresh SQLite file with fast maintenance.
func newClient(t *testing.T) *rota.Client {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rota.NewClient(st, rota.Config{LeaseCheckInterval: 10 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		st.Close()
	})
	return c
}

// runWorker runs w until the test ends and returns a function that stops
// it and waits for Run to return.
func runWorker(t *testing.T, w *rota.Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker Run returned %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func waitJob(t *testing.T, c *rota.Client, id int64) rota.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j, err := c.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait for job %d: %v", id, err)
	}
	return j
}

func add(t *testing.T, c *rota.Client, p rota.AddParams) rota.Job {
	t.Helper()
	res, err := c.Add(context.Background(), p)
	if err != nil {
		t.Fatalf("add %+v: %v", p, err)
	}
	return res.Job
}

type email struct {
	To string `json:"to"`
}

func TestWorkerRunsTypedHandlers(t *testing.T) {
	c := newClient(t)
	var mu sync.Mutex
	got := map[string]int{}
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 8})
	rota.Handle(w, "email.send", func(ctx context.Context, job *rota.Job, args email) error {
		mu.Lock()
		got[args.To]++
		mu.Unlock()
		return nil
	})
	runWorker(t, w)
	var ids []int64
	for i := range 200 {
		ids = append(ids, add(t, c, rota.AddParams{Type: "email.send", Data: json.RawMessage(fmt.Sprintf(`{"to":"u%d"}`, i))}).ID)
	}
	for _, id := range ids {
		if j := waitJob(t, c, id); j.State != rota.Completed || j.Attempt != 1 {
			t.Fatalf("job %d ended %s after %d attempts, want completed after 1", id, j.State, j.Attempt)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 200 {
		if n := got[fmt.Sprintf("u%d", i)]; n != 1 {
			t.Errorf("u%d handled %d times, want 1", i, n)
		}
	}
}

func TestWorkerOutcomes(t *testing.T) {
	c := newClient(t)
	var tries atomic.Int32
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 4})
	w.Handle("flaky", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		if tries.Add(1) < 3 {
			return errors.New("transient")
		}
		return nil
	}))
	w.Handle("broken", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		return rota.Permanent(errors.New("bad input"))
	}))
	w.Handle("unwanted", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		return rota.CancelJob(errors.New("not needed any more"))
	}))
	var snoozed atomic.Bool
	w.Handle("sleepy", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		if !snoozed.Swap(true) {
			return rota.SnoozeFor(20 * time.Millisecond)
		}
		return nil
	}))
	w.Handle("panicky", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		panic("boom")
	}))
	rota.Handle(w, "typed", func(ctx context.Context, job *rota.Job, args email) error { return nil })
	runWorker(t, w)

	fast := rota.AddParams{BackoffBase: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond}
	p := fast
	p.Type = "flaky"
	if j := waitJob(t, c, add(t, c, p).ID); j.State != rota.Completed || j.Attempt != 3 || len(j.Errors) != 2 || j.LastError != "transient" {
		t.Errorf("flaky: %s after %d attempts, errors %v, last %q; want completed after 3 with 2 errors", j.State, j.Attempt, j.Errors, j.LastError)
	}
	if j := waitJob(t, c, add(t, c, rota.AddParams{Type: "broken"}).ID); j.State != rota.Failed || j.Attempt != 1 || !strings.Contains(j.LastError, "bad input") {
		t.Errorf("broken: %s after %d attempts (%q), want failed after 1", j.State, j.Attempt, j.LastError)
	}
	if j := waitJob(t, c, add(t, c, rota.AddParams{Type: "unwanted"}).ID); j.State != rota.Cancelled || !strings.Contains(j.LastError, "not needed") {
		t.Errorf("unwanted: %s (%q), want cancelled with the reason", j.State, j.LastError)
	}
	if j := waitJob(t, c, add(t, c, rota.AddParams{Type: "sleepy"}).ID); j.State != rota.Completed || j.Attempt != 1 {
		t.Errorf("sleepy: %s after %d attempts, want completed with the snoozed attempt given back (1)", j.State, j.Attempt)
	}
	if j := waitJob(t, c, add(t, c, rota.AddParams{Type: "panicky", MaxAttempts: 1}).ID); j.State != rota.Failed ||
		!strings.Contains(j.LastError, "panic: boom") || !strings.Contains(j.LastError, "goroutine") {
		t.Errorf("panicky: %s with %q, want failed with the panic and its stack", j.State, j.LastError)
	}
	if j := waitJob(t, c, add(t, c, rota.AddParams{Type: "typed", Data: json.RawMessage(`{"to": 5}`)}).ID); j.State != rota.Failed || j.Attempt != 1 {
		t.Errorf("typed with undecodable data: %s after %d attempts, want failed at once", j.State, j.Attempt)
	}
}

func TestCancelStopsRunningHandler(t *testing.T) {
	c := newClient(t)
	started := make(chan struct{})
	cause := make(chan error, 1)
	w := rota.NewWorker(c, rota.WorkerConfig{})
	w.Handle("long", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	}))
	runWorker(t, w)
	j := add(t, c, rota.AddParams{Type: "long"})
	<-started
	if err := c.Cancel(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, rota.ErrCanceled) {
			t.Errorf("handler context cause %v, want ErrCanceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler context was not cancelled")
	}
	if j := waitJob(t, c, j.ID); j.State != rota.Cancelled {
		t.Errorf("job is %s, want cancelled", j.State)
	}
}

func TestHeartbeatsKeepLongJobAlive(t *testing.T) {
	c := newClient(t)
	// A lease long enough for heartbeats to keep up on a loaded machine
	// under the race detector, and a job several leases long.
	w := rota.NewWorker(c, rota.WorkerConfig{LeaseTimeout: 300 * time.Millisecond})
	w.Handle("slow", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		select {
		case <-time.After(1500 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}))
	runWorker(t, w)
	j := waitJob(t, c, add(t, c, rota.AddParams{Type: "slow"}).ID)
	if j.State != rota.Completed || j.Attempt != 1 {
		t.Errorf("slow job %s after %d attempts (%q), want completed after 1: heartbeats must extend the lease", j.State, j.Attempt, j.LastError)
	}
}

func TestLeaseExpiryTakesJobBack(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	j := add(t, c, rota.AddParams{Type: "t", MaxAttempts: 2})
	jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"t"}, LeaseTimeout: 30 * time.Millisecond})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("accept: %v %v", jobs, err)
	}
	// No heartbeat: the lease monitor takes it back.
	again, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"t"}, Wait: 10 * time.Second})
	if err != nil || len(again) != 1 || again[0].ID != j.ID || again[0].Attempt != 2 {
		t.Fatalf("re-accept after expiry: %+v %v; want job %d at attempt 2", again, err, j.ID)
	}
	if err := c.Complete(ctx, jobs[0].Lease(), nil); !errors.Is(err, rota.ErrWorkerConflict) {
		t.Errorf("finish with the expired token: %v, want ErrWorkerConflict", err)
	}
	if err := c.Complete(ctx, again[0].Lease(), nil); err != nil {
		t.Errorf("finish with the current token: %v", err)
	}
}

func TestGracefulShutdown(t *testing.T) {
	t.Run("waits for handlers", func(t *testing.T) {
		c := newClient(t)
		started := make(chan struct{})
		w := rota.NewWorker(c, rota.WorkerConfig{ShutdownTimeout: 10 * time.Second})
		w.Handle("t", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
			close(started)
			time.Sleep(100 * time.Millisecond)
			return nil
		}))
		stop := runWorker(t, w)
		j := add(t, c, rota.AddParams{Type: "t"})
		<-started
		stop()
		if got, _ := c.Get(context.Background(), j.ID); got.State != rota.Completed {
			t.Errorf("after shutdown the job is %s, want completed", got.State)
		}
	})
	t.Run("hands back unfinished jobs", func(t *testing.T) {
		c := newClient(t)
		started := make(chan struct{})
		cause := make(chan error, 1)
		w := rota.NewWorker(c, rota.WorkerConfig{ShutdownTimeout: 50 * time.Millisecond})
		w.Handle("t", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		}))
		stop := runWorker(t, w)
		j := add(t, c, rota.AddParams{Type: "t"})
		<-started
		stop()
		if err := <-cause; !errors.Is(err, rota.ErrShutdown) {
			t.Errorf("handler cause %v, want ErrShutdown", err)
		}
		got, _ := c.Get(context.Background(), j.ID)
		if got.State != rota.Pending || got.Attempt != 0 {
			t.Errorf("after shutdown the job is %s at attempt %d, want pending with the attempt given back", got.State, got.Attempt)
		}
	})
}

// TestShutdownKeepsLeaseUntilHandlerReturns cancels a handler that is
// slow to stop at the end of ShutdownTimeout: its job must stay running
// under the same lease, heartbeats extending it, until the handler
// returns, and only then go back to pending.
func TestShutdownKeepsLeaseUntilHandlerReturns(t *testing.T) {
	c := newClient(t)
	const lease = 300 * time.Millisecond
	started := make(chan string, 1)
	cancelled := make(chan struct{})
	release := make(chan struct{})
	w := rota.NewWorker(c, rota.WorkerConfig{LeaseTimeout: lease, ShutdownTimeout: 50 * time.Millisecond, ShutdownGrace: time.Minute})
	w.Handle("t", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		started <- job.Token
		<-ctx.Done()
		close(cancelled)
		<-release // slow to stop, as a program cleaning up is
		return context.Cause(ctx)
	}))
	stop := runWorker(t, w)
	j := add(t, c, rota.AddParams{Type: "t"})
	token := <-started
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	<-cancelled
	// Until the lease has been extended well past several lease lengths
	// after the cancel, the job must be running under the first lease.
	until := time.Now().Add(3 * lease)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := c.Get(context.Background(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != rota.Running || got.Token != token {
			close(release)
			t.Fatalf("while its cancelled handler still runs, the job is %s (token %q, want %q): it must keep its lease", got.State, got.Token, token)
		}
		if got.LeaseUntil.After(until) {
			break
		}
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("the lease was not extended after the cancel (lease until %v)", got.LeaseUntil)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	<-stopped
	got, _ := c.Get(context.Background(), j.ID)
	if got.State != rota.Pending || got.Attempt != 0 {
		t.Errorf("after the handler returned, the job is %s at attempt %d, want pending with the attempt given back", got.State, got.Attempt)
	}
}

func TestAcceptWaitsWithoutPolling(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	t.Run("wakes on add", func(t *testing.T) {
		got := make(chan []rota.Job, 1)
		go func() {
			jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"w.*"}, Wait: 20 * time.Second})
			if err != nil {
				t.Error(err)
			}
			got <- jobs
		}()
		time.Sleep(30 * time.Millisecond)
		j := add(t, c, rota.AddParams{Type: "w.one"})
		if jobs := <-got; len(jobs) != 1 || jobs[0].ID != j.ID {
			t.Errorf("waiting accept got %v, want job %d", jobs, j.ID)
		}
	})
	t.Run("wakes when due", func(t *testing.T) {
		runAt := time.Now().Add(150 * time.Millisecond)
		j := add(t, c, rota.AddParams{Type: "later", RunAt: runAt})
		jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"later"}, Wait: 20 * time.Second})
		if err != nil || len(jobs) != 1 || jobs[0].ID != j.ID {
			t.Fatalf("accept: %v %v, want job %d", jobs, err, j.ID)
		}
		if time.Now().Before(runAt) {
			t.Errorf("accepted before its run time")
		}
	})
	t.Run("times out empty", func(t *testing.T) {
		jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"nothing"}, Wait: 30 * time.Millisecond})
		if err != nil || len(jobs) != 0 {
			t.Errorf("accept on an empty type: %v %v, want nothing and no error", jobs, err)
		}
	})
}

func TestSubscriptions(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	j := add(t, c, rota.AddParams{Type: "s"})
	sub, err := c.Subscribe(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	types, err := c.SubscribeTypes(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer types.Close()
	jobs, _ := c.Accept(ctx, rota.AcceptParams{Types: []string{"s"}})
	progress := 50.0
	if _, err := c.Heartbeat(ctx, rota.HeartbeatParams{Lease: jobs[0].Lease(), Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(ctx, jobs[0].Lease(), json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	var states []string
	for ev := range sub.C {
		states = append(states, fmt.Sprintf("%s/%v", ev.State, ev.Progress))
	}
	if want := "pending/0 running/0 running/50 completed/0"; strings.Join(states, " ") != want {
		t.Errorf("job events %q, want %q", strings.Join(states, " "), want)
	}
	for _, want := range []rota.State{rota.Running, rota.Running, rota.Completed} {
		select {
		case ev := <-types.C:
			if ev.State != want {
				t.Errorf("type event %s, want %s", ev.State, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("type subscription missed an event")
		}
	}

	k := add(t, c, rota.AddParams{Type: "s"})
	done := make(chan error, 1)
	go func() { _, err := c.Wait(ctx, k.ID); done <- err }()
	time.Sleep(20 * time.Millisecond)
	if err := c.Remove(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("wait on a removed job: %v, want ErrNotFound", err)
	}
	if _, err := c.Subscribe(ctx, 999999); !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("subscribe to a missing job: %v, want ErrNotFound", err)
	}
}

func TestSetProgressFromHandler(t *testing.T) {
	c := newClient(t)
	w := rota.NewWorker(c, rota.WorkerConfig{})
	w.Handle("p", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		if err := rota.SetResult(ctx, map[string]int{"pages": 7}); err != nil {
			return err
		}
		return rota.SetProgress(ctx, 42)
	}))
	runWorker(t, w)
	if j := waitJob(t, c, add(t, c, rota.AddParams{Type: "p"}).ID); j.State != rota.Completed || j.Progress != 42 || string(j.Result) != `{"pages":7}` {
		t.Errorf("job %s with progress %v and result %s, want completed at 42 with {\"pages\":7}", j.State, j.Progress, j.Result)
	}
	if err := rota.SetResult(context.Background(), 1); err == nil {
		t.Error("SetResult outside a handler succeeded")
	}
	if err := rota.SetProgress(context.Background(), 1); err == nil {
		t.Error("SetProgress outside a handler succeeded")
	}
}

func TestCompleteInCallersTransaction(t *testing.T) {
	c := newClient(t)
	db, err := c.Store().(*sqlite.Store).DB()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE receipts (job_id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	var rollback atomic.Bool
	rollback.Store(true)
	w := rota.NewWorker(c, rota.WorkerConfig{})
	w.Handle("pay", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`INSERT INTO receipts (job_id) VALUES (?)`, job.ID); err != nil {
			return err
		}
		if err := c.CompleteTx(ctx, tx, job.Lease(), json.RawMessage(`"paid"`)); err != nil {
			return err
		}
		if rollback.Swap(false) {
			return errors.New("rolled back on purpose")
		}
		return tx.Commit()
	}))
	runWorker(t, w)

	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.AddTx(context.Background(), tx, rota.AddParams{Type: "pay", BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, c, res.Job.ID)
	if j.State != rota.Completed || j.Attempt != 2 || string(j.Result) != `"paid"` {
		t.Errorf("job %s after %d attempts with result %s; want completed after 2 (the first rolled back) with \"paid\"", j.State, j.Attempt, j.Result)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM receipts`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d receipts (%v), want exactly 1: the rolled-back attempt must leave none", n, err)
	}
}

// TestAcceptWaitsForBoundedGroup: the only due job belongs to a group at its
// bound; a waiting accept must sleep (not spin) and take it as soon as the
// group's running job ends. The poll fallback is an hour, so only the
// wake-up on the ending can explain a prompt answer.
func TestAcceptWaitsForBoundedGroup(t *testing.T) {
	c, counted := countingClient(t)
	ctx := context.Background()
	if err := c.SetGroupConfig(ctx, rota.GroupConfig{Group: "a", Type: "t", MaxRunning: 1}); err != nil {
		t.Fatal(err)
	}
	first := add(t, c, rota.AddParams{Type: "t", Group: "a"})
	second := add(t, c, rota.AddParams{Type: "t", Group: "a"})
	jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"t"}, Limit: 5})
	if err != nil || len(jobs) != 1 || jobs[0].ID != first.ID {
		t.Fatalf("first accept: %v %v, want only job %d (bound 1)", jobs, err, first.ID)
	}
	got := make(chan []rota.Job, 1)
	go func() {
		jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"t"}, Wait: 20 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- jobs
	}()
	time.Sleep(100 * time.Millisecond)
	if n := counted.accepts.Load(); n > 5 {
		t.Errorf("the waiting accept called the store %d times while the group was at its bound: it spins instead of sleeping", n)
	}
	if err := c.Complete(ctx, jobs[0].Lease(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case jobs := <-got:
		if len(jobs) != 1 || jobs[0].ID != second.ID {
			t.Errorf("waiting accept got %v, want job %d", jobs, second.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting accept did not wake when the group's running job ended")
	}
}

// TestAcceptSleepsThroughEnds: with nothing held back by a bound, jobs of
// the type that end do not wake a waiting accept (each would cost a round
// trip to the store for nothing); a job becoming pending does.
func TestAcceptSleepsThroughEnds(t *testing.T) {
	c, counted := countingClient(t)
	ctx := context.Background()
	for range 20 {
		add(t, c, rota.AddParams{Type: "t"})
	}
	running, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"t"}, Limit: 20})
	if err != nil || len(running) != 20 {
		t.Fatalf("accept: %d jobs, %v", len(running), err)
	}
	got := make(chan []rota.Job, 1)
	go func() {
		jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"t"}, Wait: 20 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- jobs
	}()
	time.Sleep(100 * time.Millisecond) // the accept is waiting
	before := counted.accepts.Load()
	for _, j := range running {
		if err := c.Complete(ctx, j.Lease(), nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := counted.accepts.Load() - before; n > 0 {
		t.Errorf("20 jobs ending woke the waiting accept %d times, with nothing held back by a bound", n)
	}
	next := add(t, c, rota.AddParams{Type: "t"})
	select {
	case jobs := <-got:
		if len(jobs) != 1 || jobs[0].ID != next.ID {
			t.Errorf("waiting accept got %v, want job %d", jobs, next.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting accept did not wake when a job was added")
	}
}

// countingClient is a client on a real SQLite store that counts the
// store's accepts, with a poll fallback of an hour: only wake-ups explain
// a prompt accept.
func countingClient(t *testing.T) (*rota.Client, *countingStore) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	counted := &countingStore{Store: st}
	c, err := rota.NewClient(counted, rota.Config{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, counted
}

// countingStore counts accepts on a real store.
type countingStore struct {
	store.Store
	accepts atomic.Int64
}

func (s *countingStore) Accept(ctx context.Context, p store.AcceptParams) (store.AcceptResult, error) {
	s.accepts.Add(1)
	return s.Store.Accept(ctx, p)
}

// TestPrefetch runs short jobs until the worker leases jobs ahead of its
// one slot, then checks what happens to a job leased ahead: it is running
// in the store but its handler waits for the slot; cancelled, it never
// runs; at shutdown it goes back to pending at once, with its attempt
// given back, without running, while the running handler is let finish.
// No more handlers than Concurrency ever run at once.
func TestPrefetch(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	var handlers atOnce
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 1, Prefetch: 1, ShutdownTimeout: 20 * time.Second})
	w.Handle("quick", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		defer handlers.enter()()
		return nil
	}))
	ran := make(chan int64, 10)
	release := make(chan struct{})
	w.Handle("slow", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		defer handlers.enter()()
		ran <- job.ID
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	// Short jobs, so that the worker learns that its slot frees far more
	// often than an accept takes, and leases ahead.
	res := addMany(t, c, "quick", 50)
	stop := runWorker(t, w)
	for _, r := range res {
		waitJob(t, c, r.Job.ID)
	}

	slow, err := c.AddMany(ctx, []rota.AddParams{{Type: "slow"}, {Type: "slow"}, {Type: "slow"}})
	if err != nil {
		t.Fatal(err)
	}
	first := <-ran
	// One of the others is leased ahead: running in the store, its
	// handler not called.
	var ahead rota.Job
	for deadline := time.Now().Add(10 * time.Second); ahead.ID == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no job was leased ahead of the busy slot")
		}
		for _, r := range slow {
			if j, err := c.Get(ctx, r.Job.ID); err == nil && j.ID != first && j.State == rota.Running {
				ahead = j
			}
		}
	}
	// Cancelled before it starts, it never runs.
	if err := c.Cancel(ctx, ahead.ID); err != nil {
		t.Fatal(err)
	}
	// The third is leased ahead in its place; at shutdown it goes back
	// without running, as the first does after its handler stops.
	var third int64
	for _, r := range slow {
		if r.Job.ID != first && r.Job.ID != ahead.ID {
			third = r.Job.ID
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if j, _ := c.Get(ctx, third); j.State == rota.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the third job was not leased ahead after the second was cancelled")
		}
	}
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if j, _ := c.Get(ctx, third); j.State == rota.Pending {
			if j.Attempt != 0 {
				t.Errorf("the job leased ahead went back at attempt %d, want its attempt given back", j.Attempt)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("at shutdown the job leased ahead was not handed back while the running one finished")
		}
	}
	if j, _ := c.Get(ctx, first); j.State != rota.Running {
		t.Errorf("the running job is %s before its handler returned, want running", j.State)
	}
	close(release)
	<-stopped
	select {
	case id := <-ran:
		t.Errorf("job %d ran, want only job %d to run", id, first)
	default:
	}
	if got, _ := c.Get(ctx, ahead.ID); got.State != rota.Cancelled {
		t.Errorf("the cancelled job leased ahead is %s, want cancelled", got.State)
	}
	if got, _ := c.Get(ctx, first); got.State != rota.Completed {
		t.Errorf("after shutdown the running job is %s, want completed", got.State)
	}
	if m := handlers.most.Load(); m != 1 {
		t.Errorf("%d handlers ran at once, want at most Concurrency (1)", m)
	}
}

// TestPrefetchNotForLongJobs: jobs that run far longer than an accept are
// not leased ahead, even after the worker waited a while for work (a wait
// is not an accept's round trip).
func TestPrefetchNotForLongJobs(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	var mu sync.Mutex
	entered := map[int64]bool{}
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 2, Prefetch: 8})
	w.Handle("long", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		mu.Lock()
		entered[job.ID] = true
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		return nil
	}))
	runWorker(t, w)
	first := add(t, c, rota.AddParams{Type: "long"})
	waitJob(t, c, first.ID)
	time.Sleep(300 * time.Millisecond) // the worker waits for work
	res := addMany(t, c, "long", 6)
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	for {
		jobs, err := c.GetMany(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		// Leased but not started: leased ahead, or on its way from the
		// accept (committed before its answer arrives) to a free slot: at
		// most the two slots' worth without leasing ahead.
		waiting, done := 0, 0
		mu.Lock()
		for _, j := range jobs {
			switch {
			case j.State == rota.Running && !entered[j.ID]:
				waiting++
			case j.State == rota.Completed:
				done++
			}
		}
		mu.Unlock()
		if waiting > 2 {
			t.Fatalf("%d jobs leased and waiting to start in a worker with 2 slots and 200 ms jobs, want none leased ahead", waiting)
		}
		if done == len(ids) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPrefetchUnderLoad: with several slots and many short jobs, leasing
// ahead never runs more handlers than Concurrency at once, and every job
// runs once.
func TestPrefetchUnderLoad(t *testing.T) {
	c := newClient(t)
	var handlers atOnce
	var mu sync.Mutex
	runs := map[int64]int{}
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 4, Prefetch: 4})
	w.Handle("short", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		defer handlers.enter()()
		mu.Lock()
		runs[job.ID]++
		mu.Unlock()
		time.Sleep(200 * time.Microsecond)
		return nil
	}))
	res := addMany(t, c, "short", 400)
	runWorker(t, w)
	for _, r := range res {
		if j := waitJob(t, c, r.Job.ID); j.State != rota.Completed {
			t.Fatalf("job %d ended %s", r.Job.ID, j.State)
		}
	}
	if m := handlers.most.Load(); m > 4 {
		t.Errorf("%d handlers ran at once, want at most Concurrency (4)", m)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range res {
		if n := runs[r.Job.ID]; n != 1 {
			t.Errorf("job %d ran %d times, want once", r.Job.ID, n)
		}
	}
}

// addMany adds n jobs of type typ in one call.
func addMany(t *testing.T, c *rota.Client, typ string, n int) []rota.AddResult {
	t.Helper()
	ps := make([]rota.AddParams, n)
	for i := range ps {
		ps[i] = rota.AddParams{Type: typ}
	}
	res, err := c.AddMany(context.Background(), ps)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// atOnce counts handlers running at once and the most seen.
type atOnce struct{ running, most atomic.Int32 }

// enter counts a handler in; the returned function counts it out.
func (a *atOnce) enter() func() {
	n := a.running.Add(1)
	for m := a.most.Load(); n > m && !a.most.CompareAndSwap(m, n); m = a.most.Load() {
	}
	return func() { a.running.Add(-1) }
}

// TestSubscribeTypesLimitsPatterns: a subscription of more patterns than
// store.MaxStreamPatterns is refused, naming the limit; at the limit it is
// taken.
func TestSubscribeTypesLimitsPatterns(t *testing.T) {
	c := newClient(t)
	pats := make([]string, store.MaxStreamPatterns+1)
	for i := range pats {
		pats[i] = fmt.Sprintf("t%d.*", i)
	}
	if sub, err := c.SubscribeTypes(t.Context(), pats...); !errors.Is(err, store.ErrInvalid) || !strings.Contains(fmt.Sprint(err), fmt.Sprint(store.MaxStreamPatterns)) {
		if sub != nil {
			sub.Close()
		}
		t.Fatalf("%d patterns: %v; want ErrInvalid naming the limit %d", len(pats), err, store.MaxStreamPatterns)
	}
	sub, err := c.SubscribeTypes(t.Context(), pats[1:]...)
	if err != nil {
		t.Fatalf("%d patterns: %v", len(pats)-1, err)
	}
	sub.Close()
}

// TestSubscriptionCloseDropsQueued: after Close returns, a subscription
// yields nothing more, not even a change that was queued for it before
// Close (couch_jobs' unsubscribe flushes its subscriber's messages).
func TestSubscriptionCloseDropsQueued(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	queued := func(t *testing.T, sub *rota.Subscription) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(sub.C) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no change was queued for the subscription")
			}
			time.Sleep(time.Millisecond)
		}
		sub.Close()
		if ev, ok := <-sub.C; ok {
			t.Errorf("received %s of job %d after Close returned", ev.State, ev.ID)
		}
	}
	t.Run("job", func(t *testing.T) {
		j := add(t, c, rota.AddParams{Type: "close.job"})
		sub, err := c.Subscribe(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		queued(t, sub) // the job's current state, queued at once
	})
	t.Run("types", func(t *testing.T) {
		sub, err := c.SubscribeTypes(ctx, "close.types")
		if err != nil {
			t.Fatal(err)
		}
		add(t, c, rota.AddParams{Type: "close.types"})
		add(t, c, rota.AddParams{Type: "close.types"})
		queued(t, sub)
	})
}

// TestWorkerTakesItsTypesExactly: a handler's type with pattern
// characters (as Bedrock's names have: report.v?) takes its own jobs, not those its
// type matches as a pattern (report.v2).
func TestWorkerTakesItsTypesExactly(t *testing.T) {
	c := newClient(t)
	other := add(t, c, rota.AddParams{Type: "report.v2"})
	mine := add(t, c, rota.AddParams{Type: "report.v?"})
	ran := make(chan int64, 2)
	w := rota.NewWorker(c, rota.WorkerConfig{PollWait: 20 * time.Millisecond})
	w.Handle("report.v?", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		ran <- job.ID
		return nil
	}))
	runWorker(t, w)
	if got := waitJob(t, c, mine.ID); got.State != rota.Completed {
		t.Fatalf("its own job is %s", got.State)
	}
	time.Sleep(100 * time.Millisecond)
	if j, _ := c.Get(context.Background(), other.ID); j.State != rota.Pending || j.Attempt != 0 || j.LastError != "" {
		t.Errorf("the other type's job is %s after %d attempts (%q): the worker took it", j.State, j.Attempt, j.LastError)
	}
}

// TestWaitForStates: Wait takes the states to wait for (terminal ones by
// default), as couch_jobs' wait does, and gives the job with its data.
func TestWaitForStates(t *testing.T) {
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j := add(t, c, rota.AddParams{Type: "w", Data: json.RawMessage(`{"step":1}`)})
	// Already in a state asked for: at once.
	got, err := c.Wait(ctx, j.ID, rota.Pending, rota.Paused)
	if err != nil || got.State != rota.Pending || string(got.Data) != `{"step":1}` {
		t.Fatalf("wait for pending: %s %s %v", got.State, got.Data, err)
	}
	running := make(chan rota.Job, 1)
	go func() {
		j, err := c.Wait(ctx, j.ID, rota.Running)
		if err != nil {
			t.Errorf("wait for running: %v", err)
		}
		running <- j
	}()
	time.Sleep(50 * time.Millisecond)
	jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"w"}})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("accept: %v %v", jobs, err)
	}
	if r := <-running; r.State != rota.Running || string(r.Data) != `{"step":1}` {
		t.Errorf("wait for running gave %s %s", r.State, r.Data)
	}
	// Waiting for a state the job ends without reaching: ErrFinished,
	// with the job.
	pausedWait := make(chan error, 1)
	go func() {
		j, err := c.Wait(ctx, j.ID, rota.Paused)
		if j.State != rota.Completed {
			err = fmt.Errorf("job %s with %w", j.State, err)
		}
		pausedWait <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := c.Heartbeat(ctx, rota.HeartbeatParams{Lease: jobs[0].Lease(), Data: json.RawMessage(`{"step":2}`)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(ctx, jobs[0].Lease(), nil); err != nil {
		t.Fatal(err)
	}
	if err := <-pausedWait; !errors.Is(err, rota.ErrFinished) {
		t.Errorf("wait for paused of a job that completed: %v, want ErrFinished", err)
	}
	// By default, a terminal state, with the data the run left.
	got, err = c.Wait(ctx, j.ID)
	if err != nil || got.State != rota.Completed || string(got.Data) != `{"step":2}` {
		t.Errorf("wait: %s %s %v", got.State, got.Data, err)
	}
	if _, err := c.Wait(ctx, j.ID, rota.State(99)); !errors.Is(err, rota.ErrInvalid) {
		t.Errorf("wait for an unknown state: %v, want ErrInvalid", err)
	}
}

// TestTimeoutCancelsHandler runs a handler that outlasts its job's
// timeout while the worker heartbeats: the handler's context ends at the
// run's deadline with cause ErrTimedOut, and the attempt fails as
// "timed out after …", retried under the job's policy until it fails.
func TestTimeoutCancelsHandler(t *testing.T) {
	c := newClient(t)
	causes := make(chan error, 2)
	w := rota.NewWorker(c, rota.WorkerConfig{LeaseTimeout: 200 * time.Millisecond})
	w.Handle("hang", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the handler's context has no deadline")
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}))
	runWorker(t, w)
	began := time.Now()
	j := add(t, c, rota.AddParams{Type: "hang", Timeout: 500 * time.Millisecond, MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	j = waitJob(t, c, j.ID)
	if j.State != rota.Failed || j.Attempt != 2 || j.LastError != "timed out after 500ms" || len(j.Errors) != 2 {
		t.Errorf("job %s after %d attempts, errors %v; want failed after 2 attempts that timed out", j.State, j.Attempt, j.Errors)
	}
	if took := time.Since(began); took < time.Second {
		t.Errorf("two runs of 500ms ended after %v", took)
	}
	for range 2 {
		// The lease, capped at the run's end, runs out at the deadline's
		// instant: whichever the worker notices first, the handler learns
		// that the run timed out.
		if err := <-causes; !errors.Is(err, rota.ErrTimedOut) {
			t.Errorf("handler context cause %v, want ErrTimedOut", err)
		}
	}
}

// TestAcceptWaitsForTheNextToken checks that an acceptor held back by a
// rate sleeps until the next token, which the store names, rather than
// poll: with a poll fallback of an hour, each of four jobs of a type at
// 10/s with a burst of 1 starts about 100ms after the one before.
func TestAcceptWaitsForTheNextToken(t *testing.T) {
	c, counted := countingClient(t)
	ctx := t.Context()
	if err := c.SetTypeConfig(ctx, rota.TypeConfig{Type: "t", Rate: rota.Rate{N: 10, Per: time.Second}, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := c.Add(ctx, rota.AddParams{Type: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var starts []time.Duration
	for range 4 {
		jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"t"}, Wait: 3 * time.Second})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("accept %d: %d jobs, %v; want one as the next token comes", len(starts)+1, len(jobs), err)
		}
		starts = append(starts, time.Since(start))
	}
	if last := starts[3]; last < 280*time.Millisecond || last > time.Second {
		t.Errorf("four jobs at 10/s, burst 1, started at %v: want the last about 300ms after the first", starts)
	}
	if n := counted.accepts.Load(); n > 12 {
		t.Errorf("%d accepts of the store for 4 jobs: the acceptor polled", n)
	}
}

// emptyCounter counts the accepts sent to its store, and those that came
// back empty.
type emptyCounter struct {
	store.Store
	accepts, empty atomic.Int64
}

func (s *emptyCounter) Accept(ctx context.Context, p store.AcceptParams) (store.AcceptResult, error) {
	res, err := s.Store.Accept(ctx, p)
	s.accepts.Add(1)
	if err == nil && len(res.Jobs) == 0 {
		s.empty.Add(1)
	}
	return res, err
}

// TestWorkerAcceptsWhenSignalled: a worker that took every job there was
// waits for a change before it accepts again, rather than send an accept
// at once that comes back empty: jobs added one at a time cost one accept
// each (two before: the job's, and an empty one after it).
func TestWorkerAcceptsWhenSignalled(t *testing.T) {
	sq, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st := &emptyCounter{Store: sq}
	// No polls in the test's time: every accept is the worker's own choice.
	c, err := rota.NewClient(st, rota.Config{PollInterval: time.Hour, NoMaintenance: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		sq.Close()
	})
	started := make(chan struct{}, 1)
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 4})
	w.Handle("tick", rota.HandlerFunc(func(ctx context.Context, j *rota.Job) error {
		started <- struct{}{}
		return nil
	}))
	runWorker(t, w)
	const jobs = 20
	time.Sleep(50 * time.Millisecond) // the worker's first accept, which finds nothing
	before, emptyBefore := st.accepts.Load(), st.empty.Load()
	for i := range jobs {
		add(t, c, rota.AddParams{Type: "tick"})
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("job %d did not start", i)
		}
		time.Sleep(20 * time.Millisecond) // the worker is back waiting
	}
	accepts, empty := st.accepts.Load()-before, st.empty.Load()-emptyBefore
	t.Logf("%d jobs added one at a time: %d accepts, %d empty", jobs, accepts, empty)
	if accepts > jobs+2 || empty > 2 {
		t.Errorf("%d accepts (%d empty) for %d jobs added one at a time, want about one each", accepts, empty, jobs)
	}
}

// flakyFinishStore fails the next fails calls of Finish with an error that
// may pass, as a store that is restarting would.
type flakyFinishStore struct {
	store.Store
	fails atomic.Int64
}

func (s *flakyFinishStore) Finish(ctx context.Context, ps []store.FinishParams) ([]error, error) {
	if s.fails.Add(-1) >= 0 {
		return nil, errors.New("store restarting")
	}
	return s.Store.Finish(ctx, ps)
}

// TestFinishTriedAgain: a finish that fails for a reason that may pass is
// tried again while the lease holds, and the job completes once, while
// the worker goes on running other jobs; Run's shutdown waits for such a
// finish, so that the job is completed by the time Run returns.
func TestFinishTriedAgain(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	flaky := &flakyFinishStore{Store: st}
	var logs syncBuffer
	c, err := rota.NewClient(flaky, rota.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var mu sync.Mutex
	ran := map[int64]int{}
	handled := make(chan int64, 10)
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 1})
	w.Handle("flaky", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		mu.Lock()
		ran[job.ID]++
		mu.Unlock()
		handled <- job.ID
		return nil
	}))
	flaky.fails.Store(2)
	first := add(t, c, rota.AddParams{Type: "flaky"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-handled
	// The first job's finish is being tried again; the next jobs run
	// meanwhile.
	more := []rota.Job{add(t, c, rota.AddParams{Type: "flaky"}), add(t, c, rota.AddParams{Type: "flaky"})}
	for _, j := range append(more, first) {
		if got := waitJob(t, c, j.ID); got.State != rota.Completed {
			t.Errorf("job %d: %s, want completed", j.ID, got.State)
		}
	}
	if !strings.Contains(logs.String(), "trying again while the lease holds") {
		t.Errorf("no retry logged:\n%s", logs.String())
	}
	// A finish still being tried when Run is stopped is waited for.
	flaky.fails.Store(3)
	last := add(t, c, rota.AddParams{Type: "flaky"})
	for id := <-handled; id != last.ID; id = <-handled {
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	got, err := c.Get(context.Background(), last.ID)
	if err != nil || got.State != rota.Completed {
		t.Errorf("after Run returned, the job whose finish was being tried again: %s, %v; want completed", got.State, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range ran {
		if n != 1 {
			t.Errorf("job %d ran %d times, want once", id, n)
		}
	}
}

// TestHeartbeatsForShortLeaseStartedLate: a job with a short lease that
// starts while the heartbeat loop sleeps until the next look at a long one
// (a second away) wakes it, and its lease is kept: the loop is woken by a
// start only when it would look too late.
func TestHeartbeatsForShortLeaseStartedLate(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	if err := c.SetTypeConfig(ctx, rota.TypeConfig{Type: "short", LeaseTimeout: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	longStarted := make(chan struct{})
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 2})
	w.Handle("long", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		close(longStarted)
		<-release
		return nil
	}))
	w.Handle("short", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		select {
		case <-time.After(1200 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}))
	runWorker(t, w)
	long := add(t, c, rota.AddParams{Type: "long"})
	<-longStarted
	time.Sleep(100 * time.Millisecond) // the loop has looked, and sleeps
	j := waitJob(t, c, add(t, c, rota.AddParams{Type: "short"}).ID)
	close(release)
	if j.State != rota.Completed || j.Attempt != 1 {
		t.Errorf("short-lease job %s after %d attempts (%q), want completed after 1: its start must wake the heartbeats", j.State, j.Attempt, j.LastError)
	}
	waitJob(t, c, long.ID)
}
