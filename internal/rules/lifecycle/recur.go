package lifecycle

import (
	"fmt"
	"time"

	"github.com/rotajobs/rota/internal/rules/schedule"
	"github.com/rotajobs/rota/store"
)

// This file holds the rules of recurring jobs: where a schedule puts a new
// job, where a run's end puts it next, and what becomes of slots it
// missed. A recurring job fires once per slot across nodes and restarts
// because moving to the next slot happens in the same fenced transition
// that ends the run: only the lease holder's finish (or the expiry of its
// lease) can make it, once.

// parsed reads a stored schedule; stores keep only text that parsed when
// it was added, so an error means the row was edited by hand.
func parsed(text string) (schedule.Schedule, error) {
	s, err := schedule.Parse(text)
	if err != nil {
		return schedule.Schedule{}, fmt.Errorf("stored schedule: %w", err)
	}
	return s, nil
}

// FirstRun is when a new job with schedule text (in its stored form: it
// was checked) first runs: at runAt when given; otherwise a cron
// expression at its first match after now, a repeat now (as Bedrock runs a
// repeating job without firstRun at once). It is also the job's first slot.
func FirstRun(text string, runAt, now time.Time) time.Time {
	if !runAt.IsZero() {
		return runAt
	}
	if text == "" {
		return now
	}
	s, err := parsed(text)
	if err != nil || !s.IsCron() {
		return now
	}
	return s.Next(schedule.Times{Now: now})
}

// NextSlot is the slot that follows r's run ending at now: its schedule's
// next run from its slot, start or end (schedule.Schedule.Next). When that
// slot has passed already, the policy decides: MissedAll keeps it (the
// job runs again at once, catching up one slot per run); the others move
// on to the first slot to come, on the schedule's phase, because the run
// that just ended stood for the slots it was late for.
func NextSlot(r *Row, now time.Time) time.Time {
	s, err := parsed(r.Schedule)
	if err != nil {
		return now
	}
	next := s.Next(schedule.Times{Scheduled: r.Slot, Started: r.StartedAt, Now: now})
	if !next.After(now) && r.Missed != store.MissedAll {
		next = s.After(next, now)
	}
	return next
}

// recur ends a recurring job's run: pending at its next slot as a new
// cycle, with the run's result or error.
func recur(r *Row, result []byte, errText string, drop bool, now time.Time) Plan {
	next := NextSlot(r, now)
	ev := event(r, store.Pending, next)
	ev.Failed = errText != "" // a run that failed, or one that completed
	return Plan{Kind: KindRecur, State: store.Pending, RunAt: next, Slot: next, Attempt: 0, Result: result, Error: errText,
		DropToken: drop, ExpiresAt: DeadlineAt(r, next), Event: ev}
}

// Late reports whether a job just claimed must not run because it missed
// slots under store.MissedSkip: the slot after the one it stands for has
// come too.
func Late(j *store.Job, now time.Time) bool {
	if j.Schedule == "" || j.Missed != store.MissedSkip {
		return false
	}
	s, err := parsed(j.Schedule)
	if err != nil {
		return false
	}
	slot := j.Slot
	if slot.IsZero() {
		slot = j.RunAt
	}
	return !s.Next(schedule.Times{Scheduled: slot, Started: slot, Now: slot}).After(now)
}

// SkipLate decides what becomes of a job that Late reported, claimed
// under token: back to pending at the first slot to come, its attempt
// given back and the claim's token fenced out. Fenced like a finish.
func SkipLate(id int64, r *Row, token string, now time.Time) (Plan, error) {
	if err := Fence(id, r, token); err != nil {
		return Plan{}, err
	}
	next := now
	if s, err := parsed(r.Schedule); err == nil {
		next = s.After(r.Slot, now)
	}
	return Plan{Kind: KindSkipSlots, State: store.Pending, RunAt: next, Slot: next, Attempt: max(r.Attempt-1, 0),
		DropToken: true, ExpiresAt: DeadlineAt(r, next), Event: event(r, store.Pending, next)}, nil
}
