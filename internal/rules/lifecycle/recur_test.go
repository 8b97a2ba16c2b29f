package lifecycle

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// recurring is a running job on an hourly SCHEDULED repeat whose slot is
// slot, with attempts left.
func recurring(slot time.Time, missed store.Missed) *Row {
	r := row(store.Running)
	r.Schedule, r.Missed, r.Slot, r.RunAt, r.StartedAt = "SCHEDULED, +1 HOUR", missed, slot, slot, now
	return r
}

// TestRecurringEndings: every way a recurring job's run ends, and where it
// puts the job.
func TestRecurringEndings(t *testing.T) {
	slot := now.Add(-10 * time.Minute)
	for _, c := range []struct {
		name   string
		p      store.FinishParams
		expire bool
		kind   Kind
		state  store.State
		runAt  time.Time
	}{
		{name: "complete", p: store.FinishParams{As: store.Complete}, kind: KindRecur, state: store.Pending, runAt: slot.Add(time.Hour)},
		{name: "fail with attempts left", p: store.FinishParams{As: store.Fail}, kind: KindRetry, state: store.Pending},
		{name: "fail permanently", p: store.FinishParams{As: store.Fail, Permanent: true}, kind: KindDiscard, state: store.Failed},
		{name: "snooze", p: store.FinishParams{As: store.Snooze, RunAt: later}, kind: KindRequeue, state: store.Pending, runAt: later},
		{name: "cancel", p: store.FinishParams{As: store.Cancel}, kind: KindCancelRun, state: store.Cancelled},
		{name: "lease expired, attempts left", expire: true, kind: KindRetry, state: store.Pending, runAt: now},
	} {
		r := recurring(slot, store.MissedOnce)
		c.p.Lease = store.Lease{ID: r.ID, Token: tok}
		var pl Plan
		var err error
		if c.expire {
			pl = Expire(r, now)
		} else {
			pl, err = Finish(r, &c.p, nil, now)
		}
		if err != nil || pl.Kind != c.kind || pl.State != c.state {
			t.Errorf("%s: %v %v %v, want %v to %v", c.name, pl.Kind, pl.State, err, c.kind, c.state)
			continue
		}
		if !c.runAt.IsZero() && !pl.RunAt.Equal(c.runAt) {
			t.Errorf("%s: run at %v, want %v", c.name, pl.RunAt, c.runAt)
		}
		if pl.Kind == KindRecur && (!pl.Slot.Equal(pl.RunAt) || pl.Attempt != 0) {
			t.Errorf("%s: slot %v attempt %d, want the new run time and 0", c.name, pl.Slot, pl.Attempt)
		}
	}
	// Out of attempts, a failure or an expired lease ends the slot, not
	// the job; the error is kept as the slot's outcome.
	r := recurring(slot, store.MissedOnce)
	r.Attempt = r.MaxAttempts
	pl, _ := Finish(r, &store.FinishParams{Lease: store.Lease{ID: r.ID, Token: tok}, As: store.Fail, Error: "boom"}, nil, now)
	if pl.Kind != KindRecur || pl.Error != "boom" || !pl.RunAt.Equal(slot.Add(time.Hour)) {
		t.Errorf("final failure: %v %q at %v, want recur with the error at the next slot", pl.Kind, pl.Error, pl.RunAt)
	}
	pl = Expire(r, now)
	if pl.Kind != KindRecur || pl.Error != LeaseExpired || !pl.DropToken {
		t.Errorf("final expiry: %v %q drop %v, want recur with the lease error, token dropped", pl.Kind, pl.Error, pl.DropToken)
	}
	if Completes(r, &store.FinishParams{Lease: store.Lease{ID: r.ID, Token: tok}, As: store.Complete}) {
		t.Error("Completes holds for a recurring job: the fast path would end it")
	}
}

func TestMissedPolicies(t *testing.T) {
	slot := now.Add(-3*time.Hour - 30*time.Minute)
	for _, c := range []struct {
		missed store.Missed
		next   time.Time
		late   bool
	}{
		{store.MissedOnce, slot.Add(4 * time.Hour), false},
		{store.MissedSkip, slot.Add(4 * time.Hour), true},
		// An hourly SCHEDULED repeat re-anchors itself, as Bedrock's does.
		{store.MissedAll, slot.Add(4 * time.Hour), false},
	} {
		r := recurring(slot, c.missed)
		if got := NextSlot(r, now); !got.Equal(c.next) {
			t.Errorf("%v: next slot %v, want %v", c.missed, got, c.next)
		}
		j := store.Job{Schedule: r.Schedule, Missed: c.missed, Slot: slot}
		if Late(&j, now) != c.late {
			t.Errorf("%v: late = %v, want %v", c.missed, !c.late, c.late)
		}
		j.Slot = now.Add(-30 * time.Minute) // within its slot
		if Late(&j, now) {
			t.Errorf("%v: a job half a slot late counts as late", c.missed)
		}
	}
	r := recurring(slot, store.MissedSkip)
	pl, err := SkipLate(r.ID, r, tok, now)
	if err != nil || pl.Kind != KindSkipSlots || !pl.RunAt.Equal(slot.Add(4*time.Hour)) || pl.Attempt != 0 || !pl.DropToken {
		t.Errorf("SkipLate: %+v %v", pl, err)
	}
	if _, err := SkipLate(r.ID, r, "other", now); err == nil {
		t.Error("SkipLate with another token passed the fence")
	}
}

func TestFirstRunAndReadd(t *testing.T) {
	if got := FirstRun("*/15 * * * *", time.Time{}, now.Add(time.Minute)); !got.Equal(now.Add(15 * time.Minute)) {
		t.Errorf("cron first run %v", got)
	}
	if got := FirstRun("FINISHED, +1 DAY", time.Time{}, now); !got.Equal(now) {
		t.Errorf("repeat first run %v, want now", got)
	}
	if got := FirstRun("@daily", later, now); !got.Equal(later) {
		t.Errorf("first run with run_at %v, want it", got)
	}
	// A pending recurring job re-added with its schedule keeps its slot;
	// with another it starts on the new one.
	r := recurring(later, store.MissedOnce)
	r.State = store.Pending
	same := r.Schedule
	pl := ReaddTo(r, Readd{Schedule: &same}, now)
	if !pl.RunAt.Equal(later) || !pl.Slot.Equal(later) {
		t.Errorf("re-add with the same schedule: run at %v slot %v, want %v", pl.RunAt, pl.Slot, later)
	}
	other := "@hourly"
	pl = ReaddTo(r, Readd{Schedule: &other}, now)
	if !pl.RunAt.Equal(now.Add(time.Hour)) || !pl.Slot.Equal(pl.RunAt) {
		t.Errorf("re-add with a new schedule: run at %v slot %v", pl.RunAt, pl.Slot)
	}
	// A running one resubmitted without a time runs again at its next slot.
	r = recurring(now.Add(-10*time.Minute), store.MissedOnce)
	pl = ReaddTo(r, Readd{}, now)
	if pl.Kind != KindMarkResubmit || !pl.Set.RunAt.IsZero() {
		t.Errorf("resubmit of a running recurring job: %v at %v, want mark-resubmit without a time", pl.Kind, pl.Set.RunAt)
	}
	After(r, &pl)
	done, _ := Finish(r, &store.FinishParams{Lease: store.Lease{ID: r.ID, Token: tok}, As: store.Complete}, nil, now)
	if done.Kind != KindRunAgain || !done.RunAt.Equal(now.Add(50*time.Minute)) {
		t.Errorf("end of a resubmitted recurring run: %v at %v, want run-again at its next slot", done.Kind, done.RunAt)
	}
}
