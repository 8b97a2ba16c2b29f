package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- watch ----

type recorder struct {
	mu      sync.Mutex
	changes []store.Event
	signal  chan struct{}
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{}, 1)} }

func (r *recorder) fn(cs []store.Event) {
	r.mu.Lock()
	r.changes = append(r.changes, cs...)
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

func (r *recorder) forJob(id int64) []store.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []store.Event
	for _, c := range r.changes {
		if c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

// waitFor waits until n changes of job id arrived and returns them.
func (r *recorder) waitFor(t *testing.T, id int64, n int) []store.Event {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		if cs := r.forJob(id); len(cs) >= n {
			return cs
		}
		select {
		case <-r.signal:
		case <-timeout:
			t.Fatalf("Watch: %d changes of job %d within 5s, want %d; got %+v", len(r.forJob(id)), id, n, r.forJob(id))
		}
	}
}

func describe(cs []store.Event) []string {
	var out []string
	for _, c := range cs {
		s := c.State.String()
		if c.Removed {
			s = "removed(" + s + ")"
		}
		out = append(out, s)
	}
	return out
}

func testWatch(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Lifecycle", func(t *testing.T) {
		s := open(t)
		rec := newRecorder()
		stop := s.Watch(rec.fn)
		defer stop()
		j := addOne(t, s, store.AddParams{Type: "t", Group: "g", RunAt: time.Now().Add(-time.Minute)})
		cs := rec.waitFor(t, j.ID, 1)
		if c := cs[0]; c.State != store.Pending || c.Type != "t" || c.Group != "g" || c.Removed {
			t.Errorf("change for add = %+v, want pending, type t, group g", c)
		} else {
			sameTime(t, "run_at of the add change", c.RunAt, j.RunAt)
		}
		r := start(t, s, store.AddParams{Type: "other"}) // unrelated changes interleave
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept took %d jobs, want 1", len(res.Jobs))
		}
		rec.waitFor(t, j.ID, 2)
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Complete})
		rec.waitFor(t, j.ID, 3)
		if errs, err := s.Remove(t.Context(), []int64{j.ID}); err != nil || errs[0] != nil {
			t.Fatalf("Remove = %v, %v", errs, err)
		}
		cs = rec.waitFor(t, j.ID, 4)
		want := []string{"pending", "running", "completed", "removed(completed)"}
		if got := describe(cs); !slices.Equal(got, want) {
			t.Errorf("changes of job %d = %v, want %v", j.ID, got, want)
		}
		if got := describe(rec.waitFor(t, r.ID, 2)); !slices.Equal(got[:2], []string{"pending", "running"}) {
			t.Errorf("changes of job %d = %v, want pending, running", r.ID, got)
		}
	})

	// A failed run's change says so, whether the job is retried or
	// fails for good: a retry is not a job queued anew.
	t.Run("FailedRuns", func(t *testing.T) {
		s := open(t)
		rec := newRecorder()
		stop := s.Watch(rec.fn)
		defer stop()
		j := addOne(t, s, store.AddParams{Type: "t", MaxAttempts: 2})
		for n := range 2 {
			// The retry is due after its back-off: accept it early.
			res := accept(t, s, store.AcceptParams{Types: []string{"t"}, DueBy: time.Now().Add(time.Hour)})
			if len(res.Jobs) != 1 {
				t.Fatalf("Accept took %d jobs, want 1", len(res.Jobs))
			}
			mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Fail, Error: fmt.Sprint("boom ", n)})
			rec.waitFor(t, j.ID, 3+2*n)
		}
		var got []string
		for _, c := range rec.forJob(j.ID) {
			got = append(got, fmt.Sprintf("%v/%v", c.State, c.Failed))
		}
		want := []string{"pending/false", "running/false", "pending/true", "running/false", "failed/true"}
		if !slices.Equal(got, want) {
			t.Errorf("changes of job %d (state/failed) = %v, want %v", j.ID, got, want)
		}
	})

	t.Run("CommitOrder", func(t *testing.T) {
		s := open(t)
		rec := newRecorder()
		stop := s.Watch(rec.fn)
		defer stop()
		res := add(t, s, store.AddParams{Type: "t"}, store.AddParams{Type: "t"})
		a, b := res[0].Job.ID, res[1].Job.ID
		mustCancel(t, s, a)
		rec.waitFor(t, a, 2)
		rec.mu.Lock()
		var got []string
		for _, c := range rec.changes {
			if c.ID == a || c.ID == b {
				got = append(got, fmt.Sprintf("%d:%v", c.ID, c.State))
			}
		}
		rec.mu.Unlock()
		want := []string{fmt.Sprintf("%d:pending", a), fmt.Sprintf("%d:pending", b), fmt.Sprintf("%d:cancelled", a)}
		if !slices.Equal(got, want) {
			t.Errorf("changes %v, want %v (commit order)", got, want)
		}
	})

	t.Run("Stop", func(t *testing.T) {
		s := open(t)
		stopped, still := newRecorder(), newRecorder()
		stop := s.Watch(stopped.fn)
		stop2 := s.Watch(still.fn)
		defer stop2()
		first := addOne(t, s, store.AddParams{Type: "t"})
		stopped.waitFor(t, first.ID, 1)
		stop()
		j := addOne(t, s, store.AddParams{Type: "t"})
		still.waitFor(t, j.ID, 1)         // the change was published...
		time.Sleep(20 * time.Millisecond) // ...give a late delivery a moment
		if cs := stopped.forJob(j.ID); len(cs) != 0 {
			t.Errorf("a stopped watcher received %v, want nothing after stop", cs)
		}
	})
}
