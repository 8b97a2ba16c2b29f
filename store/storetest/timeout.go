package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- run timeouts ----

func testTimeout(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("EnforcedWhileHeartbeating", func(t *testing.T) {
		s := open(t)
		const d = 1500 * time.Millisecond
		j := addOne(t, s, store.AddParams{Type: "t", Timeout: d, MaxAttempts: 2, BackoffBase: time.Minute, BackoffMax: time.Minute})
		if j.Timeout != d {
			t.Errorf("added: timeout %v, want %v", j.Timeout, d)
		}
		if got := get(t, s, j.ID); got.Timeout != d {
			t.Errorf("read back: timeout %v, want %v", got.Timeout, d)
		}
		run := accept(t, s, store.AcceptParams{Types: []string{"t"}, LeaseTimeout: time.Minute}).Jobs[0]
		// The lease ends with the run's time, not the accept's minute.
		if want := run.StartedAt.Add(d); !run.LeaseUntil.Equal(want) {
			t.Errorf("lease_until %v, want the run's end %v (started %v + timeout)", run.LeaseUntil, want, run.StartedAt)
		}
		if got := get(t, s, j.ID); !got.LeaseUntil.Equal(run.StartedAt.Add(d)) {
			t.Errorf("stored lease_until %v, want %v", got.LeaseUntil, run.StartedAt.Add(d))
		}
		// A heartbeat within the run does not carry the lease past it.
		hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(run), Progress: ptr(0.5)})
		if hb.Err != nil || !hb.LeaseUntil.Equal(run.StartedAt.Add(d)) {
			t.Errorf("heartbeat within the timeout: lease %v err %v, want the lease kept at %v", hb.LeaseUntil, hb.Err, run.StartedAt.Add(d))
		}
		time.Sleep(time.Until(run.StartedAt.Add(d + 50*time.Millisecond)))
		// Past it, the worker's heartbeat is refused: it stops.
		hb = heartbeat(t, s, store.HeartbeatParams{Lease: lease(run)})
		wantErr(t, "heartbeat after the timeout", hb.Err, store.ErrWorkerConflict)
		if hb.Err != nil && !strings.Contains(hb.Err.Error(), "timed out after 1.5s") {
			t.Errorf("heartbeat after the timeout: error %q, want it to say the run timed out", hb.Err)
		}
		// The sweep takes the run back as a failed attempt, retried after the back-off.
		if n, _ := expire(t, s, time.Now()); n != 1 {
			t.Fatalf("ExpireLeases took back %d jobs, want 1", n)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		if got.LastError != "timed out after 1.5s" || len(got.Errors) != 1 || got.Attempt != 1 {
			t.Errorf("after the timeout: last error %q, errors %v, attempt %d; want one error \"timed out after 1.5s\" on attempt 1",
				got.LastError, got.Errors, got.Attempt)
		}
		if !got.RunAt.After(time.Now().Add(40 * time.Second)) {
			t.Errorf("retry due at %v, want after the job's back-off (a minute ± 10%%)", got.RunAt)
		}
		err := finish(t, s, store.FinishParams{Lease: lease(run), As: store.Complete})
		wantErr(t, "finish after the timeout", err, store.ErrWorkerConflict)

		// The last attempt's timeout fails the job.
		if _, _, err := s.Update(t.Context(), []store.UpdateParams{{ID: j.ID, RunAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
		run = accept(t, s, store.AcceptParams{Types: []string{"t"}, LeaseTimeout: time.Minute}).Jobs[0]
		if n, _ := expire(t, s, run.StartedAt.Add(d+time.Millisecond)); n != 1 {
			t.Fatalf("ExpireLeases took back %d jobs, want 1", n)
		}
		got = get(t, s, j.ID)
		wantState(t, got, store.Failed)
		if got.LastError != "timed out after 1.5s" {
			t.Errorf("last error %q, want \"timed out after 1.5s\"", got.LastError)
		}
	})

	t.Run("LongerThanLease", func(t *testing.T) {
		// A timeout longer than the lease leaves the lease as it was:
		// heartbeats extend it until the run's end.
		s := open(t)
		addOne(t, s, store.AddParams{Type: "t", Timeout: time.Hour})
		before := time.Now()
		run := accept(t, s, store.AcceptParams{Types: []string{"t"}, LeaseTimeout: time.Minute}).Jobs[0]
		within(t, "lease_until", run.LeaseUntil, before.Add(time.Minute-slack), time.Now().Add(time.Minute+slack))
		// A lease that ends before the run is an expired lease, not a timeout.
		expire(t, s, run.LeaseUntil.Add(time.Second))
		if got := get(t, s, run.ID); got.LastError == "" || strings.Contains(got.LastError, "timed out") {
			t.Errorf("last error %q, want a lease expiry", got.LastError)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		_, err := s.Add(t.Context(), []store.AddParams{{Type: "t", Timeout: -time.Second}})
		wantErr(t, "a negative timeout", err, store.ErrInvalid)
		_, err = s.Add(t.Context(), []store.AddParams{{Type: "t", Timeout: time.Nanosecond}})
		wantErr(t, "a timeout under the minimum lease", err, store.ErrInvalid)
	})
}
