package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- lease expiry ----

func testExpireLeases(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("BackToPending", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 3})
		if n, next := expire(t, s, time.Now()); n != 0 {
			t.Errorf("ExpireLeases(now) took back %d jobs whose lease has not ended, want 0", n)
		} else {
			sameTime(t, "earliest lease still running", next, j.LeaseUntil)
		}
		before := time.Now()
		n, next := expire(t, s, time.Now().Add(time.Hour))
		after := time.Now()
		if n != 1 || !next.IsZero() {
			t.Errorf("ExpireLeases(+1h) = %d, next %v; want 1 and no lease left", n, next)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 1)
		if !strings.Contains(strings.ToLower(got.LastError), "lease") {
			t.Errorf("last_error %q, want it to say the lease expired", got.LastError)
		}
		if len(got.Errors) != 1 || got.Errors[0].Attempt != 1 {
			t.Errorf("errors %+v, want one entry for attempt 1", got.Errors)
		}
		if got.Token == j.Token {
			t.Errorf("the expired lease's token is still on the job, want it cleared")
		}
		aboutNow(t, "run_at after lease expiry", got.RunAt, before, after)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after lease expiry took %d jobs, want the job, due now", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 2)
	})

	t.Run("OutOfAttempts", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 1})
		if n, _ := expire(t, s, time.Now().Add(time.Hour)); n != 1 {
			t.Errorf("ExpireLeases took back %d jobs, want 1", n)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Failed)
		if !strings.Contains(strings.ToLower(got.LastError), "lease") || got.FinishedAt.IsZero() {
			t.Errorf("last_error %q finished_at %v, want a lease error and a finish time", got.LastError, got.FinishedAt)
		}
		fenced(t, s, lease(j), store.ErrWorkerConflict)
	})

	t.Run("CountAndNext", func(t *testing.T) {
		s := open(t)
		ps := make([]store.AddParams, 3)
		for i := range ps {
			ps[i] = store.AddParams{Type: "short"}
		}
		add(t, s, ps...)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"short"}, Limit: 3}).Jobs); n != 3 {
			t.Fatalf("Accept took %d jobs, want 3", n)
		}
		addOne(t, s, store.AddParams{Type: "long"})
		long := accept(t, s, store.AcceptParams{Types: []string{"long"}, LeaseTimeout: 2 * time.Hour}).Jobs
		if len(long) != 1 {
			t.Fatalf("Accept took %d jobs, want 1", len(long))
		}
		pending := addOne(t, s, store.AddParams{Type: "idle"})

		n, next := expire(t, s, time.Now().Add(time.Hour))
		if n != 3 {
			t.Errorf("ExpireLeases(+1h) took back %d jobs, want the 3 with short leases", n)
		}
		sameTime(t, "the earliest lease still running", next, long[0].LeaseUntil)
		unchanged(t, "ExpireLeases, for a job whose lease runs on", long[0], get(t, s, long[0].ID))
		unchanged(t, "ExpireLeases, for a pending job", pending, get(t, s, pending.ID))
		n, next = expire(t, s, time.Now().Add(time.Hour))
		if n != 0 {
			t.Errorf("a second ExpireLeases(+1h) took back %d jobs, want 0", n)
		}
		sameTime(t, "the earliest lease still running", next, long[0].LeaseUntil)
	})

	t.Run("Resubmitted", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Key: "k", MaxAttempts: 1})
		add(t, s, store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":2}`)})
		if n, _ := expire(t, s, time.Now().Add(time.Hour)); n != 1 {
			t.Errorf("ExpireLeases took back %d jobs, want 1", n)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		wantJSON(t, "data", got.Data, `{"v":2}`)
		fenced(t, s, lease(j), store.ErrWorkerConflict)
	})
}
