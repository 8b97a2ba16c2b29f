package lifecycle

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

var (
	now   = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	early = now.Add(-time.Hour)
	later = now.Add(time.Hour)
)

const tok = "0123456789abcdef0123456789abcdef"

// row is a job in state with attempts left, run time early and the lease
// token tok.
func row(state store.State) *Row {
	return &Row{ID: 7, Type: "t", Group: "g", State: state, Token: tok, Attempt: 1, MaxAttempts: 3,
		BackoffBase: time.Second, BackoffMax: time.Minute, RunAt: early}
}

var states = []store.State{store.Pending, store.Running, store.Paused, store.Completed, store.Failed, store.Cancelled, store.Waiting}

// errOf names the sentinel an error matches, "" for nil.
func errOf(err error) string {
	for _, e := range []error{store.ErrCanceled, store.ErrWorkerConflict, store.ErrNotFound, store.ErrFinished, store.ErrInvalid} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

// TestWorkerCallsEveryState checks every worker call (each ending of
// Finish, and Heartbeat) against a missing job and a job in every state,
// under its current token.
func TestWorkerCallsEveryState(t *testing.T) {
	conflict, canceled := store.ErrWorkerConflict.Error(), store.ErrCanceled.Error()
	endings := []store.Ending{store.Complete, store.Fail, store.Snooze, store.Release, store.Cancel}
	want := map[store.Ending]Kind{store.Complete: KindComplete, store.Fail: KindRetry, store.Snooze: KindRequeue,
		store.Release: KindRequeue, store.Cancel: KindCancelRun}
	for _, st := range append([]store.State{255}, states...) { // 255: no such job
		var r *Row
		if st != 255 {
			r = row(st)
		}
		wantErr := conflict
		switch {
		case r == nil || st == store.Cancelled:
			wantErr = canceled
		case st == store.Running:
			wantErr = ""
		}
		for _, e := range endings {
			p := &store.FinishParams{Lease: store.Lease{ID: 7, Token: tok}, As: e}
			plan, err := Finish(r, p, nil, now)
			gotErr := errOf(err)
			if st == store.Completed && e == store.Complete {
				// A repeat of the completion this lease made.
				if gotErr != "" || plan.Kind != KindKeep || plan.Event.State != store.Completed {
					t.Errorf("finish %s of completed job: %s, %v", e, plan.Kind, err)
				}
				continue
			}
			if gotErr != wantErr {
				t.Errorf("finish %s of %v job: error %q, want %q", e, st, gotErr, wantErr)
				continue
			}
			if err == nil && plan.Kind != want[e] {
				t.Errorf("finish %s of %v job: plan %s, want %s", e, st, plan.Kind, want[e])
			}
		}
		plan, err := Heartbeat(r, &store.HeartbeatParams{Lease: store.Lease{ID: 7, Token: tok}}, time.Minute, now)
		if errOf(err) != wantErr {
			t.Errorf("heartbeat of %v job: error %q, want %q", st, errOf(err), wantErr)
		}
		if err == nil && (plan.Kind != KindExtend || !plan.LeaseUntil.Equal(now.Add(time.Minute)) || plan.Event.ID != 0) {
			t.Errorf("heartbeat: %+v", plan)
		}
	}
}

// TestFencing checks that a call under any token but the current one
// changes nothing, including the repeat of a completion.
func TestFencing(t *testing.T) {
	for _, token := range []string{"", "stale", tok + "x"} {
		for _, st := range states {
			r := row(st)
			for _, e := range []store.Ending{store.Complete, store.Fail, store.Snooze, store.Release, store.Cancel} {
				_, err := Finish(r, &store.FinishParams{Lease: store.Lease{ID: 7, Token: token}, As: e}, nil, now)
				want := store.ErrWorkerConflict
				if st == store.Cancelled {
					want = store.ErrCanceled
				}
				if !errors.Is(err, want) {
					t.Errorf("finish %s of %v job with token %q: %v, want %v", e, st, token, err, want)
				}
			}
			if _, err := Heartbeat(r, &store.HeartbeatParams{Lease: store.Lease{ID: 7, Token: token}}, time.Second, now); err == nil {
				t.Errorf("heartbeat of %v job with token %q passed", st, token)
			}
		}
	}
	// An expired lease is fenced out: its token is dropped, so its owner's
	// late completion is not taken for a repeat.
	r := row(store.Running)
	plan := Expire(r, now)
	After(r, &plan)
	if r.Token != "" || r.State != store.Pending {
		t.Fatalf("after expiry: %+v", r)
	}
	if _, err := Finish(r, &store.FinishParams{Lease: store.Lease{ID: 7, Token: tok}, As: store.Complete}, nil, now); !errors.Is(err, store.ErrWorkerConflict) {
		t.Fatalf("completion with the expired token: %v", err)
	}
	// A job that ran out of attempts and failed at expiry: the same.
	r = row(store.Running)
	r.Attempt = r.MaxAttempts
	plan = Expire(r, now)
	After(r, &plan)
	if _, err := Finish(r, &store.FinishParams{Lease: store.Lease{ID: 7, Token: tok}, As: store.Complete}, nil, now); !errors.Is(err, store.ErrWorkerConflict) {
		t.Fatalf("completion of a failed job with the expired token: %v", err)
	}
	// Errors name the job.
	_, err := Finish(nil, &store.FinishParams{Lease: store.Lease{ID: 42, Token: tok}, As: store.Complete}, nil, now)
	if err == nil || err.Error() != "job 42 was removed: job canceled" {
		t.Fatalf("finish of a removed job: %v", err)
	}
}

func TestFinishOutcomes(t *testing.T) {
	lease := store.Lease{ID: 7, Token: tok}
	tests := []struct {
		name  string
		row   func(*Row)
		p     store.FinishParams
		kind  Kind
		state store.State
		check func(t *testing.T, p Plan)
	}{
		{name: "complete", p: store.FinishParams{As: store.Complete}, kind: KindComplete, state: store.Completed,
			check: func(t *testing.T, p Plan) {
				if string(p.Result) != `{"ok":1}` || !p.RunAt.Equal(early) {
					t.Errorf("result %s run at %v", p.Result, p.RunAt)
				}
			}},
		{name: "fail retries with back-off", p: store.FinishParams{As: store.Fail, Error: "boom"}, kind: KindRetry, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				// Attempt 1 of 3: base 1s ± 10%.
				if d := p.RunAt.Sub(now); d < 900*time.Millisecond || d > 1100*time.Millisecond || p.Error != "boom" {
					t.Errorf("run at now+%v, error %q", d, p.Error)
				}
			}},
		{name: "fail back-off doubles", row: func(r *Row) { r.Attempt = 2 }, p: store.FinishParams{As: store.Fail}, kind: KindRetry, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if d := p.RunAt.Sub(now); d < 1800*time.Millisecond || d > 2200*time.Millisecond || p.Error != "fail" {
					t.Errorf("run at now+%v, error %q", d, p.Error)
				}
			}},
		{name: "fail permanent", p: store.FinishParams{As: store.Fail, Permanent: true, Error: "bad"}, kind: KindDiscard, state: store.Failed},
		{name: "fail out of attempts", row: func(r *Row) { r.Attempt = 3 }, p: store.FinishParams{As: store.Fail}, kind: KindDiscard, state: store.Failed},
		{name: "snooze to a time", p: store.FinishParams{As: store.Snooze, RunAt: later}, kind: KindRequeue, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if !p.RunAt.Equal(later) || p.Attempt != 0 {
					t.Errorf("run at %v attempt %d", p.RunAt, p.Attempt)
				}
			}},
		{name: "snooze keeping the attempt", p: store.FinishParams{As: store.Snooze, RunAt: later, KeepAttempt: true, Rename: "u"}, kind: KindRequeue, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if !p.RunAt.Equal(later) || p.Attempt != 1 || p.Type != "u" || p.Event.Type != "u" {
					t.Errorf("run at %v attempt %d type %q (event %q)", p.RunAt, p.Attempt, p.Type, p.Event.Type)
				}
			}},
		{name: "snooze without a time", p: store.FinishParams{As: store.Snooze}, kind: KindRequeue, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if !p.RunAt.Equal(now) {
					t.Errorf("run at %v", p.RunAt)
				}
			}},
		{name: "release keeps an earlier run time", p: store.FinishParams{As: store.Release}, kind: KindRequeue, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if !p.RunAt.Equal(early) || p.Attempt != 0 {
					t.Errorf("run at %v attempt %d", p.RunAt, p.Attempt)
				}
			}},
		{name: "release of a job due later is due now", row: func(r *Row) { r.RunAt = later }, p: store.FinishParams{As: store.Release},
			kind: KindRequeue, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if !p.RunAt.Equal(now) {
					t.Errorf("run at %v", p.RunAt)
				}
			}},
		{name: "worker cancels", p: store.FinishParams{As: store.Cancel}, kind: KindCancelRun, state: store.Cancelled,
			check: func(t *testing.T, p Plan) {
				if p.Error != "cancel" {
					t.Errorf("error %q", p.Error)
				}
			}},
		{name: "resubmitted runs again", row: func(r *Row) { r.Resubmit, r.ResubmitAt = true, later },
			p: store.FinishParams{As: store.Complete}, kind: KindRunAgain, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if !p.RunAt.Equal(later) || p.Attempt != 0 || p.DropToken {
					t.Errorf("%+v", p)
				}
			}},
		{name: "resubmitted, failed, runs again at once", row: func(r *Row) { r.Resubmit = true },
			p: store.FinishParams{As: store.Fail, Permanent: true}, kind: KindRunAgain, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if !p.RunAt.Equal(now) {
					t.Errorf("run at %v", p.RunAt)
				}
			}},
		{name: "resubmitted but cancelled by its worker", row: func(r *Row) { r.Resubmit = true },
			p: store.FinishParams{As: store.Cancel}, kind: KindCancelRun, state: store.Cancelled},
		{name: "complete with data", p: store.FinishParams{As: store.Complete, Data: []byte(`{"d":1}`)}, kind: KindComplete, state: store.Completed,
			check: func(t *testing.T, p Plan) {
				if string(p.Touch.Data) != `{"d":1}` || p.Touch.EndSchedule || p.Touch.Priority != nil {
					t.Errorf("touch %+v", p.Touch)
				}
			}},
		{name: "complete ending the schedule", row: func(r *Row) { r.Schedule, r.Slot = "SCHEDULED, +1 HOUR", early },
			p: store.FinishParams{As: store.Complete, EndSchedule: true}, kind: KindComplete, state: store.Completed,
			check: func(t *testing.T, p Plan) {
				if !p.Touch.EndSchedule {
					t.Errorf("touch %+v", p.Touch)
				}
				r := row(store.Running)
				r.Schedule, r.Slot = "SCHEDULED, +1 HOUR", early
				After(r, &p)
				if r.Schedule != "" || !r.Slot.IsZero() || r.State != store.Completed {
					t.Errorf("after: %+v", r)
				}
			}},
		{name: "recurring complete keeps its schedule", row: func(r *Row) { r.Schedule, r.Slot = "SCHEDULED, +1 HOUR", early },
			p: store.FinishParams{As: store.Complete}, kind: KindRecur, state: store.Pending},
		{name: "fail with data", p: store.FinishParams{As: store.Fail, Permanent: true, Data: []byte(`{}`)}, kind: KindDiscard, state: store.Failed,
			check: func(t *testing.T, p Plan) {
				if string(p.Touch.Data) != `{}` {
					t.Errorf("touch %+v", p.Touch)
				}
			}},
		{name: "snooze with priority, in whole seconds from now", p: store.FinishParams{As: store.Snooze, RunIn: 5 * time.Second, Priority: new(int)},
			kind: KindRequeue, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if p.Touch.Priority == nil || !p.RunAt.Equal(now.Add(5*time.Second)) {
					t.Errorf("run at %v, touch %+v", p.RunAt, p.Touch)
				}
			}},
		{name: "snooze to the next slot", row: func(r *Row) { r.Schedule, r.Slot, r.StartedAt = "SCHEDULED, +1 HOUR", now, now },
			p: store.FinishParams{As: store.Snooze, AtNextSlot: true, RunIn: time.Minute}, kind: KindRequeue, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if !p.RunAt.Equal(now.Add(time.Hour)) {
					t.Errorf("run at %v", p.RunAt)
				}
			}},
		{name: "snooze to the next slot of no schedule", p: store.FinishParams{As: store.Snooze, AtNextSlot: true, RunIn: time.Minute},
			kind: KindRequeue, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				if !p.RunAt.Equal(now.Add(time.Minute)) {
					t.Errorf("run at %v", p.RunAt)
				}
			}},
		{name: "snooze dropping ended children", row: func(r *Row) { r.HasChildren = true },
			p: store.FinishParams{As: store.Snooze, DropEndedChildren: true}, kind: KindRequeue, state: store.Pending,
			check: func(t *testing.T, p Plan) {
				r := row(store.Running)
				r.HasChildren = true
				if w := Family(r, &p); !w.DropEndedChildren || !w.KeepFailedChildren || w.CancelChildren || w.ReleaseChildren {
					t.Errorf("family work %+v", w)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := row(store.Running)
			if tt.row != nil {
				tt.row(r)
			}
			tt.p.Lease = lease
			plan, err := Finish(r, &tt.p, []byte(`{"ok":1}`), now)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Kind != tt.kind || plan.State != tt.state {
				t.Fatalf("plan %s to %v, want %s to %v", plan.Kind, plan.State, tt.kind, tt.state)
			}
			if plan.Event.ID != 7 || plan.Event.State != tt.state || plan.Event.Lease != store.LeaseTag(tok) || !plan.Event.RunAt.Equal(plan.RunAt) {
				t.Errorf("event %+v", plan.Event)
			}
			// The event tells a failed run (retried or not) from a job
			// queued anew: the dashboard's chart counts it as a failure.
			if failed := plan.Kind == KindRetry || plan.Kind == KindDiscard || (plan.Kind == KindRecur && plan.Error != ""); plan.Event.Failed != failed {
				t.Errorf("plan %s: event.Failed = %v, want %v", plan.Kind, plan.Event.Failed, failed)
			}
			if plan.DropToken {
				t.Error("a finish drops the token")
			}
			if tt.check != nil {
				tt.check(t, plan)
			}
			if Completes(r, &tt.p) != (plan.Kind == KindComplete && !plan.Touch.Any()) {
				t.Errorf("Completes = %v for a %s plan", Completes(r, &tt.p), plan.Kind)
			}
		})
	}
}

