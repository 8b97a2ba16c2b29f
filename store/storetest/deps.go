package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- dependencies (AddParams.After) ----

func testDeps(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Diamond", func(t *testing.T) {
		s := open(t)
		// One atomic call: A; B and C after A (by key); D after B and C.
		res := add(t, s,
			store.AddParams{Type: "w", Key: "a", Data: raw(`{"n":"a"}`)},
			store.AddParams{Type: "w", Key: "b", AfterKeys: []string{"a"}},
			store.AddParams{Type: "w", Key: "c", AfterKeys: []string{"a"}},
			store.AddParams{Type: "w", Key: "d", AfterKeys: []string{"b", "c"}})
		a, b, c, d := res[0].Job, res[1].Job, res[2].Job, res[3].Job
		wantState(t, a, store.Pending)
		for _, j := range []store.Job{b, c, d} {
			wantState(t, j, store.Waiting)
			wantState(t, get(t, s, j.ID), store.Waiting)
			if !j.HasDeps || !get(t, s, j.ID).HasDeps {
				t.Errorf("job %d: HasDeps false, want true", j.ID)
			}
		}
		wantCount(t, s, "w", store.Waiting, 3)
		runA := onlyAccept(t, s, "w", a.ID)
		if len(runA.Deps) != 0 || runA.HasDeps {
			t.Errorf("job a accepted with deps %v, has_deps %v; want none", runA.Deps, runA.HasDeps)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(runA), As: store.Complete, Result: raw(`{"r":"a"}`)})
		wantState(t, get(t, s, b.ID), store.Pending)
		wantState(t, get(t, s, c.ID), store.Pending)
		wantState(t, get(t, s, d.ID), store.Waiting)
		got := accept(t, s, store.AcceptParams{Types: []string{"w"}, Limit: 10}).Jobs
		if !slices.Equal(ids(got), []int64{b.ID, c.ID}) {
			t.Fatalf("accept after a: %v, want b and c (%d, %d)", ids(got), b.ID, c.ID)
		}
		for _, j := range got {
			if len(j.Deps) != 1 || j.Deps[0].ID != a.ID || j.Deps[0].State != store.Completed || string(j.Deps[0].Result) != `{"r":"a"}` ||
				j.Deps[0].Key != "a" || j.Deps[0].Type != "w" {
				t.Errorf("job %d accepted with deps %+v, want a's outcome (completed, result {\"r\":\"a\"})", j.ID, j.Deps)
			}
		}
		// Both completions in one call: the batched path hands jobs with
		// dependants to the engine.
		errs, err := s.Finish(t.Context(), []store.FinishParams{
			{Lease: lease(got[0]), As: store.Complete, Result: raw(`{"r":"b"}`)},
			{Lease: lease(got[1]), As: store.Complete, Result: raw(`{"r":"c"}`)}})
		if err != nil || errs[0] != nil || errs[1] != nil {
			t.Fatalf("finish b and c: %v %v", err, errs)
		}
		runD := onlyAccept(t, s, "w", d.ID)
		if len(runD.Deps) != 2 || runD.Deps[0].ID != b.ID || runD.Deps[1].ID != c.ID ||
			string(runD.Deps[0].Result) != `{"r":"b"}` || string(runD.Deps[1].Result) != `{"r":"c"}` {
			t.Errorf("job d accepted with deps %+v, want b's and c's outcomes in the order named", runD.Deps)
		}
		if ds, ok := s.(store.DepsReader); ok {
			deps, after, err := ds.Deps(t.Context(), a.ID, 100)
			if err != nil || len(deps) != 0 || !slices.Equal(after, []int64{b.ID, c.ID}) {
				t.Errorf("Deps(a) = %v, %v, %v; want no deps and dependants b, c", deps, after, err)
			}
			deps, after, err = ds.Deps(t.Context(), d.ID, 100)
			if err != nil || len(deps) != 2 || len(after) != 0 {
				t.Errorf("Deps(d) = %v, %v, %v; want b and c, no dependants", deps, after, err)
			}
		} else {
			t.Errorf("%T is not a store.DepsReader", s)
		}
	})

	t.Run("FiveLevels", func(t *testing.T) {
		s := open(t)
		// Five levels of three jobs, each after every job of the level
		// above; run with a worker that takes whatever is due.
		var ps []store.AddParams
		level := map[string]int{}
		for l := range 5 {
			for k := range 3 {
				p := store.AddParams{Type: "w", Key: fmt.Sprintf("l%d-%d", l, k)}
				if l > 0 {
					for k2 := range 3 {
						p.AfterKeys = append(p.AfterKeys, fmt.Sprintf("l%d-%d", l-1, k2))
					}
				}
				level[p.Key] = l
				ps = append(ps, p)
			}
		}
		res := add(t, s, ps...)
		levelOf := map[int64]int{}
		for i, r := range res {
			levelOf[r.Job.ID] = level[ps[i].Key]
		}
		done := map[int64]bool{}
		for round := 0; len(done) < len(res); round++ {
			if round > 20 {
				t.Fatalf("the graph did not drain: %d of %d done", len(done), len(res))
			}
			got := accept(t, s, store.AcceptParams{Types: []string{"w"}, Limit: 100}).Jobs
			if len(got) != 3 {
				t.Fatalf("round %d: accepted %v, want the three jobs of one level", round, ids(got))
			}
			for _, j := range got {
				if levelOf[j.ID] != round {
					t.Errorf("round %d: job %d of level %d ran", round, j.ID, levelOf[j.ID])
				}
				for _, dep := range j.Deps {
					if !done[dep.ID] || dep.State != store.Completed {
						t.Errorf("job %d ran before its dependency %d ended (%+v)", j.ID, dep.ID, dep)
					}
				}
				if want := 3 * min(levelOf[j.ID], 1); len(j.Deps) != want {
					t.Errorf("job %d: %d deps, want %d", j.ID, len(j.Deps), want)
				}
			}
			for _, j := range got {
				mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
				done[j.ID] = true
			}
		}
	})

	t.Run("FailurePolicies", func(t *testing.T) {
		s := open(t)
		a := addOne(t, s, store.AddParams{Type: "w"})
		res := add(t, s,
			store.AddParams{Type: "w", Key: "cancel", After: []int64{a.ID}},
			store.AddParams{Type: "w", Key: "below", AfterKeys: []string{"cancel"}, OnDepFailure: store.DepRun},
			store.AddParams{Type: "w", Key: "run", After: []int64{a.ID}, OnDepFailure: store.DepRun})
		canc, below, run := res[0].Job, res[1].Job, res[2].Job
		if run.DepPolicy != store.DepRun || get(t, s, run.ID).DepPolicy != store.DepRun {
			t.Errorf("policy %v, want run", get(t, s, run.ID).DepPolicy)
		}
		j := onlyAccept(t, s, "w", a.ID)
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "boom", Permanent: true})
		got := get(t, s, canc.ID)
		wantState(t, got, store.Cancelled)
		if !strings.Contains(got.LastError, fmt.Sprintf("dependency %d failed", a.ID)) {
			t.Errorf("cancelled dependant's last error %q, want it to name the failed dependency", got.LastError)
		}
		// The cancel went down the graph: a run-policy dependant of a
		// cancelled job runs, seeing the cancel.
		wantState(t, get(t, s, below.ID), store.Pending)
		wantState(t, get(t, s, run.ID), store.Pending)
		got2 := accept(t, s, store.AcceptParams{Types: []string{"w"}, Limit: 10}).Jobs
		if !slices.Equal(ids(got2), []int64{below.ID, run.ID}) {
			t.Fatalf("accepted %v, want %d and %d", ids(got2), below.ID, run.ID)
		}
		if d := got2[1].Deps; len(d) != 1 || d[0].State != store.Failed || d[0].Error != "boom" {
			t.Errorf("run-policy job's deps %+v, want a failed with error boom", d)
		}
		if d := got2[0].Deps; len(d) != 1 || d[0].ID != canc.ID || d[0].State != store.Cancelled {
			t.Errorf("job below's deps %+v, want the cancelled one", d)
		}
	})

	t.Run("CascadeReachesASibling", func(t *testing.T) {
		s := open(t)
		// A fails; B (after A) is cancelled by its policy, and C runs
		// anyway after A and B: it learns of both ends in the one finish
		// of A, one of them through B's cancel, and is pending after it.
		a := addOne(t, s, store.AddParams{Type: "w"})
		res := add(t, s,
			store.AddParams{Type: "w", Key: "b", After: []int64{a.ID}},
			store.AddParams{Type: "w", Key: "c", After: []int64{a.ID}, AfterKeys: []string{"b"}, OnDepFailure: store.DepRun})
		b, c := res[0].Job, res[1].Job
		j := onlyAccept(t, s, "w", a.ID)
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "boom", Permanent: true})
		wantState(t, get(t, s, b.ID), store.Cancelled)
		wantState(t, get(t, s, c.ID), store.Pending)
		got := accept(t, s, store.AcceptParams{Types: []string{"w"}, Limit: 10}).Jobs
		if !slices.Equal(ids(got), []int64{c.ID}) {
			t.Fatalf("accepted %v, want %d", ids(got), c.ID)
		}
		if d := got[0].Deps; len(d) != 2 || d[0].State != store.Failed || d[1].State != store.Cancelled {
			t.Errorf("C's deps %+v, want A failed and B cancelled", d)
		}
	})

	t.Run("CancelCascades", func(t *testing.T) {
		s := open(t)
		res := add(t, s,
			store.AddParams{Type: "w", Key: "a"},
			store.AddParams{Type: "w", Key: "b", AfterKeys: []string{"a"}},
			store.AddParams{Type: "w", Key: "c", AfterKeys: []string{"b"}},
			store.AddParams{Type: "w", Key: "d", AfterKeys: []string{"c"}})
		mustCancel(t, s, res[0].Job.ID)
		for _, r := range res[1:] {
			wantState(t, get(t, s, r.Job.ID), store.Cancelled)
		}
		wantCount(t, s, "w", store.Waiting, 0)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"w"}, Limit: 10}).Jobs); n != 0 {
			t.Errorf("accepted %d jobs after the cancel, want none", n)
		}
		// Cancelling a waiting job ends it for its own dependants too.
		res = add(t, s,
			store.AddParams{Type: "w", Key: "x"},
			store.AddParams{Type: "w", Key: "y", AfterKeys: []string{"x"}},
			store.AddParams{Type: "w", Key: "z", AfterKeys: []string{"y"}, OnDepFailure: store.DepRun})
		mustCancel(t, s, res[1].Job.ID)
		wantState(t, get(t, s, res[2].Job.ID), store.Pending)
	})

	t.Run("RemoveCascades", func(t *testing.T) {
		s := open(t)
		res := add(t, s,
			store.AddParams{Type: "w", Key: "a"},
			store.AddParams{Type: "w", Key: "b", AfterKeys: []string{"a"}},
			store.AddParams{Type: "w", Key: "c", AfterKeys: []string{"b"}},
			store.AddParams{Type: "w", Key: "r", AfterKeys: []string{"a"}, OnDepFailure: store.DepRun})
		errs, err := s.Remove(t.Context(), []int64{res[0].Job.ID})
		if err != nil || errs[0] != nil {
			t.Fatalf("remove: %v %v", err, errs)
		}
		got := get(t, s, res[1].Job.ID)
		wantState(t, got, store.Cancelled)
		if !strings.Contains(got.LastError, "was removed") {
			t.Errorf("last error %q, want it to say the dependency was removed", got.LastError)
		}
		wantState(t, get(t, s, res[2].Job.ID), store.Cancelled)
		j := onlyAccept(t, s, "w", res[3].Job.ID)
		if len(j.Deps) != 1 || !j.Deps[0].Removed || j.Deps[0].ID != res[0].Job.ID {
			t.Errorf("deps %+v, want the removed dependency marked removed", j.Deps)
		}
	})

	t.Run("Unknown", func(t *testing.T) {
		s := open(t)
		a := addOne(t, s, store.AddParams{Type: "w"})
		_, err := s.Add(t.Context(), []store.AddParams{
			{Type: "w", Key: "first"},
			{Type: "w", After: []int64{a.ID, a.ID + 1000}}})
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprint(a.ID+1000)) {
			t.Errorf("add after an unknown job: %v, want ErrNotFound naming job %d", err, a.ID+1000)
		}
		_, err = s.Add(t.Context(), []store.AddParams{{Type: "w", Key: "first"}, {Type: "w", AfterKeys: []string{"later"}}, {Type: "w", Key: "later"}})
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `"later"`) {
			t.Errorf("add after a later key: %v, want ErrInvalid naming the key", err)
		}
		l, err := s.List(t.Context(), store.ListParams{})
		if err != nil || len(l.Jobs) != 1 {
			t.Errorf("after the refused adds: %d jobs (%v), want only the first", len(l.Jobs), err)
		}
	})

	t.Run("EndedAtAdd", func(t *testing.T) {
		s := open(t)
		done := ended(t, s, store.AddParams{Type: "e"}, store.Completed)
		failed := ended(t, s, store.AddParams{Type: "e"}, store.Failed)
		j := addOne(t, s, store.AddParams{Type: "w", After: []int64{done.ID}})
		wantState(t, j, store.Pending)
		j = addOne(t, s, store.AddParams{Type: "w", After: []int64{done.ID, failed.ID}})
		wantState(t, j, store.Cancelled)
		j = addOne(t, s, store.AddParams{Type: "w", After: []int64{done.ID, failed.ID}, OnDepFailure: store.DepRun})
		wantState(t, j, store.Pending)
	})

	t.Run("Retention", func(t *testing.T) {
		s := open(t)
		r, ok := s.(store.Retirer)
		if !ok {
			t.Skip("the store does not delete ended jobs itself")
		}
		retire := func() int {
			t.Helper()
			n, err := r.Retire(t.Context(), time.Now().Add(store.DefaultRetention+time.Hour), 100)
			if err != nil {
				t.Fatalf("Retire: %v", err)
			}
			return n
		}
		// a ended long ago (as retention sees it); b waits for a and c.
		a := ended(t, s, store.AddParams{Type: "r"}, store.Completed)
		c := addOne(t, s, store.AddParams{Type: "r2"})
		b := addOne(t, s, store.AddParams{Type: "w", After: []int64{a.ID, c.ID}})
		if n := retire(); n != 0 {
			t.Errorf("Retire deleted %d jobs while the job after them waits, want none", n)
		}
		get(t, s, a.ID)
		j := onlyAccept(t, s, "r2", c.ID)
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		run := onlyAccept(t, s, "w", b.ID)
		if len(run.Deps) != 2 || run.Deps[0].Removed || string(run.Deps[0].Result) != `{"r":1}` {
			t.Errorf("deps %+v, want a's outcome kept for the job after it", run.Deps)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Complete})
		if n := retire(); n != 3 {
			t.Errorf("Retire deleted %d jobs once the job after them ended, want all 3", n)
		}
		if ds, ok := s.(store.DepsReader); ok {
			if deps, after, err := ds.Deps(t.Context(), b.ID, 10); err != nil || len(deps) != 0 || len(after) != 0 {
				t.Errorf("Deps of a retired job: %v %v %v, want its edges gone", deps, after, err)
			}
		}
	})

	t.Run("ReaddedDependency", func(t *testing.T) {
		// A dependency re-added after it ended runs a new cycle; its end
		// was counted already, and its next one is not counted again.
		s := open(t)
		a := addOne(t, s, store.AddParams{Type: "a", Key: "a"})
		c := addOne(t, s, store.AddParams{Type: "c"})
		b := addOne(t, s, store.AddParams{Type: "w", After: []int64{a.ID, c.ID}})
		j := onlyAccept(t, s, "a", a.ID)
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		if r := add(t, s, store.AddParams{Type: "a", Key: "a"})[0]; r.Outcome != store.Requeued {
			t.Fatalf("re-add of the completed dependency: %v", r.Outcome)
		}
		j = onlyAccept(t, s, "a", a.ID)
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		wantState(t, get(t, s, b.ID), store.Waiting)
		j = onlyAccept(t, s, "c", c.ID)
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		wantState(t, get(t, s, b.ID), store.Pending)
	})

	t.Run("LeaseExpiry", func(t *testing.T) {
		s := open(t)
		a := addOne(t, s, store.AddParams{Type: "w", MaxAttempts: 1})
		b := addOne(t, s, store.AddParams{Type: "w", After: []int64{a.ID}})
		accept(t, s, store.AcceptParams{Types: []string{"w"}, LeaseTimeout: time.Millisecond})
		time.Sleep(20 * time.Millisecond)
		expire(t, s, time.Now().Add(time.Second))
		wantState(t, get(t, s, a.ID), store.Failed)
		wantState(t, get(t, s, b.ID), store.Cancelled)
	})
}

// onlyAccept accepts from typ and wants job id alone.
func onlyAccept(t *testing.T, s store.Store, typ string, id int64) store.Job {
	t.Helper()
	got := accept(t, s, store.AcceptParams{Types: []string{typ}, Limit: 10}).Jobs
	if len(got) != 1 || got[0].ID != id {
		t.Fatalf("Accept(%q) = %v, want job %d alone", typ, ids(got), id)
	}
	return got[0]
}

// wantCount wants n jobs of type typ in state.
func wantCount(t *testing.T, s store.Store, typ string, state store.State, n int64) {
	t.Helper()
	counts, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	for _, c := range counts {
		if c.Type == typ && c.State == state {
			got += c.Jobs
		}
	}
	if got != n {
		t.Errorf("Stats: %d %s jobs of type %q, want %d", got, state, typ, n)
	}
}
