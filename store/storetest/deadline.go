package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- deadlines (AddParams.ExpiresAt) ----

// expiredAt is the last error of a job whose deadline d passed before it
// started.
func expiredAt(d time.Time) string {
	return "expired at " + d.UTC().Format(time.RFC3339Nano) + ", not started"
}

func wantExpired(t *testing.T, j store.Job, deadline time.Time) {
	t.Helper()
	wantState(t, j, store.Cancelled)
	if !j.Expired || j.LastError != expiredAt(deadline) || j.FinishedAt.IsZero() {
		t.Errorf("job %d: expired %v, last error %q, finished %v; want it expired, %q, finished",
			j.ID, j.Expired, j.LastError, j.FinishedAt, expiredAt(deadline))
	}
}

func testDeadline(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("NeverStarted", func(t *testing.T) {
		// A due job whose deadline passes is not started, even before the
		// sweep ends it; the other jobs of its group are.
		s := open(t)
		deadline := time.Now().Add(300 * time.Millisecond).Truncate(time.Microsecond)
		j := addOne(t, s, store.AddParams{Type: "t", Group: "g", Priority: 9, ExpiresAt: deadline})
		if !j.ExpiresAt.Equal(deadline) || j.Expired {
			t.Errorf("added: expires_at %v, expired %v; want %v, not expired", j.ExpiresAt, j.Expired, deadline)
		}
		if got := get(t, s, j.ID); !got.ExpiresAt.Equal(deadline) {
			t.Errorf("read back: expires_at %v, want %v", got.ExpiresAt, deadline)
		}
		other := addOne(t, s, store.AddParams{Type: "t", Group: "g"})
		time.Sleep(time.Until(deadline.Add(50 * time.Millisecond)))
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10})
		if len(res.Jobs) != 1 || res.Jobs[0].ID != other.ID {
			t.Fatalf("accept after the deadline: jobs %v, want only job %d (job %d expired)", ids(res.Jobs), other.ID, j.ID)
		}
		wantState(t, get(t, s, j.ID), store.Pending) // not swept yet, and not started
		if n, _ := expire(t, s, time.Now()); n != 1 {
			t.Fatalf("ExpireLeases changed %d jobs, want the 1 past its deadline", n)
		}
		got := get(t, s, j.ID)
		wantExpired(t, got, deadline)
		if got.Attempt != 0 || !got.StartedAt.IsZero() {
			t.Errorf("expired job: attempt %d, started %v; want never started", got.Attempt, got.StartedAt)
		}
		if n, _ := expire(t, s, time.Now()); n != 0 {
			t.Errorf("a second sweep changed %d jobs, want 0", n)
		}
		// Listed among the cancelled jobs.
		if l := listAll(t, s, store.ListParams{States: []store.State{store.Cancelled}}); len(l) != 1 || !l[0].Expired {
			t.Errorf("cancelled jobs: %v, want the expired one, marked expired", ids(l))
		}
	})

	t.Run("PastAtAdd", func(t *testing.T) {
		// A deadline that has passed when the job is added is accepted:
		// the job is never started, and the sweep ends it.
		s := open(t)
		deadline := time.Now().Add(-time.Second).Truncate(time.Microsecond)
		j := addOne(t, s, store.AddParams{Type: "t", ExpiresAt: deadline})
		if res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10}); len(res.Jobs) != 0 {
			t.Fatalf("accept: jobs %v, want none: the deadline passed before the add", ids(res.Jobs))
		}
		if n, _ := expire(t, s, time.Now()); n != 1 {
			t.Fatalf("ExpireLeases changed %d jobs, want 1", n)
		}
		wantExpired(t, get(t, s, j.ID), deadline)
	})

	t.Run("SweepSleepsUntilNext", func(t *testing.T) {
		// The sweep reports the next deadline, so that the monitor sleeps
		// until it rather than polling.
		s := open(t)
		deadline := time.Now().Add(time.Hour).Truncate(time.Microsecond)
		addOne(t, s, store.AddParams{Type: "t", RunAt: time.Now().Add(time.Minute), ExpiresAt: deadline})
		addOne(t, s, store.AddParams{Type: "t", ExpiresAt: deadline.Add(time.Hour)})
		n, next := expire(t, s, time.Now())
		if n != 0 || !next.Equal(deadline) {
			t.Errorf("ExpireLeases = %d, next %v; want 0 and the next deadline %v", n, next, deadline)
		}
	})

	t.Run("RunningNotStopped", func(t *testing.T) {
		// A deadline is about starting: a run under way finishes, and a
		// retry due after the deadline is not started.
		s := open(t)
		deadline := time.Now().Add(400 * time.Millisecond).Truncate(time.Microsecond)
		j := addOne(t, s, store.AddParams{Type: "t", ExpiresAt: deadline, MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
		run := accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs[0]
		time.Sleep(time.Until(deadline.Add(50 * time.Millisecond)))
		if n, _ := expire(t, s, time.Now()); n != 0 {
			t.Errorf("ExpireLeases changed %d jobs while the job runs, want 0", n)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Fail, Error: "boom"})
		time.Sleep(10 * time.Millisecond)
		if res := accept(t, s, store.AcceptParams{Types: []string{"t"}}); len(res.Jobs) != 0 {
			t.Fatalf("accept: jobs %v, want none: the retry is due after the deadline", ids(res.Jobs))
		}
		expire(t, s, time.Now())
		got := get(t, s, j.ID)
		wantExpired(t, got, deadline)
		if got.Attempt != 1 || len(got.Errors) != 1 || got.Errors[0].Error != "boom" {
			t.Errorf("expired after a failed attempt: attempt %d, errors %v; want the attempt and its error kept", got.Attempt, got.Errors)
		}
	})

	t.Run("RecurringSkipsSlot", func(t *testing.T) {
		// A recurring job whose deadline passes skips to its next slot,
		// whose deadline is as far after it.
		s := open(t)
		slot := time.Now().Add(-2 * time.Second).Truncate(time.Second)
		deadline := slot.Add(time.Second)
		j := addOne(t, s, store.AddParams{Type: "t", Schedule: "SCHEDULED, +1 HOUR", RunAt: slot, ExpiresAt: deadline})
		if res := accept(t, s, store.AcceptParams{Types: []string{"t"}}); len(res.Jobs) != 0 {
			t.Fatalf("accept: jobs %v, want none: the slot's deadline passed", ids(res.Jobs))
		}
		if n, _ := expire(t, s, time.Now()); n != 1 {
			t.Fatalf("ExpireLeases changed %d jobs, want 1", n)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		next := slot.Add(time.Hour)
		if !got.RunAt.Equal(next) || !got.Slot.Equal(next) || !got.ExpiresAt.Equal(deadline.Add(time.Hour)) {
			t.Errorf("after the deadline: run_at %v, slot %v, expires_at %v; want the next slot %v, its deadline %v",
				got.RunAt, got.Slot, got.ExpiresAt, next, deadline.Add(time.Hour))
		}
		if got.Expired || got.LastError != expiredAt(deadline) {
			t.Errorf("after the deadline: expired %v, last error %q; want pending, not expired, with %q", got.Expired, got.LastError, expiredAt(deadline))
		}
		// A run that completes moves the deadline with the slot too.
		slot2 := time.Now().Add(-time.Second).Truncate(time.Second)
		j2 := addOne(t, s, store.AddParams{Type: "u", Schedule: "SCHEDULED, +1 HOUR", RunAt: slot2, ExpiresAt: slot2.Add(time.Minute)})
		run := accept(t, s, store.AcceptParams{Types: []string{"u"}}).Jobs[0]
		mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Complete})
		got = get(t, s, j2.ID)
		if want := slot2.Add(time.Hour); !got.Slot.Equal(want) || !got.ExpiresAt.Equal(want.Add(time.Minute)) {
			t.Errorf("after a run: slot %v, expires_at %v; want %v, a minute after it", got.Slot, got.ExpiresAt, want)
		}
	})

	t.Run("ReaddRevives", func(t *testing.T) {
		// An expired keyed job added again runs again, with the new add's
		// deadline (none here), and is no longer marked expired.
		s := open(t)
		deadline := time.Now().Add(-time.Second).Truncate(time.Microsecond)
		j := addOne(t, s, store.AddParams{Type: "t", Key: "k", ExpiresAt: deadline})
		expire(t, s, time.Now())
		wantExpired(t, get(t, s, j.ID), deadline)
		r := add(t, s, store.AddParams{Type: "t", Key: "k"})[0]
		if r.Job.ID != j.ID || r.Job.State != store.Pending || r.Job.Expired || !r.Job.ExpiresAt.IsZero() {
			t.Errorf("re-add: job %d %s expired %v expires_at %v; want job %d pending again, without a deadline",
				r.Job.ID, r.Job.State, r.Job.Expired, r.Job.ExpiresAt, j.ID)
		}
		if res := accept(t, s, store.AcceptParams{Types: []string{"t"}}); len(res.Jobs) != 1 {
			t.Errorf("accept after the re-add: %d jobs, want 1", len(res.Jobs))
		}
	})

	t.Run("AddSettingsKept", func(t *testing.T) {
		// A job keeps the unique window and debounce of the add that
		// inserted it, to show, in both job tables.
		s := open(t)
		w := addOne(t, s, store.AddParams{Type: "t", UniqueFor: time.Hour, Data: raw(`{"a":1}`)})
		d := addOne(t, s, store.AddParams{Type: "t", Key: "k", Debounce: 90 * time.Second})
		if w.UniqueFor != time.Hour || d.Debounce != 90*time.Second {
			t.Errorf("added: unique_for %v, debounce %v; want 1h, 1m30s", w.UniqueFor, d.Debounce)
		}
		mustCancel(t, s, w.ID)
		if got := get(t, s, w.ID); got.UniqueFor != time.Hour || got.Debounce != 0 {
			t.Errorf("cancelled job read back: unique_for %v, debounce %v; want 1h, none", got.UniqueFor, got.Debounce)
		}
		if got := get(t, s, d.ID); got.Debounce != 90*time.Second || got.UniqueFor != 0 {
			t.Errorf("read back: debounce %v, unique_for %v; want 1m30s, none", got.Debounce, got.UniqueFor)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		at := time.Now().Add(time.Hour)
		_, err := s.Add(t.Context(), []store.AddParams{{Type: "t", RunAt: at, ExpiresAt: at}})
		wantErr(t, "a deadline at the run time", err, store.ErrInvalid)
		if err != nil && !strings.Contains(err.Error(), "expires_at") {
			t.Errorf("error %q, want it to name expires_at", err)
		}
		_, err = s.Add(t.Context(), []store.AddParams{{Type: "t", RunAt: at, ExpiresAt: at.Add(-time.Second)}})
		wantErr(t, "a deadline before the run time", err, store.ErrInvalid)
		if res, err := s.List(t.Context(), store.ListParams{}); err != nil || len(res.Jobs) != 0 {
			t.Errorf("after refused adds: %d jobs, %v; want none", len(res.Jobs), err)
		}
	})
}