// TestCompletes checks that the fast path's condition holds exactly when
// Finish plans a plain completion, over every state, token and flag.
func TestCompletes(t *testing.T) {
	for _, st := range states {
		for _, token := range []string{tok, "other"} {
			for _, resubmit := range []bool{false, true} {
				for _, e := range []store.Ending{store.Complete, store.Fail, store.Snooze, store.Release, store.Cancel} {
					r := row(st)
					r.Resubmit = resubmit
					p := &store.FinishParams{Lease: store.Lease{ID: 7, Token: token}, As: e}
					plan, err := Finish(r, p, nil, now)
					plain := err == nil && plan.Kind == KindComplete
					if Completes(r, p) != plain {
						t.Errorf("%v job, token %s, resubmit %v, %s: Completes %v, plan %s %v", st, token, resubmit, e, !plain, plan.Kind, err)
					}
				}
			}
		}
	}
	if Completes(nil, &store.FinishParams{As: store.Complete}) {
		t.Error("Completes holds for a missing job")
	}
	// A job with dependants completes through the engine, which applies
	// its end to them (the set-based completion leaves it).
	r := row(store.Running)
	r.HasDependants = true
	if Completes(r, &store.FinishParams{Lease: store.Lease{ID: 7, Token: tok}, As: store.Complete}) {
		t.Error("Completes holds for a job with dependants")
	}
}

