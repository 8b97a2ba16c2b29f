package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- recurring jobs ----

func testRecurring(t *testing.T, open func(t *testing.T) store.Store) {
	// slot is a whole second a little in the past, so that a job on it is
	// due and its next slots are exact.
	slot := func(ago time.Duration) time.Time { return time.Now().Add(-ago).UTC().Truncate(time.Second) }
	hourly := "SCHEDULED, +1 HOUR"
	types := []string{"t"}

	t.Run("CompleteMovesToNextSlot", func(t *testing.T) {
		s := open(t)
		t0 := slot(time.Minute)
		j := addOne(t, s, store.AddParams{Type: "t", Schedule: "scheduled, +1 hour", RunAt: t0, Data: raw(`{"n":0}`)})
		if j.Schedule != hourly || !j.Slot.Equal(t0) {
			t.Errorf("added job: schedule %q slot %v, want %q (upper-cased, as stored) and %v", j.Schedule, j.Slot, hourly, t0)
		}
		res := accept(t, s, store.AcceptParams{Types: types})
		if len(res.Jobs) != 1 || res.Jobs[0].Schedule != hourly || !res.Jobs[0].Slot.Equal(t0) {
			t.Fatalf("Accept: %+v, want the job with its schedule and slot", res.Jobs)
		}
		run := res.Jobs[0]
		heartbeat(t, s, store.HeartbeatParams{Lease: lease(run), Data: raw(`{"n":1}`)})
		mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Complete, Result: raw(`{"ok":true}`)})
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		sameTime(t, "run_at after the run", got.RunAt, t0.Add(time.Hour))
		sameTime(t, "slot after the run", got.Slot, t0.Add(time.Hour))
		if got.Attempt != 0 || got.Schedule != hourly {
			t.Errorf("after the run: attempt %d schedule %q, want 0 and %q", got.Attempt, got.Schedule, hourly)
		}
		wantJSON(t, "data carried to the next run", got.Data, `{"n":1}`)
		wantJSON(t, "result of the last run", got.Result, `{"ok":true}`)

		// Once per slot: the same finish again moves nothing.
		err := finish(t, s, store.FinishParams{Lease: lease(run), As: store.Complete})
		wantErr(t, "a second finish of the same run", err, store.ErrWorkerConflict)
		sameTime(t, "run_at after a repeated finish", get(t, s, j.ID).RunAt, t0.Add(time.Hour))
		if n := len(accept(t, s, store.AcceptParams{Types: types}).Jobs); n != 0 {
			t.Errorf("Accept before the next slot took %d jobs", n)
		}
	})

	t.Run("FailureByPolicy", func(t *testing.T) {
		s := open(t)
		t0 := slot(time.Minute)
		// Out of attempts: the slot failed, the job goes on.
		j := addOne(t, s, store.AddParams{Type: "t", Schedule: hourly, RunAt: t0, MaxAttempts: 1})
		run := accept(t, s, store.AcceptParams{Types: types}).Jobs[0]
		mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Fail, Error: "disk full"})
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		sameTime(t, "run_at after a failed slot", got.RunAt, t0.Add(time.Hour))
		if got.LastError != "disk full" || got.Attempt != 0 {
			t.Errorf("after a failed slot: last error %q attempt %d, want \"disk full\" and 0", got.LastError, got.Attempt)
		}
		// A permanent failure ends the job.
		p := addOne(t, s, store.AddParams{Type: "p", Schedule: hourly, RunAt: t0})
		run = accept(t, s, store.AcceptParams{Types: []string{"p"}}).Jobs[0]
		mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Fail, Error: "bad config", Permanent: true})
		wantState(t, get(t, s, p.ID), store.Failed)
		// With attempts left, a failure is retried within the slot, which
		// stays the same.
		r := addOne(t, s, store.AddParams{Type: "r", Schedule: hourly, RunAt: t0, MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
		run = accept(t, s, store.AcceptParams{Types: []string{"r"}}).Jobs[0]
		mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Fail, Error: "flaky"})
		got = get(t, s, r.ID)
		sameTime(t, "slot during retries", got.Slot, t0)
		if got.Attempt != 1 || got.RunAt.After(time.Now().Add(slack)) {
			t.Errorf("after a retried failure: attempt %d run_at %v, want 1 and about now", got.Attempt, got.RunAt)
		}
		deadline := time.Now().Add(slack)
		var again []store.Job
		for len(again) == 0 && time.Now().Before(deadline) {
			again = accept(t, s, store.AcceptParams{Types: []string{"r"}}).Jobs
		}
		if len(again) != 1 {
			t.Fatal("the retry was not accepted")
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(again[0]), As: store.Complete})
		sameTime(t, "run_at after the retry completed", get(t, s, r.ID).RunAt, t0.Add(time.Hour))
	})

	t.Run("MissedOnce", func(t *testing.T) {
		s := open(t)
		t0 := slot(3*time.Hour + 30*time.Minute)
		j := addOne(t, s, store.AddParams{Type: "t", Schedule: hourly, RunAt: t0})
		run := accept(t, s, store.AcceptParams{Types: types}).Jobs
		if len(run) != 1 {
			t.Fatal("a job that missed slots under MissedOnce did not run")
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(run[0]), As: store.Complete})
		sameTime(t, "run_at after the catch-up run", get(t, s, j.ID).RunAt, t0.Add(4*time.Hour))
		// Not re-anchored by the repeat itself (a long interval): still once.
		k := addOne(t, s, store.AddParams{Type: "k", Schedule: "SCHEDULED, +5 HOURS", RunAt: slot(11 * time.Hour)})
		run = accept(t, s, store.AcceptParams{Types: []string{"k"}}).Jobs
		mustFinish(t, s, store.FinishParams{Lease: lease(run[0]), As: store.Complete})
		sameTime(t, "run_at after a long catch-up run", get(t, s, k.ID).RunAt, k.RunAt.Add(15*time.Hour))
	})

	t.Run("MissedAll", func(t *testing.T) {
		s := open(t)
		t0 := slot(11 * time.Hour)
		j := addOne(t, s, store.AddParams{Type: "t", Schedule: "SCHEDULED, +5 HOURS", RunAt: t0, Missed: store.MissedAll})
		if j.Missed != store.MissedAll {
			t.Errorf("added job: missed %v, want all", j.Missed)
		}
		for i := 1; i <= 2; i++ { // two missed slots run in turn, as Bedrock does
			run := accept(t, s, store.AcceptParams{Types: types}).Jobs
			if len(run) != 1 {
				t.Fatalf("catch-up run %d was not due", i)
			}
			mustFinish(t, s, store.FinishParams{Lease: lease(run[0]), As: store.Complete})
			sameTime(t, "run_at after a catch-up run", get(t, s, j.ID).RunAt, t0.Add(time.Duration(5*i)*time.Hour))
		}
	})

	t.Run("MissedSkip", func(t *testing.T) {
		s := open(t)
		t0 := slot(3*time.Hour + 30*time.Minute)
		j := addOne(t, s, store.AddParams{Type: "t", Schedule: hourly, RunAt: t0, Missed: store.MissedSkip})
		if n := len(accept(t, s, store.AcceptParams{Types: types}).Jobs); n != 0 {
			t.Errorf("Accept of a job that missed its slots under MissedSkip took %d jobs, want 0", n)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		sameTime(t, "run_at after skipping missed slots", got.RunAt, t0.Add(4*time.Hour))
		if got.Attempt != 0 {
			t.Errorf("skipping counted an attempt: %d", got.Attempt)
		}
		// A job late within its own slot still runs.
		k := addOne(t, s, store.AddParams{Type: "k", Schedule: hourly, RunAt: slot(30 * time.Minute), Missed: store.MissedSkip})
		if run := accept(t, s, store.AcceptParams{Types: []string{"k"}}).Jobs; len(run) != 1 || run[0].ID != k.ID {
			t.Errorf("a job half a slot late under MissedSkip did not run: %v", run)
		}
	})

	t.Run("Cron", func(t *testing.T) {
		s := open(t)
		before := time.Now()
		j := addOne(t, s, store.AddParams{Type: "t", Schedule: "*/5 * * * *"})
		want := before.UTC().Truncate(5 * time.Minute).Add(5 * time.Minute)
		if !j.RunAt.Equal(want) && !j.RunAt.Equal(want.Add(5*time.Minute)) {
			t.Errorf("a cron job without run_at runs first at %v, want the next match %v", j.RunAt, want)
		}
		// A repeat without run_at runs at once, as Bedrock's does.
		r := addOne(t, s, store.AddParams{Type: "r", Schedule: "FINISHED, +1 DAY"})
		aboutNow(t, "first run of a repeat", r.RunAt, before, time.Now())
		run := accept(t, s, store.AcceptParams{Types: []string{"r"}}).Jobs
		if len(run) != 1 {
			t.Fatal("a new repeat job was not due")
		}
		before = time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(run[0]), As: store.Complete})
		aboutNow(t, "next run of FINISHED, +1 DAY, less a day", get(t, s, r.ID).RunAt.Add(-24*time.Hour), before.Add(-time.Second), time.Now())
	})

	t.Run("Readd", func(t *testing.T) {
		s := open(t)
		t0 := slot(-time.Hour) // an hour ahead
		j := addOne(t, s, store.AddParams{Type: "t", Key: "nightly", Schedule: hourly, RunAt: t0, Data: raw(`{"v":1}`)})
		// Re-adding with the same schedule keeps the slot, as a producer
		// that declares its recurring jobs at every start expects.
		r := add(t, s, store.AddParams{Type: "t", Key: "nightly", Schedule: hourly, Data: raw(`{"v":2}`)})[0]
		if r.Outcome != store.Updated || r.Job.ID != j.ID {
			t.Fatalf("re-add: outcome %v id %d, want updated %d", r.Outcome, r.Job.ID, j.ID)
		}
		got := get(t, s, j.ID)
		sameTime(t, "run_at after a re-add with the same schedule", got.RunAt, t0)
		wantJSON(t, "data after re-add", got.Data, `{"v":2}`)
		// A new schedule computes a new first run.
		add(t, s, store.AddParams{Type: "t", Key: "nightly", Schedule: "@daily", Missed: store.MissedSkip})
		got = get(t, s, j.ID)
		want := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		if got.Schedule != "@daily" || got.Missed != store.MissedSkip || !got.RunAt.Equal(want) || !got.Slot.Equal(want) {
			t.Errorf("after re-add with a new schedule: %q %v run_at %v slot %v, want @daily skip %v", got.Schedule, got.Missed, got.RunAt, got.Slot, want)
		}
		// No schedule makes it a one-off job.
		add(t, s, store.AddParams{Type: "t", Key: "nightly", RunAt: t0})
		if got = get(t, s, j.ID); got.Schedule != "" || !got.Slot.IsZero() {
			t.Errorf("after re-add without a schedule: schedule %q slot %v, want none", got.Schedule, got.Slot)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Schedule: hourly})
		mustCancel(t, s, j.ID)
		err := finish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		wantErr(t, "finish of a cancelled recurring job", err, store.ErrCanceled)
		wantState(t, get(t, s, j.ID), store.Cancelled)
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		for _, c := range []struct {
			p     store.AddParams
			names string
		}{
			{store.AddParams{Type: "t", Schedule: "FINISHED, +1 WEEK"}, `"+1 WEEK"`},
			{store.AddParams{Type: "t", Schedule: "SCHEDULED"}, "modifier"},
			{store.AddParams{Type: "t", Schedule: "61 * * * *"}, "cron"},
			{store.AddParams{Type: "t", Schedule: "@daily", Missed: 9}, "missed"},
		} {
			_, err := s.Add(t.Context(), []store.AddParams{c.p})
			wantErr(t, "add with schedule "+c.p.Schedule, err, store.ErrInvalid)
			if err != nil && !strings.Contains(err.Error(), c.names) {
				t.Errorf("add with schedule %q: %v, want it to name %s", c.p.Schedule, err, c.names)
			}
		}
		if res, _ := s.List(t.Context(), store.ListParams{}); len(res.Jobs) != 0 {
			t.Errorf("rejected adds left %d jobs", len(res.Jobs))
		}
	})
}

// testListRecurring: a listing of recurring jobs has those with a
// schedule, in any state, and no other.
func testListRecurring(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	plain := addOne(t, s, store.AddParams{Type: "t"})
	daily := addOne(t, s, store.AddParams{Type: "t", Schedule: "DAILY"})
	cron := addOne(t, s, store.AddParams{Type: "u", Schedule: "*/5 * * * *"})
	res, err := s.List(t.Context(), store.ListParams{Recurring: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, j := range res.Jobs {
		ids = append(ids, j.ID)
	}
	if len(ids) != 2 || ids[0] != daily.ID || ids[1] != cron.ID {
		t.Errorf("recurring jobs = %v, want %d and %d (not %d)", ids, daily.ID, cron.ID, plain.ID)
	}
	res, err = s.List(t.Context(), store.ListParams{Recurring: true, Types: []string{"u"}})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != cron.ID {
		t.Errorf("recurring jobs of type u = %v, %v", res.Jobs, err)
	}
}
