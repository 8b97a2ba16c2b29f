package storetest

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- items of one batch run one after the other ----

// testBatches checks that a batch naming a job twice, or a parent and its
// child, is answered as if its items were sent apart, in order: each item
// sees what the items before it did to its job, and its answer is the job
// as it left it.
func testBatches(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("UpdateTwice", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		one, two := 1, 2
		jobs, errs, err := s.Update(t.Context(), []store.UpdateParams{{ID: j.ID, Priority: &one}, {ID: j.ID, Priority: &two}})
		if err != nil || errs[0] != nil || errs[1] != nil {
			t.Fatalf("Update: %v %v", err, errs)
		}
		if jobs[0].Priority != 1 || jobs[1].Priority != 2 {
			t.Errorf("priorities answered %d, %d; want 1, 2 (each item's job as it left it)", jobs[0].Priority, jobs[1].Priority)
		}
		if got := get(t, s, j.ID).Priority; got != 2 {
			t.Errorf("priority after the batch %d, want 2", got)
		}
	})

	t.Run("UpdateSlotThenPriority", func(t *testing.T) {
		// A recurring job given a run time takes it as its slot; a second
		// item of the batch that sets only the priority keeps that slot.
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t", Schedule: "FINISHED, +1 HOUR", RunAt: time.Now().Add(time.Hour)})
		runAt := time.Now().Add(3 * time.Hour).Truncate(time.Second)
		prio := 5
		jobs, errs, err := s.Update(t.Context(), []store.UpdateParams{{ID: j.ID, RunAt: runAt}, {ID: j.ID, Priority: &prio}})
		if err != nil || errs[0] != nil || errs[1] != nil {
			t.Fatalf("Update: %v %v", err, errs)
		}
		sameTime(t, "slot answered by the second item", jobs[1].Slot, runAt)
		got := get(t, s, j.ID)
		sameTime(t, "slot after the batch", got.Slot, runAt)
		sameTime(t, "run time after the batch", got.RunAt, runAt)
	})

	t.Run("RemoveParentAndChild", func(t *testing.T) {
		// Removing the parent removes its child: the batch's next item
		// finds the child gone, as a remove sent after it would.
		s := open(t)
		p := start(t, s, store.AddParams{Type: "parent"})
		c := addOne(t, s, store.AddParams{Type: "child", Parent: p.ID})
		errs, err := s.Remove(t.Context(), []int64{p.ID, c.ID})
		if err != nil {
			t.Fatalf("Remove(parent, child): %v", err)
		}
		if errs[0] != nil {
			t.Errorf("remove of the parent: %v", errs[0])
		}
		wantErr(t, "remove of a child its parent's removal took", errs[1], store.ErrNotFound)
		gone(t, s, p.ID)
		gone(t, s, c.ID)
	})

	t.Run("CancelParentAndChild", func(t *testing.T) {
		// Cancelling the parent cancels its child: the batch's next item
		// finds it cancelled, which a cancel leaves as it is.
		s := open(t)
		p := start(t, s, store.AddParams{Type: "parent"})
		c := addOne(t, s, store.AddParams{Type: "child", Parent: p.ID})
		errs, err := s.Cancel(t.Context(), []int64{p.ID, c.ID})
		if err != nil || errs[0] != nil || errs[1] != nil {
			t.Fatalf("Cancel(parent, child): %v %v", err, errs)
		}
		wantState(t, get(t, s, p.ID), store.Cancelled)
		wantState(t, get(t, s, c.ID), store.Cancelled)
	})

	t.Run("ResubmitParentAndChild", func(t *testing.T) {
		// A completed parent revived with a cancelled child in the same
		// batch: each revives, as if sent apart.
		s := open(t)
		p := start(t, s, store.AddParams{Type: "parent"})
		c := addOne(t, s, store.AddParams{Type: "child", Parent: p.ID})
		mustCancel(t, s, p.ID)
		wantState(t, get(t, s, c.ID), store.Cancelled)
		res, errs, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: p.ID}, {ID: c.ID}, {ID: c.ID}})
		if err != nil || errs[0] != nil || errs[1] != nil || errs[2] != nil {
			t.Fatalf("Resubmit: %v %v", err, errs)
		}
		if res[1].Outcome != store.Requeued || res[2].Outcome != store.Updated {
			t.Errorf("the child's outcomes %v, %v; want requeued, then updated", res[1].Outcome, res[2].Outcome)
		}
		wantState(t, get(t, s, p.ID), store.Pending)
		wantState(t, get(t, s, c.ID), store.Pending)
	})
}