func TestExpire(t *testing.T) {
	r := row(store.Running)
	p := Expire(r, now)
	if p.Kind != KindRetry || !p.RunAt.Equal(now) || p.Error != LeaseExpired || !p.DropToken || p.State != store.Pending {
		t.Errorf("with attempts left: %+v", p)
	}
	r.Attempt = r.MaxAttempts
	p = Expire(r, now)
	if p.Kind != KindDiscard || p.State != store.Failed || !p.DropToken || p.Error != LeaseExpired || !p.RunAt.Equal(early) {
		t.Errorf("out of attempts: %+v", p)
	}
	r.Resubmit, r.ResubmitAt = true, later
	p = Expire(r, now)
	if p.Kind != KindRunAgain || !p.RunAt.Equal(later) || !p.DropToken {
		t.Errorf("resubmitted: %+v", p)
	}
}

// TestProducerCallsEveryState checks cancel, remove and re-add against a
// missing job and a job in every state.
func TestProducerCallsEveryState(t *testing.T) {
	finished := store.ErrFinished.Error()
	notFound := store.ErrNotFound.Error()
	cancel := map[store.State]struct {
		kind Kind
		err  string
	}{
		store.Pending: {KindCancel, ""}, store.Running: {KindCancel, ""}, store.Paused: {KindCancel, ""},
		store.Completed: {0, finished}, store.Failed: {0, finished}, store.Cancelled: {KindKeep, ""},
		store.Waiting: {KindCancel, ""},
	}
	readd := map[store.State]struct {
		kind    Kind
		outcome store.Outcome
		state   store.State
	}{
		store.Pending: {KindUpdate, store.Updated, store.Pending}, store.Paused: {KindUpdate, store.Updated, store.Paused},
		store.Running:   {KindMarkResubmit, store.Resubmitted, store.Running},
		store.Completed: {KindRevive, store.Requeued, store.Pending}, store.Failed: {KindRevive, store.Requeued, store.Pending},
		store.Cancelled: {KindRevive, store.Requeued, store.Pending},
		// A waiting job stays waiting for its dependencies.
		store.Waiting: {KindUpdate, store.Updated, store.Waiting},
	}
	for _, st := range states {
		p, err := Cancel(7, row(st))
		if errOf(err) != cancel[st].err || (err == nil && p.Kind != cancel[st].kind) {
			t.Errorf("cancel of %v job: %s %v", st, p.Kind, err)
		}
		if err == nil && p.Kind == KindCancel {
			if p.CancelRequested != (st == store.Running) || p.Event.State != store.Cancelled {
				t.Errorf("cancel of %v job: %+v", st, p)
			}
		}
		if err == nil && p.Kind == KindKeep && p.Event.ID != 0 {
			t.Errorf("cancel of a cancelled job publishes %+v", p.Event)
		}

		p, err = Remove(7, row(st))
		if err != nil || p.Kind != KindRemove || !p.Event.Removed || p.Event.State != st {
			t.Errorf("remove of %v job: %+v %v", st, p, err)
		}

		p = ReaddTo(row(st), Readd{Data: []byte(`{}`)}, now)
		w := readd[st]
		if p.Kind != w.kind || p.Outcome != w.outcome || p.State != w.state {
			t.Errorf("re-add of %v job: %s %v %v", st, p.Kind, p.Outcome, p.State)
		}
		switch {
		case st == store.Running:
			if p.Event.ID != 0 || !p.Set.RunAt.Equal(now) {
				t.Errorf("re-add of a running job: %+v", p)
			}
		case p.Event.Group != "g" || !p.RunAt.Equal(now) || p.Event.State != w.state:
			t.Errorf("re-add of %v job: %+v", st, p)
		}
	}
	for _, f := range []func(int64, *Row) (Plan, error){Cancel, Remove} {
		if _, err := f(7, nil); errOf(err) != notFound {
			t.Errorf("missing job: %v", err)
		}
	}
}

