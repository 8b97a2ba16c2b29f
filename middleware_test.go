package rota_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store/sqlite"
)

// newHookedClient opens a client with hooks on a fresh SQLite file.
func newHookedClient(t *testing.T, hooks ...rota.Hook) *rota.Client {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rota.NewClient(st, rota.Config{Hooks: hooks, CloseStore: true, LeaseCheckInterval: 50 * time.Millisecond})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// runUntil runs w until the job ends, and returns the job.
func runUntil(t *testing.T, c *rota.Client, w *rota.Worker, id int64) rota.Job {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { stop(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		j, err := c.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State.Terminal() || j.Attempt > 0 && j.State == rota.Pending {
			return j
		}
	}
	t.Fatalf("job %d did not end", id)
	return rota.Job{}
}

type ctxKey struct{}

func TestMiddlewareOrderAndContext(t *testing.T) {
	c := newHookedClient(t)
	var mu sync.Mutex
	var trace []string
	note := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
	named := func(name string) rota.Middleware {
		return func(next rota.Handler) rota.Handler {
			return rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
				note(name + " before " + job.Type)
				err := next.Work(context.WithValue(ctx, ctxKey{}, name), job)
				note(name + " after")
				return err
			})
		}
	}
	w := rota.NewWorker(c, rota.WorkerConfig{Middleware: []rota.Middleware{named("outer"), named("inner")}})
	w.Handle("mw", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		note("handler sees " + ctx.Value(ctxKey{}).(string))
		return nil
	}))
	res, err := c.Add(context.Background(), rota.AddParams{Type: "mw"})
	if err != nil {
		t.Fatal(err)
	}
	if j := runUntil(t, c, w, res.Job.ID); j.State != rota.Completed {
		t.Fatalf("job is %v", j.State)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"outer before mw", "inner before mw", "handler sees inner", "inner after", "outer after"}
	if strings.Join(trace, "|") != strings.Join(want, "|") {
		t.Fatalf("trace %q, want %q", trace, want)
	}
}

func TestMiddlewarePanicFailsAttempt(t *testing.T) {
	c := newHookedClient(t)
	boom := func(next rota.Handler) rota.Handler {
		return rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error { panic("middleware broke") })
	}
	w := rota.NewWorker(c, rota.WorkerConfig{Middleware: []rota.Middleware{boom}})
	w.Handle("p", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error { return nil }))
	res, err := c.Add(context.Background(), rota.AddParams{Type: "p", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	j := runUntil(t, c, w, res.Job.ID)
	if j.State != rota.Failed || !strings.Contains(j.LastError, "panic: middleware broke") {
		t.Fatalf("job %v, last error %q", j.State, j.LastError)
	}
}

func TestTimeoutMiddleware(t *testing.T) {
	c := newHookedClient(t)
	w := rota.NewWorker(c, rota.WorkerConfig{Middleware: []rota.Middleware{rota.Timeout(50 * time.Millisecond)}})
	w.Handle("slow", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		<-ctx.Done()
		return ctx.Err()
	}))
	res, err := c.Add(context.Background(), rota.AddParams{Type: "slow", BackoffBase: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	j := runUntil(t, c, w, res.Job.ID)
	if j.State != rota.Pending || j.Attempt != 1 || !strings.Contains(j.LastError, "ran longer than its timeout 50ms") {
		t.Fatalf("job %v attempt %d, last error %q", j.State, j.Attempt, j.LastError)
	}
}

// tenantHook stamps a group on jobs without one and rejects a type.
type tenantHook struct{ rota.HookDefaults }

func (tenantHook) BeforeAdd(ctx context.Context, p *rota.AddParams) error {
	if p.Type == "forbidden" {
		return errors.New("type forbidden here")
	}
	if p.Group == "" {
		p.Group = "tenant-a"
	}
	return nil
}

// finishLog records what FinishHook sees.
type finishLog struct {
	rota.HookDefaults
	mu   sync.Mutex
	seen []string
}

func (l *finishLog) AfterFinish(ctx context.Context, job *rota.Job, p rota.FinishParams, took time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, fmt.Sprintf("%s %s err=%v timed=%v", job.Type, p.As, err, took > 0))
}

