package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- retry-after: fixed leases ----

func testRetryAfter(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("FixedLease", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t", RetryAfter: time.Hour})
		if j.RetryAfter != time.Hour || j.MaxAttempts != store.DefaultRetryAfterRuns {
			t.Errorf("added: retry_after %v max_attempts %d, want 1h and %d", j.RetryAfter, j.MaxAttempts, store.DefaultRetryAfterRuns)
		}
		before := time.Now()
		run := accept(t, s, store.AcceptParams{Types: []string{"t"}, LeaseTimeout: time.Minute}).Jobs[0]
		after := time.Now()
		within(t, "lease_until of a retry-after job (its retry-after wins over the accept's lease)", run.LeaseUntil,
			before.Add(time.Hour-slack), after.Add(time.Hour+slack))
		// Heartbeats do not extend a fixed lease, but still update data.
		hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(run), Data: raw(`{"step":2}`)})
		if hb.Err != nil || !hb.LeaseUntil.Equal(run.LeaseUntil) {
			t.Errorf("heartbeat of a retry-after job: lease %v err %v, want the lease kept at %v", hb.LeaseUntil, hb.Err, run.LeaseUntil)
		}
		got := get(t, s, j.ID)
		wantJSON(t, "data after the heartbeat", got.Data, `{"step":2}`)
		if !got.LeaseUntil.Equal(run.LeaseUntil) {
			t.Errorf("stored lease %v after a heartbeat, want %v", got.LeaseUntil, run.LeaseUntil)
		}
		// When the retry-after elapses the job runs again.
		if n, _ := expire(t, s, time.Now().Add(2*time.Hour)); n != 1 {
			t.Fatalf("ExpireLeases took back %d jobs, want 1", n)
		}
		got = get(t, s, j.ID)
		wantState(t, got, store.Pending)
		if !strings.Contains(got.LastError, "retry-after 1h0m0s elapsed") {
			t.Errorf("last error %q, want it to say the retry-after elapsed", got.LastError)
		}
		err := finish(t, s, store.FinishParams{Lease: lease(run), As: store.Complete})
		wantErr(t, "finish after the retry-after elapsed", err, store.ErrWorkerConflict)
	})

	t.Run("RunsOut", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t", RetryAfter: time.Hour, MaxAttempts: 2})
		for i := 1; i <= 2; i++ {
			res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
			if len(res.Jobs) != 1 || res.Jobs[0].Attempt != i {
				t.Fatalf("run %d: accepted %v", i, res.Jobs)
			}
			expire(t, s, time.Now().Add(2*time.Hour))
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Failed)
		if !strings.Contains(got.LastError, "ran 2 times") {
			t.Errorf("last error %q, want it to say the job ran out of runs", got.LastError)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		_, err := s.Add(t.Context(), []store.AddParams{{Type: "t", RetryAfter: -time.Second}})
		wantErr(t, "a negative retry-after", err, store.ErrInvalid)
		_, err = s.Add(t.Context(), []store.AddParams{{Type: "t", RetryAfter: time.Nanosecond}})
		wantErr(t, "a retry-after under the minimum lease", err, store.ErrInvalid)
	})
}