func TestReaddRunTimes(t *testing.T) {
	// A resubmit without a time keeps a pending job's run time.
	p := ReaddTo(row(store.Pending), Readd{KeepRunAt: true}, now)
	if !p.RunAt.Equal(early) {
		t.Errorf("resubmit of pending: run at %v", p.RunAt)
	}
	// An add by key without a time makes it due now, in the job's group:
	// a key is the job's within its type and group.
	p = ReaddTo(row(store.Pending), ReaddOf(&store.AddParams{Type: "t", Key: "k", Group: "g"}, nil), now)
	if !p.RunAt.Equal(now) || p.Event.Group != "g" {
		t.Errorf("add by key: %+v", p)
	}
	// An explicit time wins for every state.
	for _, st := range states {
		p = ReaddTo(row(st), Readd{RunAt: later, KeepRunAt: true}, now)
		if !p.Set.RunAt.Equal(later) {
			t.Errorf("%v: run at %v", st, p.Set.RunAt)
		}
	}
	// The row after a mark: the run that ends next runs again then.
	r := row(store.Running)
	p = ReaddTo(r, Readd{RunAt: later}, now)
	After(r, &p)
	if !r.Resubmit || !r.ResubmitAt.Equal(later) || r.State != store.Running {
		t.Errorf("after mark: %+v", r)
	}
	p, err := Finish(r, &store.FinishParams{Lease: store.Lease{ID: 7, Token: tok}, As: store.Complete}, nil, now)
	if err != nil || p.Kind != KindRunAgain || !p.RunAt.Equal(later) {
		t.Errorf("finish after mark: %+v %v", p, err)
	}
}