func TestHooks(t *testing.T) {
	log := &finishLog{}
	// A hook made of a function, listed after tenantHook: it sees the
	// group tenantHook stamped.
	stampGroup := rota.AddHookFunc(func(ctx context.Context, p *rota.AddParams) error {
		p.Meta = map[string]string{"group_seen": p.Group}
		return nil
	})
	var ended sync.WaitGroup
	ended.Add(2)
	countEnds := rota.FinishHookFunc(func(context.Context, *rota.Job, rota.FinishParams, time.Duration, error) { ended.Done() })
	c := newHookedClient(t, tenantHook{}, log, stampGroup, countEnds)
	ctx := context.Background()
	in := []rota.AddParams{{Type: "ok"}, {Type: "ok", Group: "mine"}}
	res, err := c.AddMany(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Job.Group != "tenant-a" || res[1].Job.Group != "mine" || in[0].Group != "" {
		t.Fatalf("groups %q %q; the caller's params became %+v", res[0].Job.Group, res[1].Job.Group, in[0])
	}
	if res[0].Job.Meta["group_seen"] != "tenant-a" || in[0].Meta != nil {
		t.Fatalf("AddHookFunc after tenantHook: meta %v; the caller's params became %+v", res[0].Job.Meta, in[0])
	}
	// A rejected add adds nothing, not even the batch's other jobs.
	_, err = c.AddMany(ctx, []rota.AddParams{{Type: "ok"}, {Type: "forbidden"}})
	if err == nil || !strings.Contains(err.Error(), "type forbidden here") {
		t.Fatalf("add of a forbidden type: %v", err)
	}
	page, err := c.List(ctx, rota.ListParams{})
	if err != nil || len(page.Jobs) != 2 {
		t.Fatalf("after a rejected add: %d jobs, %v", len(page.Jobs), err)
	}

	w := rota.NewWorker(c, rota.WorkerConfig{})
	w.Handle("ok", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		if job.Group == "mine" {
			return rota.Permanent(errors.New("no"))
		}
		return nil
	}))
	runUntil(t, c, w, res[0].Job.ID)
	runUntil(t, c, w, res[1].Job.ID)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		log.mu.Lock()
		n := len(log.seen)
		log.mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
	}
	ended.Wait() // FinishHookFunc saw both runs
	log.mu.Lock()
	defer log.mu.Unlock()
	got := strings.Join(log.seen, "|")
	if !strings.Contains(got, "ok complete err=<nil> timed=true") || !strings.Contains(got, "ok fail err=<nil> timed=true") {
		t.Fatalf("finish hooks saw %q", log.seen)
	}
}

// misspeltHook is a Hook whose method has the wrong name, so it is of no
// hook kind.
type misspeltHook struct{ rota.HookDefaults }

func (misspeltHook) BeforeAdds(ctx context.Context, p *rota.AddParams) error { return nil }

// TestHooksMustBeHooks checks that what is not a hook does not compile in
// Config.Hooks (see the assignments below) and that a Hook of no kind is
// refused, naming its place in the list.
func TestHooksMustBeHooks(t *testing.T) {
	var (
		_ rota.AddHook    = tenantHook{}
		_ rota.FinishHook = (*finishLog)(nil)
		_ rota.AddHook    = rota.AddHookFunc(nil)
		_ rota.FinishHook = rota.FinishHookFunc(nil)
		_ []rota.Hook     = rota.Config{}.Hooks
	)
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = rota.NewClient(st, rota.Config{Hooks: []rota.Hook{tenantHook{}, misspeltHook{}}})
	if err == nil || !strings.Contains(err.Error(), "Hooks[1] (rota_test.misspeltHook) implements no hook kind") {
		t.Fatalf("NewClient with a hook of no kind: %v", err)
	}
}

// TestCloseEndsSubscriptions checks that closing a client closes its open
// subscriptions and ends a Wait without a deadline with ErrClosed.
func TestCloseEndsSubscriptions(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := rota.NewClient(st, rota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := c.Add(ctx, rota.AddParams{Type: "never"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.SubscribeTypes(ctx, "*")
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := c.Wait(ctx, res.Job.ID)
		waited <- err
	}()
	time.Sleep(50 * time.Millisecond) // let Wait subscribe
	c.Close()
	select {
	case err := <-waited:
		if !errors.Is(err, rota.ErrClosed) {
			t.Fatalf("Wait after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait still blocks after Close")
	}
	for deadline := time.After(5 * time.Second); ; {
		select {
		case _, ok := <-sub.C:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("a subscription stays open after Close")
		}
	}
}
