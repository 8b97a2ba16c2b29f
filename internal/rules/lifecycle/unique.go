package lifecycle

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// Matches reports whether a unique add of a type finds a job in state s:
// any state Bedrock still holds a job in. Bedrock deletes a job that
// completes, so a completed job that rota merely retains does not count.
func Matches(s store.State) bool { return s != store.Completed }

// UniqueSince is the start of an add's unique window at the store's time
// now: a job created after it is within the window (AddParams.UniqueFor).
func UniqueSince(p *store.AddParams, now time.Time) time.Time { return now.Add(-p.UniqueFor) }

// InUniqueWindow reports whether job r, created at created, is one an add
// p with a unique window finds at the store's time now: created within
// the window, and in one of p's unique states (by default any state but
// cancelled: a job that completed within the window still throttles).
func InUniqueWindow(p *store.AddParams, r *Row, created, now time.Time) bool {
	if p.UniqueFor <= 0 || r == nil || !created.After(UniqueSince(p, now)) {
		return false
	}
	if p.UniqueStates == nil {
		return r.State != store.Cancelled
	}
	return slices.Contains(p.UniqueStates, r.State)
}

// DebouncedRunAt is the run time of a debounced add p at the store's time
// now: Debounce after it, whether the add inserts the job or re-adds the
// pending one (which then replaces its data and run time: the last add
// wins). Zero when p does not debounce.
func DebouncedRunAt(p *store.AddParams, now time.Time) time.Time {
	if p.Debounce <= 0 {
		return time.Time{}
	}
	return now.Add(p.Debounce)
}

// UniqueAdd decides a unique add p (data: its normalized data) that found
// job r, whose data are existing: the same data, or no overwrite, change
// nothing (KindKeep, Unchanged); otherwise the add's data are merged into the
// job's by JSON merge patch and its priority and schedule become the
// add's (KindEdit, Updated), as Bedrock's CreateJob does.
func UniqueAdd(r *Row, p *store.AddParams, data, existing []byte) (Plan, error) {
	keep := Plan{Kind: KindKeep, State: r.State, RunAt: r.RunAt, Attempt: r.Attempt, Outcome: store.Unchanged}
	if !p.Overwrite || bytes.Equal(data, existing) {
		return keep, nil
	}
	merged, err := jsonpatch.MergePatch(existing, data)
	if err != nil {
		return Plan{}, fmt.Errorf("job %d: merge the new data into the job's: %w", r.ID, err)
	}
	if bytes.Equal(merged, existing) {
		return keep, nil
	}
	if len(merged) > store.MaxDataSize {
		return Plan{}, check.TooLarge("job %d: data merged with the add's would be %d bytes, more than %d", r.ID, len(merged), store.MaxDataSize)
	}
	prio, sched, missed := p.Priority, p.Schedule, p.Missed
	var slot time.Time // none without a schedule; a job given one stands for its run time
	if sched != "" {
		slot = cmp.Or(r.Slot, r.RunAt)
	}
	return Plan{Kind: KindEdit, State: r.State, RunAt: r.RunAt, Attempt: r.Attempt, Slot: slot,
		Set:     Readd{Data: merged, Priority: &prio, Schedule: &sched, Missed: &missed},
		Outcome: store.Updated, Event: event(r, r.State, r.RunAt)}, nil
}

// Update decides an update of job id (r nil when it does not exist)
// at the store's time now: the job changes in place, in any state
// (Bedrock's UpdateJob); data is p's normalized data (nil keeps). A new
// run time (RunAt, RunIn) needs a pending or paused job; NextSlot moves
// only such a job.
func Update(id int64, r *Row, p *store.UpdateParams, data []byte, now time.Time) (Plan, error) {
	if r == nil {
		return Plan{}, check.NotFound(id)
	}
	movable := r.State == store.Pending || r.State == store.Paused || r.State == store.Waiting
	sched, missed := r.Schedule, r.Missed
	if p.Schedule != nil {
		sched = *p.Schedule
	}
	if p.Missed != nil {
		missed = *p.Missed
	}
	runAt, moved := r.RunAt, false
	switch {
	case !p.RunAt.IsZero() || p.RunIn > 0:
		if !movable {
			return Plan{}, check.JobErrorf(store.ErrFinished, "job %d is %s: only a pending or paused job's run time can change", id, r.State)
		}
		runAt, moved = p.RunAt, true
		if runAt.IsZero() {
			runAt = In(now, p.RunIn)
		}
	case p.NextSlot && movable && sched != "":
		// A new schedule starts from the job's run time; its own goes on
		// from the slot its run stands for.
		from := cmp.Or(r.Slot, r.RunAt)
		if p.Schedule != nil {
			from = r.RunAt
		}
		runAt, moved = NextSlot(&Row{Schedule: sched, Missed: missed, Slot: from, StartedAt: r.StartedAt}, now), true
	}
	var slot time.Time
	if sched != "" {
		slot = cmp.Or(r.Slot, runAt)
		if moved {
			slot = runAt
		}
	}
	return Plan{Kind: KindEdit, State: r.State, RunAt: runAt, Attempt: r.Attempt, Slot: slot,
		Set:     Readd{Data: data, Priority: p.Priority, Schedule: p.Schedule, Missed: p.Missed},
		Outcome: store.Updated, Event: event(r, r.State, runAt)}, nil
}