func TestBackoff(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 30: time.Minute} {
		for range 20 {
			d := Backoff(time.Second, time.Minute, attempt)
			if d < want*9/10 || d > want*11/10 {
				t.Errorf("attempt %d: %v, want %v ± 10%%", attempt, d, want)
			}
		}
	}
}

// TestMoves checks the places a plan moves a job between, which the
// stores' per-group counts follow.
func TestMoves(t *testing.T) {
	lease := store.Lease{ID: 7, Token: tok}
	finish := func(p store.FinishParams) func(r *Row) (Plan, error) {
		return func(r *Row) (Plan, error) {
			p.Lease = lease
			return Finish(r, &p, nil, now)
		}
	}
	tests := []struct {
		name     string
		state    store.State
		plan     func(r *Row) (Plan, error)
		from, to *Place
	}{
		{"complete", store.Running, finish(store.FinishParams{As: store.Complete}),
			&Place{"t", "g", store.Running}, &Place{"t", "g", store.Completed}},
		{"retry", store.Running, finish(store.FinishParams{As: store.Fail}),
			&Place{"t", "g", store.Running}, &Place{"t", "g", store.Pending}},
		{"snooze renamed", store.Running, finish(store.FinishParams{As: store.Snooze, Rename: "u"}),
			&Place{"t", "g", store.Running}, &Place{"u", "g", store.Pending}},
		{"remove", store.Pending, func(r *Row) (Plan, error) { return Remove(7, r) },
			&Place{"t", "g", store.Pending}, nil},
		{"revive", store.Failed, func(r *Row) (Plan, error) {
			return ReaddTo(r, ReaddOf(&store.AddParams{Type: "t", Key: "k", Group: "g"}, nil), now), nil
		}, &Place{"t", "g", store.Failed}, &Place{"t", "g", store.Pending}},
		{"edit", store.Pending, func(r *Row) (Plan, error) {
			return Update(7, r, &store.UpdateParams{ID: 7, RunAt: later}, nil, now)
		}, nil, nil},
		{"heartbeat", store.Running, func(r *Row) (Plan, error) {
			return Plan{Kind: KindExtend, LeaseUntil: later}, nil
		}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := row(tc.state)
			p, err := tc.plan(r)
			if err != nil {
				t.Fatal(err)
			}
			before := *r
			from, to := Moves(r, &p)
			if *r != before {
				t.Errorf("Moves changed the row: %+v, was %+v", *r, before)
			}
			if !samePlace(from, tc.from) || !samePlace(to, tc.to) {
				t.Errorf("%s: Moves = %v → %v, want %v → %v", p.Kind, from, to, tc.from, tc.to)
			}
		})
	}
}

