package storetest

import (
	"testing"

	"github.com/rotajobs/rota/store"
)

// ---- parent and child jobs ----

func testFamily(t *testing.T, open func(t *testing.T) store.Store) {
	acceptOne := func(t *testing.T, s store.Store, typ string) store.Job {
		t.Helper()
		res := accept(t, s, store.AcceptParams{Types: []string{typ}})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept(%s) took %d jobs, want 1", typ, len(res.Jobs))
		}
		return res.Jobs[0]
	}
	none := func(t *testing.T, s store.Store, typ string) {
		t.Helper()
		if res := accept(t, s, store.AcceptParams{Types: []string{typ}, Limit: 10}); len(res.Jobs) != 0 {
			t.Errorf("Accept(%s) took %d jobs, want none", typ, len(res.Jobs))
		}
	}

	t.Run("Lifecycle", func(t *testing.T) {
		s := open(t)
		p := start(t, s, store.AddParams{Type: "parent", Data: raw(`{"batch":7}`)})
		c1 := addOne(t, s, store.AddParams{Type: "child", Parent: p.ID, Data: raw(`{"n":1}`)})
		c2 := addOne(t, s, store.AddParams{Type: "child", Parent: p.ID, Data: raw(`{"n":2}`)})
		if c1.State != store.Paused || c1.Parent != p.ID {
			t.Fatalf("a child of a running parent: %v parent %d, want paused, %d", c1.State, c1.Parent, p.ID)
		}
		none(t, s, "child") // children wait for their parent's run to end
		mustFinish(t, s, store.FinishParams{Lease: lease(p), As: store.Complete})
		wantState(t, get(t, s, p.ID), store.Paused)
		wantState(t, get(t, s, c1.ID), store.Pending)

		run := acceptOne(t, s, "child")
		wantJSON(t, "a child's parent data", run.ParentData, `{"batch":7}`)
		// A running child adds a sibling: pending at once.
		c3 := addOne(t, s, store.AddParams{Type: "child", Parent: p.ID, Data: raw(`{"n":3}`)})
		wantState(t, c3, store.Pending)
		mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Complete, Result: raw(`{"ok":1}`)})
		wantState(t, get(t, s, p.ID), store.Paused) // two children left
		run = acceptOne(t, s, "child")
		mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Fail, Error: "bad input", Permanent: true})
		wantState(t, get(t, s, p.ID), store.Paused)
		if err := mustCancelErr(s, t, c3.ID); err != nil {
			t.Fatal(err)
		}
		// The last child ended: the parent runs again and sees them all.
		wantState(t, get(t, s, p.ID), store.Pending)
		again := acceptOne(t, s, "parent")
		if len(again.Children) != 3 {
			t.Fatalf("the parent's second run sees %d children, want 3: %+v", len(again.Children), again.Children)
		}
		states := map[int64]store.State{}
		for _, c := range again.Children {
			states[c.ID] = c.State
		}
		if states[c1.ID] != store.Completed || states[c2.ID] != store.Failed || states[c3.ID] != store.Cancelled {
			t.Errorf("children as the parent sees them: %v", states)
		}
		for _, c := range again.Children {
			if c.ID == c1.ID {
				wantJSON(t, "a completed child's result", c.Result, `{"ok":1}`)
				wantJSON(t, "a child's data", c.Data, `{"n":1}`)
			}
			if c.ID == c2.ID && c.LastError != "bad input" {
				t.Errorf("the failed child's error %q", c.LastError)
			}
		}
		list, err := s.List(t.Context(), store.ListParams{Parent: p.ID})
		if err != nil || len(list.Jobs) != 3 {
			t.Errorf("List of the parent's children: %d jobs, %v", len(list.Jobs), err)
		}
		// The run that saw them completes: they are gone, as in Bedrock.
		mustFinish(t, s, store.FinishParams{Lease: lease(again), As: store.Complete})
		wantState(t, get(t, s, p.ID), store.Completed)
		for _, c := range []store.Job{c1, c2, c3} {
			gone(t, s, c.ID)
		}
	})

	t.Run("KeyedChild", func(t *testing.T) {
		s := open(t)
		p := start(t, s, store.AddParams{Type: "parent"})
		c := addOne(t, s, store.AddParams{Type: "child", Key: "k1", Parent: p.ID})
		if c.Parent != p.ID || c.State != store.Paused {
			t.Fatalf("a keyed child: parent %d state %v, want %d paused", c.Parent, c.State, p.ID)
		}
		if got := get(t, s, c.ID); got.Parent != p.ID {
			t.Errorf("stored keyed child has parent %d, want %d", got.Parent, p.ID)
		}
		// Re-added by key: the same job, still the parent's child.
		r := add(t, s, store.AddParams{Type: "child", Key: "k1", Parent: p.ID, Data: raw(`{"v":2}`)})[0]
		if r.Job.ID != c.ID || r.Job.Parent != p.ID {
			t.Errorf("re-add of a keyed child: id %d parent %d, want %d, %d", r.Job.ID, r.Job.Parent, c.ID, p.ID)
		}
	})

	t.Run("Refused", func(t *testing.T) {
		s := open(t)
		p := start(t, s, store.AddParams{Type: "parent"})
		c := addOne(t, s, store.AddParams{Type: "child", Parent: p.ID})
		for _, x := range []struct {
			what   string
			parent int64
			want   error
		}{
			{"a grandchild", c.ID, store.ErrInvalid},
			{"a child of a pending job", addOne(t, s, store.AddParams{Type: "other"}).ID, store.ErrInvalid},
			{"a child of a completed job", ended(t, s, store.AddParams{Type: "done"}, store.Completed).ID, store.ErrInvalid},
			{"a child of a missing job", 987654, store.ErrNotFound},
		} {
			_, err := s.Add(t.Context(), []store.AddParams{{Type: "child", Parent: x.parent}})
			wantErr(t, x.what, err, x.want)
		}
		list, _ := s.List(t.Context(), store.ListParams{Types: []string{"child"}})
		if len(list.Jobs) != 1 {
			t.Errorf("refused adds left %d children, want 1", len(list.Jobs))
		}
	})

	t.Run("ParentEnds", func(t *testing.T) {
		s := open(t)
		// Cancelled while waiting for its children: they are cancelled too.
		p := start(t, s, store.AddParams{Type: "parent"})
		c := addOne(t, s, store.AddParams{Type: "child", Parent: p.ID})
		mustFinish(t, s, store.FinishParams{Lease: lease(p), As: store.Complete})
		mustCancel(t, s, p.ID)
		wantState(t, get(t, s, c.ID), store.Cancelled)
		// Failing for good while its children wait for it.
		q := start(t, s, store.AddParams{Type: "parent2"})
		d := addOne(t, s, store.AddParams{Type: "child", Parent: q.ID})
		mustFinish(t, s, store.FinishParams{Lease: lease(q), As: store.Fail, Error: "boom", Permanent: true})
		wantState(t, get(t, s, d.ID), store.Cancelled)
		// Removed: its children go with it.
		r := start(t, s, store.AddParams{Type: "parent3"})
		e := addOne(t, s, store.AddParams{Type: "child", Parent: r.ID})
		if _, err := s.Remove(t.Context(), []int64{r.ID}); err != nil {
			t.Fatal(err)
		}
		gone(t, s, e.ID)
		// A retried parent keeps its children waiting until a run of it
		// completes.
		u := start(t, s, store.AddParams{Type: "parent4", MaxAttempts: 5})
		f := addOne(t, s, store.AddParams{Type: "child4", Parent: u.ID})
		mustFinish(t, s, store.FinishParams{Lease: lease(u), As: store.Release})
		wantState(t, get(t, s, f.ID), store.Paused)
		u = accept(t, s, store.AcceptParams{Types: []string{"parent4"}}).Jobs[0]
		mustFinish(t, s, store.FinishParams{Lease: lease(u), As: store.Complete})
		wantState(t, get(t, s, f.ID), store.Pending)
		// A removed child lets its waiting parent go on.
		if _, err := s.Remove(t.Context(), []int64{f.ID}); err != nil {
			t.Fatal(err)
		}
		wantState(t, get(t, s, u.ID), store.Pending)
	})
}

func mustCancelErr(s store.Store, t *testing.T, id int64) error {
	errs, err := s.Cancel(t.Context(), []int64{id})
	if err != nil {
		return err
	}
	return errs[0]
}
