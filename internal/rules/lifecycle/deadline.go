package lifecycle

import (
	"fmt"
	"time"

	"github.com/rotajobs/rota/store"
)

// This file holds the rules of deadlines (store.AddParams.ExpiresAt): no
// run of a job starts at or after its deadline. Stores' claims skip a
// pending job past it (its condition: expires_at is NULL or after the
// claim's now), and the lease sweep ends it (Lapse) as soon as it passes.

// ExpiredAt is the last error of a job whose deadline passed before it
// started.
func ExpiredAt(deadline time.Time) string {
	return fmt.Sprintf("expired at %s, not started", deadline.UTC().Format(time.RFC3339Nano))
}

// PastDeadline reports whether r, pending, may no longer start at now:
// its deadline is not after now.
func PastDeadline(r *Row, now time.Time) bool {
	return r.State == store.Pending && !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
}

// DeadlineAt is r's deadline once its slot is slot: a recurring job's
// deadline is as far after its slot as it was after the one before, so
// that every slot has the same time to start; other jobs keep theirs.
func DeadlineAt(r *Row, slot time.Time) time.Time {
	if r.ExpiresAt.IsZero() || r.Schedule == "" || r.Slot.IsZero() || slot.IsZero() {
		return r.ExpiresAt
	}
	return r.ExpiresAt.Add(slot.Sub(r.Slot))
}

// Lapse decides what becomes of a pending job whose deadline passed
// (PastDeadline): a recurring job skips to its next slot to come, with
// the deadline that slot has (KindLapse, still pending); another ends
// cancelled (KindLapse), Expired, with the last error ExpiredAt. Its
// attempts, errors and result stay as they were.
func Lapse(r *Row, now time.Time) Plan {
	if r.Schedule != "" {
		next := now
		if s, err := parsed(r.Schedule); err == nil {
			slot := r.Slot
			if slot.IsZero() {
				slot = r.RunAt
			}
			next = s.After(slot, now)
		}
		ev := event(r, store.Pending, next)
		ev.Expired = true
		return Plan{Kind: KindLapse, State: store.Pending, RunAt: next, Slot: next, Attempt: r.Attempt,
			Error: ExpiredAt(r.ExpiresAt), ExpiresAt: DeadlineAt(r, next), Event: ev}
	}
	ev := event(r, store.Cancelled, r.RunAt)
	ev.Expired = true
	return Plan{Kind: KindLapse, State: store.Cancelled, RunAt: r.RunAt, Attempt: r.Attempt,
		Error: ExpiredAt(r.ExpiresAt), ExpiresAt: r.ExpiresAt, Event: ev}
}