func samePlace(a, b *Place) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// TestResubmitRename: a resubmit renames a pending, paused or ended job
// (its plan and event carry the new type, and its count moves with it),
// and refuses to rename a running one, which its worker renames.
func TestResubmitRename(t *testing.T) {
	for _, st := range states {
		r := row(st)
		p, err := Resubmit(7, r, &store.ResubmitParams{ID: 7, RunAt: later, Rename: "u"}, nil, now)
		if st == store.Running {
			if errOf(err) != store.ErrInvalid.Error() {
				t.Errorf("running: %v, want ErrInvalid", err)
			}
			continue
		}
		if err != nil || p.Type != "u" || p.Event.Type != "u" {
			t.Errorf("%s: plan type %q event %q err %v", st, p.Type, p.Event.Type, err)
			continue
		}
		from, to := Moves(r, &p)
		if from == nil || to == nil || to.Type != "u" || from.Type != "t" {
			t.Errorf("%s: moves %v → %v, want from t to u", st, from, to)
		}
	}
}

// TestUpdateRunTimes: an update's run time relative to the store's time
// (RunIn, in whole seconds) and at the next slot: a new schedule's from
// the job's run time, its own from its slot; only a pending or paused job
// moves.
func TestUpdateRunTimes(t *testing.T) {
	sched := "SCHEDULED, +1 HOUR"
	at := now.Add(700 * time.Millisecond)
	r := row(store.Pending)
	p, err := Update(7, r, &store.UpdateParams{ID: 7, RunIn: 5 * time.Second}, nil, at)
	if err != nil || !p.RunAt.Equal(now.Add(5*time.Second)) {
		t.Errorf("run in 5 s: %v %v", p.RunAt, err)
	}
	// Run time 11:00, slot 11:30, now 12:00: the hourly slot after 11:00
	// that is to come is 13:00, after 11:30 it is 12:30.
	r.Schedule, r.Slot = "SCHEDULED, +2 HOURS", now.Add(-30*time.Minute)
	all := store.MissedAll
	p, err = Update(7, r, &store.UpdateParams{ID: 7, Schedule: &sched, Missed: &all, NextSlot: true}, nil, now)
	if err != nil || !p.RunAt.Equal(now.Add(time.Hour)) || !p.Slot.Equal(p.RunAt) {
		t.Errorf("a new schedule from the run time: %v (slot %v) %v", p.RunAt, p.Slot, err)
	}
	r.Schedule = sched
	p, err = Update(7, r, &store.UpdateParams{ID: 7, NextSlot: true}, nil, now)
	if err != nil || !p.RunAt.Equal(now.Add(30*time.Minute)) {
		t.Errorf("its own schedule from its slot: %v %v", p.RunAt, err)
	}
	run := row(store.Running)
	run.Schedule = sched
	if p, err = Update(7, run, &store.UpdateParams{ID: 7, NextSlot: true}, nil, now); err != nil || !p.RunAt.Equal(run.RunAt) {
		t.Errorf("a running job moved to %v %v", p.RunAt, err)
	}
	if _, err = Update(7, run, &store.UpdateParams{ID: 7, RunIn: time.Second}, nil, now); !errors.Is(err, store.ErrFinished) {
		t.Errorf("run in on a running job: %v", err)
	}
}

