package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- finish ----

func testFinish(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Complete", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		before := time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(`{"ok": true}`)})
		after := time.Now()
		got := get(t, s, j.ID)
		wantState(t, got, store.Completed)
		wantJSON(t, "result", got.Result, `{"ok":true}`)
		aboutNow(t, "finished_at", got.FinishedAt, before, after)
		wantAttempt(t, got, 1)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs after the only job completed", n)
		}

		// A result can be any JSON value, or none.
		for _, result := range []string{`[1,2]`, `"done"`, `42`, ``} {
			j := start(t, s, store.AddParams{Type: "t"})
			mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(result)})
			wantJSON(t, "result", get(t, s, j.ID).Result, result)
		}
	})

	t.Run("CompleteTwice", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(`{"n":1}`)})
		done := get(t, s, j.ID)
		if err := finish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(`{"n":2}`)}); err != nil {
			t.Errorf("the same Complete again with the same token: %v, want success (finish is idempotent)", err)
		}
		unchanged(t, "a repeated Complete", done, get(t, s, j.ID))
		err := finish(t, s, store.FinishParams{Lease: store.Lease{ID: j.ID, Token: "other"}, As: store.Complete})
		wantErr(t, "Complete of a completed job with another token", err, store.ErrWorkerConflict)
		err = finish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "late"})
		wantErr(t, "Fail of a completed job with its token", err, store.ErrWorkerConflict)
		unchanged(t, "finishes after completion", done, get(t, s, j.ID))
	})

	t.Run("FailRetryable", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 3, BackoffBase: time.Hour, BackoffMax: 2 * time.Hour})
		before := time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "boom 1"})
		after := time.Now()
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 1)
		// Back-off for attempt 1 is the base, 1h, ±10%.
		within(t, "run_at after the first failure", got.RunAt, before.Add(54*time.Minute-slack), after.Add(66*time.Minute+slack))
		if got.LastError != "boom 1" {
			t.Errorf("last_error %q, want %q", got.LastError, "boom 1")
		}
		if len(got.Errors) != 1 || got.Errors[0].Attempt != 1 || got.Errors[0].Error != "boom 1" {
			t.Errorf("errors %+v, want one entry for attempt 1 with %q", got.Errors, "boom 1")
		} else {
			aboutNow(t, "errors[0].at", got.Errors[0].At, before, after)
		}
		if !got.FinishedAt.IsZero() {
			t.Errorf("a job waiting for a retry has finished_at %v, want none", got.FinishedAt)
		}
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs during the back-off, want 0", n)
		}

		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, DueBy: time.Now().Add(2 * time.Hour)})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after the back-off took %d jobs, want 1", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 2)
		before = time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Fail, Error: "boom 2"})
		after = time.Now()
		got = get(t, s, j.ID)
		wantState(t, got, store.Pending)
		// Attempt 2: base·2 = 2h, which is also the cap, ±10%.
		within(t, "run_at after the second failure", got.RunAt, before.Add(108*time.Minute-slack), after.Add(132*time.Minute+slack))
		if len(got.Errors) != 2 || got.Errors[1].Attempt != 2 || got.LastError != "boom 2" {
			t.Errorf("errors %+v last_error %q, want two entries, the last for attempt 2 with %q", got.Errors, got.LastError, "boom 2")
		}

		res = accept(t, s, store.AcceptParams{Types: []string{"t"}, DueBy: time.Now().Add(3 * time.Hour)})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after the second back-off took %d jobs, want 1", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 3)
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Fail, Error: "boom 3"})
		got = get(t, s, j.ID)
		wantState(t, got, store.Failed)
		if len(got.Errors) != 3 || got.LastError != "boom 3" || got.FinishedAt.IsZero() {
			t.Errorf("after the last attempt failed: errors %+v last_error %q finished_at %v; want 3 errors, boom 3, a finish time",
				got.Errors, got.LastError, got.FinishedAt)
		}
	})

	t.Run("FailOnLastAttempt", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 1})
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "boom"})
		got := get(t, s, j.ID)
		wantState(t, got, store.Failed)
		if got.LastError != "boom" || len(got.Errors) != 1 || got.FinishedAt.IsZero() {
			t.Errorf("last_error %q errors %+v finished_at %v; want boom, one error, a finish time", got.LastError, got.Errors, got.FinishedAt)
		}
	})

	t.Run("FailPermanent", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 5})
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "bad input", Permanent: true})
		got := get(t, s, j.ID)
		wantState(t, got, store.Failed)
		wantAttempt(t, got, 1)
		if got.LastError != "bad input" || len(got.Errors) != 1 || got.FinishedAt.IsZero() {
			t.Errorf("last_error %q errors %+v finished_at %v; want bad input, one error, a finish time", got.LastError, got.Errors, got.FinishedAt)
		}
	})

	t.Run("Snooze", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		runAt := time.Now().Add(time.Hour)
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Snooze, RunAt: runAt})
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		sameTime(t, "run_at after snooze", got.RunAt, runAt)
		if got.LastError != "" || len(got.Errors) != 0 {
			t.Errorf("snooze recorded an error (%q, %v), want none", got.LastError, got.Errors)
		}
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs before the snooze ended, want 0", n)
		}
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, DueBy: runAt.Add(time.Minute)})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after the snooze took %d jobs, want 1", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 1)
	})

	t.Run("Release", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Release})
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after release took %d jobs, want the released job, due now", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 1)

		// A job accepted ahead of its run time is due at once after release.
		later := addOne(t, s, store.AddParams{Type: "u", RunAt: time.Now().Add(time.Hour)})
		res = accept(t, s, store.AcceptParams{Types: []string{"u"}, DueBy: time.Now().Add(2 * time.Hour)})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept due by +2h took %d jobs, want 1", len(res.Jobs))
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Release})
		res = accept(t, s, store.AcceptParams{Types: []string{"u"}})
		if got := ids(res.Jobs); !slices.Equal(got, []int64{later.ID}) {
			t.Errorf("Accept after releasing a job accepted early = %v, want job %d (a released job is due now)", got, later.ID)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		before := time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Cancel, Error: "not wanted"})
		after := time.Now()
		got := get(t, s, j.ID)
		wantState(t, got, store.Cancelled)
		aboutNow(t, "finished_at", got.FinishedAt, before, after)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs after the worker cancelled the only one", n)
		}
		fenced(t, s, lease(j), store.ErrCanceled)
	})

	t.Run("AfterResubmit", func(t *testing.T) {
		// Every ending except cancel starts the run that was asked for.
		for _, fp := range []store.FinishParams{
			{As: store.Complete, Result: raw(`{"r":1}`)},
			{As: store.Fail, Error: "retry"},
			{As: store.Fail, Error: "fatal", Permanent: true},
			{As: store.Snooze, RunAt: time.Now().Add(3 * time.Hour)},
			{As: store.Release},
		} {
			t.Run(fmt.Sprintf("%v/permanent=%v", fp.As, fp.Permanent), func(t *testing.T) {
				s := open(t)
				j := start(t, s, store.AddParams{Type: "t", Key: "k", MaxAttempts: 1, Data: raw(`{"v":1}`)})
				runAt := time.Now().Add(time.Hour)
				if r := add(t, s, store.AddParams{Type: "t", Key: "k", RunAt: runAt, Data: raw(`{"v":2}`)})[0]; r.Outcome != store.Resubmitted {
					t.Fatalf("re-add: outcome %v, want resubmitted", r.Outcome)
				}
				fp.Lease = lease(j)
				mustFinish(t, s, fp)
				got := get(t, s, j.ID)
				wantState(t, got, store.Pending)
				wantAttempt(t, got, 0)
				wantJSON(t, "data", got.Data, `{"v":2}`)
				sameTime(t, "run_at", got.RunAt, runAt)
				if got.Resubmit {
					t.Errorf("resubmit flag still set")
				}
			})
		}
		t.Run("cancel", func(t *testing.T) {
			s := open(t)
			j := start(t, s, store.AddParams{Type: "t", Key: "k"})
			add(t, s, store.AddParams{Type: "t", Key: "k"})
			mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Cancel, Error: "stop"})
			got := get(t, s, j.ID)
			wantState(t, got, store.Cancelled)
			if got.Resubmit {
				t.Errorf("a cancelled job still has the resubmit flag")
			}
		})
	})

	t.Run("PerItemErrors", func(t *testing.T) {
		s := open(t)
		a := start(t, s, store.AddParams{Type: "a"})
		b := start(t, s, store.AddParams{Type: "b"})
		beforeB := get(t, s, b.ID)
		errs, err := s.Finish(t.Context(), []store.FinishParams{
			{Lease: lease(a), As: store.Complete},
			{Lease: store.Lease{ID: b.ID, Token: a.Token}, As: store.Complete},
			{Lease: store.Lease{ID: b.ID + 1000, Token: "x"}, As: store.Complete},
		})
		if err != nil {
			t.Fatalf("Finish: the call failed: %v", err)
		}
		if len(errs) != 3 {
			t.Fatalf("Finish(3 items) returned %d errors", len(errs))
		}
		if errs[0] != nil {
			t.Errorf("Finish of the current lease: %v, want success", errs[0])
		}
		wantErr(t, "Finish with another job's token", errs[1], store.ErrWorkerConflict)
		wantErr(t, "Finish of a job that does not exist", errs[2], store.ErrCanceled)
		wantState(t, get(t, s, a.ID), store.Completed)
		unchanged(t, "Finish with another job's token", beforeB, get(t, s, b.ID))
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		before := get(t, s, j.ID)
		for _, c := range []struct {
			name string
			p    store.FinishParams
		}{
			{"no token", store.FinishParams{Lease: store.Lease{ID: j.ID}, As: store.Complete}},
			{"no id", store.FinishParams{Lease: store.Lease{Token: j.Token}, As: store.Complete}},
			{"no ending", store.FinishParams{Lease: lease(j)}},
			{"unknown ending", store.FinishParams{Lease: lease(j), As: 99}},
			{"invalid result JSON", store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(`{"a":`)}},
			{"snooze to year 10000", store.FinishParams{Lease: lease(j), As: store.Snooze, RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		} {
			// A valid item first: the bad one must stop the whole batch.
			_, err := s.Finish(t.Context(), []store.FinishParams{{Lease: lease(j), As: store.Complete}, c.p})
			wantErr(t, "Finish with "+c.name, err, store.ErrInvalid)
		}
		unchanged(t, "rejected finishes", before, get(t, s, j.ID))
	})
}

