package lifecycle

import (
	"fmt"
	"time"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// This file holds the rules of dependencies (store.AddParams.After): a job
// added after others waits (store.Waiting) until every one of them has
// ended, then is pending; a dependency that fails for good, is cancelled
// or is removed applies the job's policy (store.DepPolicy): DepCancel
// cancels it (and its end is then its own dependants' to learn, down the
// graph), DepRun lets it run once the rest have ended. A waiting job
// keeps a count of its unended dependencies, so that each dependency's
// end costs it one step, whatever the fan-in. The engine runs these
// rules after every change that ends a job with dependants (EndsForDependants),
// on every path, in the same transaction.

// Ended is how a dependency ended, as its dependants learn it.
type Ended struct {
	ID      int64
	State   store.State // its state after the change
	Removed bool        // it was removed before it ended
}

// Bad reports whether the dependency did not complete: it failed for
// good, was cancelled or was removed.
func (e Ended) Bad() bool {
	return e.Removed || e.State == store.Failed || e.State == store.Cancelled
}

// DepFailed is the error a job cancelled by its policy records: which
// dependency ended how.
func DepFailed(e Ended) string {
	switch {
	case e.Removed:
		return fmt.Sprintf("dependency %d was removed", e.ID)
	case e.State == store.Failed:
		return fmt.Sprintf("dependency %d failed", e.ID)
	}
	return fmt.Sprintf("dependency %d was cancelled", e.ID)
}

// AddAfter checks the dependencies an add names (ids, with their rows
// as the caller reaches them, nil for a missing one) and says how many
// have not ended, and the first that ended badly (nil: none). A missing
// dependency is ErrNotFound naming it; the whole add is refused.
func AddAfter(ids []int64, rows map[int64]*Row, reach *store.Reach) (unended int, bad *Ended, err error) {
	for _, id := range ids {
		r := Reached(rows[id], reach)
		if r == nil {
			return 0, nil, check.JobErrorf(store.ErrNotFound, "after: job %d does not exist", id)
		}
		switch {
		case !r.State.Terminal():
			unended++
		case bad == nil && r.State != store.Completed:
			bad = &Ended{ID: id, State: r.State}
		}
	}
	return unended, bad, nil
}

// Settle decides what a job just added after others (r, waiting, its
// DepsWaiting the count of unended ones) becomes at once: cancelled when a
// dependency had already ended badly under DepCancel, pending when none is
// left to wait for. ok is false when it stays waiting.
func Settle(r *Row, bad *Ended, now time.Time) (Plan, bool) {
	if bad != nil && r.DepPolicy == store.DepCancel {
		return depCancel(r, *bad), true
	}
	if r.DepsWaiting > 0 {
		return Plan{}, false
	}
	return depsDone(r, 0, now), true
}

// EndsForDependants reports whether plan p, applied to r (as it was
// before), ends r for its dependants: r has dependants, and p ends it
// (moves it to a terminal state) or removes it before it ended.
func EndsForDependants(r *Row, p *Plan) bool {
	if !r.HasDependants || r.State.Terminal() {
		return false
	}
	return p.Kind == KindRemove || (p.Kind != KindKeep && p.State.Terminal())
}

// EndedBy is how plan p ends r for its dependants (EndsForDependants).
func EndedBy(r *Row, p *Plan) Ended {
	return Ended{ID: r.ID, State: p.State, Removed: p.Kind == KindRemove}
}

// DepEnded decides what becomes of job r (nil when it no longer exists)
// when one of its dependencies ended as e: nothing unless r waits; under
// DepCancel a bad end cancels it; otherwise its count goes down by one,
// and at zero it is pending at its run time, or now when that has passed.
func DepEnded(r *Row, e Ended, now time.Time) (Plan, bool) {
	if r == nil || r.State != store.Waiting {
		return Plan{}, false
	}
	if e.Bad() && r.DepPolicy == store.DepCancel {
		return depCancel(r, e), true
	}
	return depsDone(r, max(r.DepsWaiting-1, 0), now), true
}

func depCancel(r *Row, e Ended) Plan {
	return Plan{Kind: KindCancel, State: store.Cancelled, RunAt: r.RunAt, Attempt: r.Attempt, Error: DepFailed(e),
		Event: event(r, store.Cancelled, r.RunAt)}
}

func depsDone(r *Row, left int, now time.Time) Plan {
	if left > 0 {
		return Plan{Kind: KindDepsDone, State: store.Waiting, RunAt: r.RunAt, Attempt: r.Attempt, DepsWaiting: left}
	}
	runAt := r.RunAt
	if runAt.Before(now) {
		runAt = now
	}
	return Plan{Kind: KindDepsDone, State: store.Pending, RunAt: runAt, Attempt: r.Attempt, Event: event(r, store.Pending, runAt)}
}

// DepsEnded is DepEnded for several ends of r's dependencies at once, in
// order (a batch of finishes that ends several of them): one plan, as if
// each had been applied in turn. ok is false when r does not wait.
func DepsEnded(r *Row, ends []Ended, now time.Time) (Plan, bool) {
	if r == nil || r.State != store.Waiting || len(ends) == 0 {
		return Plan{}, false
	}
	left := r.DepsWaiting
	for _, e := range ends {
		if e.Bad() && r.DepPolicy == store.DepCancel {
			return depCancel(r, e), true
		}
		left = max(left-1, 0)
	}
	return depsDone(r, left, now), true
}
