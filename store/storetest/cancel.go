package storetest

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- cancel ----

func testCancel(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Pending", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		before := time.Now()
		mustCancel(t, s, j.ID)
		after := time.Now()
		got := get(t, s, j.ID)
		wantState(t, got, store.Cancelled)
		aboutNow(t, "finished_at", got.FinishedAt, before, after)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs after the only one was cancelled", n)
		}
	})

	t.Run("Running", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		mustCancel(t, s, j.ID)
		got := get(t, s, j.ID)
		wantState(t, got, store.Cancelled)
		if !got.CancelRequested {
			t.Errorf("cancel of a running job: cancel_requested not set")
		}
		hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j)})
		wantErr(t, "the worker's heartbeat after cancel", hb.Err, store.ErrCanceled)
		wantErr(t, "the worker's finish after cancel", finish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete}), store.ErrCanceled)
		unchanged(t, "the worker's calls after cancel", got, get(t, s, j.ID))
	})

	t.Run("AlreadyCancelled", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		mustCancel(t, s, j.ID)
		before := get(t, s, j.ID)
		mustCancel(t, s, j.ID)
		unchanged(t, "a second cancel", before, get(t, s, j.ID))
	})

	for _, state := range []store.State{store.Completed, store.Failed} {
		t.Run(state.String(), func(t *testing.T) {
			s := open(t)
			j := ended(t, s, store.AddParams{Type: "t"}, state)
			errs, err := s.Cancel(t.Context(), []int64{j.ID})
			if err != nil {
				t.Fatalf("Cancel: the call failed: %v", err)
			}
			wantErr(t, "Cancel of a "+state.String()+" job", errs[0], store.ErrFinished)
			unchanged(t, "a refused cancel", j, get(t, s, j.ID))
		})
	}

	t.Run("Missing", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		errs, err := s.Cancel(t.Context(), []int64{j.ID + 1000, j.ID})
		if err != nil {
			t.Fatalf("Cancel: the call failed: %v", err)
		}
		if len(errs) != 2 {
			t.Fatalf("Cancel(2 ids) returned %d errors", len(errs))
		}
		wantErr(t, "Cancel of a missing job", errs[0], store.ErrNotFound)
		if errs[1] != nil {
			t.Errorf("Cancel of an existing job in the same batch: %v, want success", errs[1])
		}
		wantState(t, get(t, s, j.ID), store.Cancelled)
	})
}

// ---- remove ----

func testRemove(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("AnyState", func(t *testing.T) {
		s := open(t)
		del := []int64{
			addOne(t, s, store.AddParams{Type: "p", Key: "k"}).ID,
			start(t, s, store.AddParams{Type: "r"}).ID,
			ended(t, s, store.AddParams{Type: "c"}, store.Completed).ID,
			ended(t, s, store.AddParams{Type: "f"}, store.Failed).ID,
			ended(t, s, store.AddParams{Type: "x"}, store.Cancelled).ID,
		}
		errs, err := s.Remove(t.Context(), del)
		if err != nil {
			t.Fatalf("Remove: the call failed: %v", err)
		}
		for i, e := range errs {
			if e != nil {
				t.Errorf("Remove of job %d: %v, want success", del[i], e)
			}
		}
		for _, id := range del {
			gone(t, s, id)
		}
		if jobs := listAll(t, s, store.ListParams{}); len(jobs) != 0 {
			t.Errorf("List after removing every job = %v, want none", ids(jobs))
		}
		_, err = s.GetByKey(t.Context(), "p", "", "k")
		wantErr(t, "GetByKey of a removed job", err, store.ErrNotFound)
		r := add(t, s, store.AddParams{Type: "p", Key: "k"})[0]
		if r.Outcome != store.Inserted || r.Job.ID == del[0] {
			t.Errorf("add with a removed job's key: outcome %v id %d, want a new job", r.Outcome, r.Job.ID)
		}
	})

	t.Run("Missing", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		errs, err := s.Remove(t.Context(), []int64{j.ID + 1000, j.ID})
		if err != nil {
			t.Fatalf("Remove: the call failed: %v", err)
		}
		wantErr(t, "Remove of a missing job", errs[0], store.ErrNotFound)
		if errs[1] != nil {
			t.Errorf("Remove of an existing job in the same batch: %v, want success", errs[1])
		}
		errs, err = s.Remove(t.Context(), []int64{j.ID})
		if err != nil {
			t.Fatalf("Remove: the call failed: %v", err)
		}
		wantErr(t, "Remove of a job removed before", errs[0], store.ErrNotFound)
	})
}
