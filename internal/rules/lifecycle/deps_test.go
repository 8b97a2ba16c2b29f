package lifecycle

import (
	"errors"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

func TestDepEnded(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	waiting := func(left int, policy store.DepPolicy, runAt time.Time) *Row {
		return &Row{ID: 9, State: store.Waiting, DepsWaiting: left, DepPolicy: policy, RunAt: runAt}
	}
	done := Ended{ID: 1, State: store.Completed}
	failed := Ended{ID: 1, State: store.Failed}
	removed := Ended{ID: 1, State: store.Pending, Removed: true}
	cases := []struct {
		name      string
		r         *Row
		e         Ended
		ok        bool
		kind      Kind
		state     store.State
		left      int
		runAt     time.Time
		errorText string
	}{
		{"one of two completes", waiting(2, store.DepCancel, now.Add(-time.Hour)), done, true, KindDepsDone, store.Waiting, 1, now.Add(-time.Hour), ""},
		{"the last completes: due now when its time passed", waiting(1, store.DepCancel, now.Add(-time.Hour)), done, true, KindDepsDone, store.Pending, 0, now, ""},
		{"the last completes: keeps a later run time", waiting(1, store.DepCancel, later), done, true, KindDepsDone, store.Pending, 0, later, ""},
		{"a failure cancels", waiting(2, store.DepCancel, now), failed, true, KindCancel, store.Cancelled, 0, now, "dependency 1 failed"},
		{"a removal cancels", waiting(2, store.DepCancel, now), removed, true, KindCancel, store.Cancelled, 0, now, "dependency 1 was removed"},
		{"a failure counts under run", waiting(1, store.DepRun, now), failed, true, KindDepsDone, store.Pending, 0, now, ""},
		{"a job that no longer waits is left", &Row{ID: 9, State: store.Cancelled}, failed, false, 0, 0, 0, time.Time{}, ""},
		{"a missing job is left", nil, done, false, 0, 0, 0, time.Time{}, ""},
	}
	for _, c := range cases {
		p, ok := DepEnded(c.r, c.e, now)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if p.Kind != c.kind || p.State != c.state || p.DepsWaiting != c.left || !p.RunAt.Equal(c.runAt) || p.Error != c.errorText {
			t.Errorf("%s: plan %s %s left %d at %v error %q; want %s %s left %d at %v error %q", c.name,
				p.Kind, p.State, p.DepsWaiting, p.RunAt, p.Error, c.kind, c.state, c.left, c.runAt, c.errorText)
		}
		if (p.State == store.Pending || p.State == store.Cancelled) && p.Event.ID != 9 {
			t.Errorf("%s: no event for a change subscribers see", c.name)
		}
		// One end at a time or all at once: the same plan.
		if q, _ := DepsEnded(c.r, []Ended{c.e}, now); q.Kind != p.Kind || q.State != p.State || q.DepsWaiting != p.DepsWaiting {
			t.Errorf("%s: DepsEnded %s %s %d, DepEnded %s %s %d", c.name, q.Kind, q.State, q.DepsWaiting, p.Kind, p.State, p.DepsWaiting)
		}
	}
	// Three ends at once of a job waiting for three: pending; a failure
	// among them cancels under cancel.
	if p, _ := DepsEnded(waiting(3, store.DepCancel, now), []Ended{done, done, done}, now); p.State != store.Pending {
		t.Errorf("three ends of three: %s, want pending", p.State)
	}
	if p, _ := DepsEnded(waiting(3, store.DepCancel, now), []Ended{done, failed, done}, now); p.State != store.Cancelled {
		t.Errorf("a failure among three: %s, want cancelled", p.State)
	}
}

func TestEndsForDependants(t *testing.T) {
	r := &Row{ID: 1, State: store.Running, HasDependants: true}
	for _, c := range []struct {
		p    Plan
		want bool
	}{
		{Plan{Kind: KindComplete, State: store.Completed}, true},
		{Plan{Kind: KindDiscard, State: store.Failed}, true},
		{Plan{Kind: KindCancel, State: store.Cancelled}, true},
		{Plan{Kind: KindRemove, State: store.Running}, true},
		{Plan{Kind: KindRetry, State: store.Pending}, false},
		{Plan{Kind: KindRecur, State: store.Pending}, false},
		{Plan{Kind: KindWait, State: store.Paused}, false},
	} {
		if got := EndsForDependants(r, &c.p); got != c.want {
			t.Errorf("%s to %s: %v, want %v", c.p.Kind, c.p.State, got, c.want)
		}
	}
	if EndsForDependants(&Row{State: store.Running}, &Plan{Kind: KindComplete, State: store.Completed}) {
		t.Error("a job without dependants ends for none")
	}
	if EndsForDependants(&Row{State: store.Completed, HasDependants: true}, &Plan{Kind: KindRemove}) {
		t.Error("removing an ended job ends it again")
	}
}

func TestAddAfter(t *testing.T) {
	rows := map[int64]*Row{1: {ID: 1, State: store.Completed}, 2: {ID: 2, State: store.Running}, 3: {ID: 3, State: store.Failed}}
	n, bad, err := AddAfter([]int64{1, 2, 3}, rows, nil)
	if err != nil || n != 1 || bad == nil || bad.ID != 3 {
		t.Errorf("AddAfter = %d, %+v, %v; want one unended and job 3 failed", n, bad, err)
	}
	if _, _, err := AddAfter([]int64{1, 7}, rows, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unknown dependency: %v, want ErrNotFound", err)
	}
}
