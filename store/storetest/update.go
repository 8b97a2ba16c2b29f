package storetest

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- update in place ----

func testUpdate(t *testing.T, open func(t *testing.T) store.Store) {
	update := func(t *testing.T, s store.Store, p store.UpdateParams) (store.Job, error) {
		t.Helper()
		jobs, errs, err := s.Update(t.Context(), []store.UpdateParams{p})
		if err != nil {
			t.Fatalf("Update(%+v): %v", p, err)
		}
		return jobs[0], errs[0]
	}
	s := open(t)
	prio := 9
	sched := "FINISHED, +1 HOUR"
	// Pending: everything changes but the state.
	j := addOne(t, s, store.AddParams{Type: "t", Data: raw(`{"a":1}`)})
	runAt := time.Now().Add(time.Hour)
	got, err := update(t, s, store.UpdateParams{ID: j.ID, Data: raw(`{"b":2}`), Priority: &prio, RunAt: runAt, Schedule: &sched})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, got, store.Pending)
	wantJSON(t, "data after update", got.Data, `{"b":2}`)
	sameTime(t, "run_at after update", got.RunAt, runAt)
	if got.Priority != 9 || got.Schedule != sched || got.Slot.IsZero() {
		t.Errorf("after update: priority %d schedule %q slot %v", got.Priority, got.Schedule, got.Slot)
	}
	if diff := jobDiff(got, get(t, s, j.ID)); len(diff) > 0 {
		t.Errorf("Update's answer differs from Get: %v", diff)
	}
	// Running: data changes under the worker, who keeps its lease.
	r := start(t, s, store.AddParams{Type: "r", Data: raw(`{"a":1}`)})
	got, err = update(t, s, store.UpdateParams{ID: r.ID, Data: raw(`{"c":3}`)})
	if err != nil || got.State != store.Running || got.Token != r.Token {
		t.Errorf("update of a running job: %v %v token kept %v", got.State, err, got.Token == r.Token)
	}
	wantJSON(t, "a running job's data after update", get(t, s, r.ID).Data, `{"c":3}`)
	mustFinish(t, s, store.FinishParams{Lease: lease(r), As: store.Complete})
	// A run time needs a pending or paused job.
	_, err = update(t, s, store.UpdateParams{ID: r.ID, RunAt: runAt})
	wantErr(t, "a new run time for a completed job", err, store.ErrFinished)
	// An ended job's data and priority can change.
	if got, err = update(t, s, store.UpdateParams{ID: r.ID, Priority: &prio}); err != nil || got.Priority != 9 || got.State != store.Completed {
		t.Errorf("update of a completed job: %v %d %v", err, got.Priority, got.State)
	}
	// Removing the schedule.
	none := ""
	if got, _ = update(t, s, store.UpdateParams{ID: j.ID, Schedule: &none}); got.Schedule != "" || !got.Slot.IsZero() {
		t.Errorf("after removing the schedule: %q %v", got.Schedule, got.Slot)
	}
	_, err = update(t, s, store.UpdateParams{ID: 987654, Priority: &prio})
	wantErr(t, "update of a missing job", err, store.ErrNotFound)
	bad := "SCHEDULED"
	_, _, err = s.Update(t.Context(), []store.UpdateParams{{ID: j.ID, Schedule: &bad}})
	wantErr(t, "update with a malformed schedule", err, store.ErrInvalid)
}
