package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- unique windows (AddParams.UniqueFor) ----

func testUniqueFor(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("SameDataWithinTheWindow", func(t *testing.T) {
		s := open(t)
		first := add(t, s, store.AddParams{Type: "mail", UniqueFor: time.Hour, Data: raw(`{"to":"a"}`)})[0]
		if first.Outcome != store.Inserted {
			t.Fatalf("first add: %v, want inserted", first.Outcome)
		}
		again := add(t, s, store.AddParams{Type: "mail", UniqueFor: time.Hour, Data: raw(`{ "to" : "a" }`)})[0]
		if again.Job.ID != first.Job.ID || again.Outcome != store.Unchanged {
			t.Errorf("same data within the window: id %d %v, want %d unchanged", again.Job.ID, again.Outcome, first.Job.ID)
		}
		// Other data, another group or another type: each a job of its own.
		for _, p := range []store.AddParams{
			{Type: "mail", UniqueFor: time.Hour, Data: raw(`{"to":"b"}`)},
			{Type: "mail", Group: "acme", UniqueFor: time.Hour, Data: raw(`{"to":"a"}`)},
			{Type: "sms", UniqueFor: time.Hour, Data: raw(`{"to":"a"}`)},
		} {
			if r := add(t, s, p)[0]; r.Outcome != store.Inserted || r.Job.ID == first.Job.ID {
				t.Errorf("add of %s/%q %s: id %d %v, want a new job", p.Type, p.Group, p.Data, r.Job.ID, r.Outcome)
			}
		}
		// Two adds of one batch: the second finds the first.
		res := add(t, s, store.AddParams{Type: "batch", UniqueFor: time.Hour}, store.AddParams{Type: "batch", UniqueFor: time.Hour})
		if res[1].Job.ID != res[0].Job.ID || res[1].Outcome != store.Unchanged {
			t.Errorf("two adds in a batch: %d %v, %d %v", res[0].Job.ID, res[0].Outcome, res[1].Job.ID, res[1].Outcome)
		}
		// An add without a window is never deduplicated.
		if r := add(t, s, store.AddParams{Type: "mail", Data: raw(`{"to":"a"}`)})[0]; r.Job.ID == first.Job.ID {
			t.Errorf("an add without unique_for found job %d", r.Job.ID)
		}
	})

	t.Run("WindowExpires", func(t *testing.T) {
		s := open(t)
		const window = 300 * time.Millisecond
		first := add(t, s, store.AddParams{Type: "t", UniqueFor: window})[0]
		if r := add(t, s, store.AddParams{Type: "t", UniqueFor: window})[0]; r.Job.ID != first.Job.ID {
			t.Fatalf("within the window: job %d, want %d", r.Job.ID, first.Job.ID)
		}
		time.Sleep(window + 100*time.Millisecond)
		second := add(t, s, store.AddParams{Type: "t", UniqueFor: window})[0]
		if second.Job.ID == first.Job.ID || second.Outcome != store.Inserted {
			t.Fatalf("after the window: job %d %v, want a new job", second.Job.ID, second.Outcome)
		}
		// The new job opens a window of its own.
		if r := add(t, s, store.AddParams{Type: "t", UniqueFor: window})[0]; r.Job.ID != second.Job.ID {
			t.Errorf("within the second window: job %d, want %d", r.Job.ID, second.Job.ID)
		}
		// A longer window on a later add still finds the first job.
		if r := add(t, s, store.AddParams{Type: "t", UniqueFor: time.Hour})[0]; r.Job.ID != first.Job.ID {
			t.Errorf("a window of an hour: job %d, want the first, %d", r.Job.ID, first.Job.ID)
		}
	})

	t.Run("States", func(t *testing.T) {
		s := open(t)
		// By default any state but cancelled counts: a completed job throttles.
		done := ended(t, s, store.AddParams{Type: "done", Data: raw(`{"n":1}`)}, store.Completed)
		if r := add(t, s, store.AddParams{Type: "done", UniqueFor: time.Hour, Data: raw(`{"n":1}`)})[0]; r.Job.ID != done.ID || r.Outcome != store.Unchanged {
			t.Errorf("over a completed job: %d %v, want %d unchanged", r.Job.ID, r.Outcome, done.ID)
		}
		// An empty list of states is the default, as over HTTP, which drops it.
		if r := add(t, s, store.AddParams{Type: "done", UniqueFor: time.Hour, UniqueStates: []store.State{}, Data: raw(`{"n":1}`)})[0]; r.Job.ID != done.ID || r.Outcome != store.Unchanged {
			t.Errorf("empty states over a completed job: %d %v, want %d unchanged", r.Job.ID, r.Outcome, done.ID)
		}
		cancelled := ended(t, s, store.AddParams{Type: "gone"}, store.Cancelled)
		if r := add(t, s, store.AddParams{Type: "gone", UniqueFor: time.Hour})[0]; r.Job.ID == cancelled.ID || r.Outcome != store.Inserted {
			t.Errorf("over a cancelled job: %d %v, want a new job", r.Job.ID, r.Outcome)
		}
		// Narrowed to pending and running: the completed job no longer counts.
		active := []store.State{store.Pending, store.Running}
		r := add(t, s, store.AddParams{Type: "done", UniqueFor: time.Hour, UniqueStates: active, Data: raw(`{"n":1}`)})[0]
		if r.Job.ID == done.ID || r.Outcome != store.Inserted {
			t.Errorf("states pending, running over a completed job: %d %v, want a new job", r.Job.ID, r.Outcome)
		}
		run := start(t, s, store.AddParams{Type: "busy"})
		if r := add(t, s, store.AddParams{Type: "busy", UniqueFor: time.Hour, UniqueStates: active})[0]; r.Job.ID != run.ID {
			t.Errorf("states pending, running over a running job: %d, want %d", r.Job.ID, run.ID)
		}
	})

	t.Run("Key", func(t *testing.T) {
		s := open(t)
		first := add(t, s, store.AddParams{Type: "k", Key: "inv-1", UniqueFor: time.Hour, Data: raw(`{"v":1}`)})[0]
		// Within the window a keyed add is not a re-add: data and run time stay.
		r := add(t, s, store.AddParams{Type: "k", Key: "inv-1", UniqueFor: time.Hour, Data: raw(`{"v":2}`), RunAt: time.Now().Add(time.Hour)})[0]
		if r.Job.ID != first.Job.ID || r.Outcome != store.Unchanged {
			t.Errorf("keyed add within the window: %d %v, want %d unchanged", r.Job.ID, r.Outcome, first.Job.ID)
		}
		got := get(t, s, first.Job.ID)
		wantJSON(t, "data after a keyed add within the window", got.Data, `{"v":1}`)
		if !got.RunAt.Equal(first.Job.RunAt) {
			t.Errorf("run time moved from %v to %v", first.Job.RunAt, got.RunAt)
		}
		// Without a window, the key re-adds as ever.
		if r := add(t, s, store.AddParams{Type: "k", Key: "inv-1", Data: raw(`{"v":3}`)})[0]; r.Outcome != store.Updated {
			t.Errorf("keyed add without a window: %v, want updated", r.Outcome)
		}
		// The key in another group is another job.
		if r := add(t, s, store.AddParams{Type: "k", Key: "inv-1", Group: "other", UniqueFor: time.Hour})[0]; r.Job.ID == first.Job.ID {
			t.Errorf("another group's add found job %d", r.Job.ID)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		for name, p := range map[string]store.AddParams{
			"negative":     {Type: "x", UniqueFor: -time.Second},
			"under 1ms":    {Type: "x", UniqueFor: time.Microsecond},
			"over a year":  {Type: "x", UniqueFor: 400 * 24 * time.Hour},
			"states alone": {Type: "x", UniqueStates: []store.State{store.Pending}},
			"with unique":  {Type: "x", UniqueFor: time.Hour, Unique: true},
			"not a state":  {Type: "x", UniqueFor: time.Hour, UniqueStates: []store.State{99}},
		} {
			if _, err := s.Add(t.Context(), []store.AddParams{p}); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		if res, err := s.List(t.Context(), store.ListParams{Types: []string{"x"}}); err != nil || len(res.Jobs) != 0 {
			t.Errorf("refused adds left jobs: %v %v", res.Jobs, err)
		}
	})
}

// ---- debounce (AddParams.Debounce) ----

func testDebounce(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("LastAddWins", func(t *testing.T) {
		s := open(t)
		before := time.Now()
		first := add(t, s, store.AddParams{Type: "index", Key: "doc-1", Debounce: time.Hour, Data: raw(`{"v":1}`)})[0]
		after := time.Now()
		if first.Outcome != store.Inserted || first.Job.State != store.Pending {
			t.Fatalf("first add: %v %v, want an inserted pending job", first.Outcome, first.Job.State)
		}
		aboutNow(t, "first run time less the debounce", first.Job.RunAt.Add(-time.Hour), before, after)
		time.Sleep(20 * time.Millisecond)
		before = time.Now()
		again := add(t, s, store.AddParams{Type: "index", Key: "doc-1", Debounce: time.Hour, Data: raw(`{"v":2}`)})[0]
		after = time.Now()
		if again.Job.ID != first.Job.ID || again.Outcome != store.Updated {
			t.Fatalf("second add: %d %v, want %d updated", again.Job.ID, again.Outcome, first.Job.ID)
		}
		got := get(t, s, first.Job.ID)
		wantJSON(t, "data after the second add", got.Data, `{"v":2}`)
		if !got.RunAt.After(first.Job.RunAt) {
			t.Errorf("run time %v did not move past the first's %v", got.RunAt, first.Job.RunAt)
		}
		aboutNow(t, "second run time less the debounce", got.RunAt.Add(-time.Hour), before, after)
		// Another group's key is another job.
		if r := add(t, s, store.AddParams{Type: "index", Key: "doc-1", Group: "other", Debounce: time.Hour})[0]; r.Job.ID == first.Job.ID {
			t.Errorf("another group's debounced add found job %d", r.Job.ID)
		}
	})

	t.Run("RunsWhenTheAddsStop", func(t *testing.T) {
		s := open(t)
		const d = 200 * time.Millisecond
		j := add(t, s, store.AddParams{Type: "quiet", Key: "k", Debounce: d})[0].Job
		if got := accept(t, s, store.AcceptParams{Types: []string{"quiet"}, Limit: 1}); len(got.Jobs) != 0 {
			t.Fatalf("a debounced job ran before its debounce: %v", got.Jobs)
		}
		time.Sleep(d + 100*time.Millisecond)
		got := accept(t, s, store.AcceptParams{Types: []string{"quiet"}, Limit: 1})
		if len(got.Jobs) != 1 || got.Jobs[0].ID != j.ID {
			t.Fatalf("after the debounce: %v, want job %d", got.Jobs, j.ID)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		for name, p := range map[string]store.AddParams{
			"negative":    {Type: "x", Key: "k", Debounce: -time.Second},
			"no key":      {Type: "x", Debounce: time.Second},
			"with run_at": {Type: "x", Key: "k", Debounce: time.Second, RunAt: time.Now()},
			"with window": {Type: "x", Key: "k", Debounce: time.Second, UniqueFor: time.Second},
		} {
			if _, err := s.Add(t.Context(), []store.AddParams{p}); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
	})
}