// ---- fencing ----

func testFencing(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("LeaseLost", func(t *testing.T) {
		s := open(t)
		first := start(t, s, store.AddParams{Type: "t"})
		if n, _ := expire(t, s, time.Now().Add(time.Hour)); n != 1 {
			t.Fatalf("ExpireLeases took back %d jobs, want 1", n)
		}
		// While the job waits to run again, the old lease is dead.
		fenced(t, s, lease(first), store.ErrWorkerConflict)

		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Worker: "worker-2"})
		if len(res.Jobs) != 1 || res.Jobs[0].ID != first.ID {
			t.Fatalf("second Accept = %v, want job %d again", ids(res.Jobs), first.ID)
		}
		second := res.Jobs[0]
		if second.Token == first.Token {
			t.Fatalf("the second worker got the first worker's token")
		}
		wantAttempt(t, second, 2)
		fenced(t, s, lease(first), store.ErrWorkerConflict)

		if hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(second)}); hb.Err != nil {
			t.Errorf("Heartbeat of the second worker: %v, want success", hb.Err)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(second), As: store.Complete})
		wantState(t, get(t, s, first.ID), store.Completed)
	})

	t.Run("CancelledByProducer", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		mustCancel(t, s, j.ID)
		fenced(t, s, lease(j), store.ErrCanceled)
	})

	t.Run("Removed", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		errs, err := s.Remove(t.Context(), []int64{j.ID})
		if err != nil || errs[0] != nil {
			t.Fatalf("Remove = %v, %v", errs, err)
		}
		fenced(t, s, lease(j), store.ErrCanceled)
		gone(t, s, j.ID)
	})

	t.Run("PendingJob", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		fenced(t, s, store.Lease{ID: j.ID, Token: "any-token"}, store.ErrWorkerConflict)

		// A released job is pending; its last token no longer works.
		r := start(t, s, store.AddParams{Type: "u"})
		mustFinish(t, s, store.FinishParams{Lease: lease(r), As: store.Release})
		fenced(t, s, lease(r), store.ErrWorkerConflict)
	})

	t.Run("EndedJob", func(t *testing.T) {
		s := open(t)
		j := ended(t, s, store.AddParams{Type: "t"}, store.Failed)
		fenced(t, s, store.Lease{ID: j.ID, Token: j.Token}, store.ErrWorkerConflict)
	})
}
