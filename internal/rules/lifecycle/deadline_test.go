package lifecycle

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// TestLapse checks the rules of deadlines: a pending job past its deadline
// ends cancelled and expired; a recurring one skips to its next slot with
// the deadline moved as far; other plans that move a recurring job's slot
// move its deadline with it.
func TestLapse(t *testing.T) {
	deadline := now.Add(-time.Second)
	r := row(store.Pending)
	r.ExpiresAt = deadline
	if !PastDeadline(r, now) || !PastDeadline(r, deadline) || PastDeadline(r, deadline.Add(-time.Microsecond)) {
		t.Errorf("PastDeadline: want true from the deadline on, false before it")
	}
	if running := row(store.Running); PastDeadline(running, now) {
		t.Errorf("PastDeadline of a running job: want false (a deadline is about starting)")
	}
	p := Lapse(r, now)
	if p.Kind != KindLapse || p.State != store.Cancelled || p.Error != ExpiredAt(deadline) || !p.Event.Expired || !p.ExpiresAt.Equal(deadline) {
		t.Errorf("Lapse of a one-off job: %+v, want cancelled, expired, %q", p, ExpiredAt(deadline))
	}
	if w := Family(&Row{HasChildren: true, State: store.Pending}, &p); !w.CancelChildren {
		t.Errorf("an expired parent: family work %+v, want its children cancelled", w)
	}

	rec := row(store.Pending)
	rec.Schedule, rec.Slot = "SCHEDULED, +1 HOUR", now.Add(-2*time.Second)
	rec.RunAt, rec.ExpiresAt = rec.Slot, rec.Slot.Add(time.Second)
	p = Lapse(rec, now)
	next := rec.Slot.Add(time.Hour)
	if p.Kind != KindLapse || p.State != store.Pending || !p.RunAt.Equal(next) || !p.Slot.Equal(next) ||
		!p.ExpiresAt.Equal(next.Add(time.Second)) || !p.Event.Expired {
		t.Errorf("Lapse of a recurring job: %+v, want pending at %v, deadline %v", p, next, next.Add(time.Second))
	}
	after := *rec
	After(&after, &p)
	if !after.ExpiresAt.Equal(next.Add(time.Second)) || after.State != store.Pending {
		t.Errorf("After a lapse: %+v", after)
	}

	running := row(store.Running)
	running.Schedule, running.Slot, running.StartedAt = "SCHEDULED, +1 HOUR", now.Add(-time.Minute), now.Add(-time.Minute)
	running.ExpiresAt = running.Slot.Add(10 * time.Second)
	if p := recur(running, nil, "", false, now); !p.ExpiresAt.Equal(p.Slot.Add(10 * time.Second)) {
		t.Errorf("recur: slot %v, deadline %v; want the deadline 10s after the slot", p.Slot, p.ExpiresAt)
	}
	oneOff := row(store.Running)
	oneOff.ExpiresAt = deadline
	if p := runAgain(oneOff, now, false); !p.ExpiresAt.Equal(deadline) {
		t.Errorf("run again of a one-off job: deadline %v, want it kept at %v", p.ExpiresAt, deadline)
	}
}