// TestResubmitHandBack: Bedrock's RequeueJobs hands a running job's run
// back at once (keeping the attempt when asked), leaves a paused one, and
// resubmits the others.
func TestResubmitHandBack(t *testing.T) {
	for _, st := range states {
		for _, keep := range []bool{false, true} {
			r := row(st)
			p, err := Resubmit(7, r, &store.ResubmitParams{ID: 7, RunAt: early, HandBack: true, KeepAttempt: keep, Rename: "u"}, nil, now)
			if err != nil {
				t.Fatalf("%v: %v", st, err)
			}
			want := map[store.State]Kind{store.Running: KindRequeue, store.Paused: KindKeep, store.Pending: KindUpdate, store.Waiting: KindUpdate}[st]
			if want == 0 && st != store.Paused {
				want = KindRevive
			}
			if p.Kind != want {
				t.Errorf("%v: plan %s, want %s", st, p.Kind, want)
			}
			if st == store.Running && (p.Attempt != map[bool]int{false: 0, true: 1}[keep] || !p.RunAt.Equal(early) || p.Type != "u") {
				t.Errorf("running, keep %v: %+v", keep, p)
			}
		}
	}
}

// TestTimeout checks a run timeout's rules: the lease ends with the run,
// a heartbeat past it is refused, and the sweep fails the attempt with
// "timed out after …", retried after the back-off.
func TestTimeout(t *testing.T) {
	started := now.Add(-10 * time.Second)
	running := func(timeout time.Duration, leaseUntil time.Time) *Row {
		r := row(store.Running)
		r.StartedAt, r.Timeout, r.LeaseUntil = started, timeout, leaseUntil
		return r
	}
	hb := func(r *Row, at time.Time) (Plan, error) {
		return Heartbeat(r, &store.HeartbeatParams{Lease: store.Lease{ID: 7, Token: tok}}, time.Minute, at)
	}
	for _, c := range []struct {
		name      string
		timeout   time.Duration
		at        time.Time
		wantLease time.Time // zero: refused
	}{
		{"no timeout", 0, now, now.Add(time.Minute)},
		{"timeout beyond the lease", time.Hour, now, now.Add(time.Minute)},
		{"timeout within the lease: the lease ends with the run", 30 * time.Second, now, started.Add(30 * time.Second)},
		{"just before the run's end", 10*time.Second + time.Microsecond, now, now.Add(time.Microsecond)},
		{"at the run's end", 10 * time.Second, now, time.Time{}},
		{"past the run's end", 5 * time.Second, now, time.Time{}},
	} {
		p, err := hb(running(c.timeout, now.Add(time.Second)), c.at)
		switch {
		case c.wantLease.IsZero() && (!errors.Is(err, store.ErrWorkerConflict) || !strings.HasPrefix(err.Error(), "job 7 "+TimedOutAfter(c.timeout))):
			t.Errorf("%s: heartbeat %+v, %v; want it refused as timed out", c.name, p, err)
		case !c.wantLease.IsZero() && (err != nil || p.Kind != KindExtend || !p.LeaseUntil.Equal(c.wantLease)):
			t.Errorf("%s: heartbeat %+v, %v; want the lease extended to %v", c.name, p, err, c.wantLease)
		}
	}
	// A fixed lease is capped too.
	r := running(5*time.Second, started.Add(time.Hour))
	r.RetryAfter = time.Hour
	if p, err := hb(r, started.Add(time.Second)); err != nil || !p.LeaseUntil.Equal(started.Add(5*time.Second)) {
		t.Errorf("retry-after with a shorter timeout: %+v, %v; want the lease at the run's end", p, err)
	}

	for _, c := range []struct {
		name       string
		timeout    time.Duration
		leaseUntil time.Time
		attempt    int
		kind       Kind
		err        string
		backoff    bool
	}{
		{"lease ended before the run's end", time.Hour, now.Add(-time.Second), 1, KindRetry, LeaseExpired, false},
		{"lease reached the run's end", 10 * time.Second, started.Add(10 * time.Second), 1, KindRetry, "timed out after 10s", true},
		{"timed out on the last attempt", 10 * time.Second, started.Add(10 * time.Second), 3, KindDiscard, "timed out after 10s", false},
	} {
		r := running(c.timeout, c.leaseUntil)
		r.Attempt = c.attempt
		p := Expire(r, now)
		if p.Kind != c.kind || p.Error != c.err || !p.DropToken || !p.Event.Failed {
			t.Errorf("%s: Expire %+v, want %v with error %q", c.name, p, c.kind, c.err)
		}
		if c.backoff && (p.RunAt.Before(now.Add(900*time.Millisecond)) || p.RunAt.After(now.Add(1100*time.Millisecond))) {
			t.Errorf("%s: retry at %v, want after the back-off (1s ± 10%%) from %v", c.name, p.RunAt, now)
		}
		if c.kind == KindRetry && !c.backoff && !p.RunAt.Equal(now) {
			t.Errorf("%s: retry at %v, want at once", c.name, p.RunAt)
		}
	}
	r = running(10*time.Second, started.Add(10*time.Second))
	r.Schedule, r.Attempt = "every 1h", r.MaxAttempts
	if p := Expire(r, now); p.Kind != KindRecur || p.Error != "timed out after 10s" {
		t.Errorf("recurring job timed out on its last attempt: %+v, want its next slot", p)
	}
}
