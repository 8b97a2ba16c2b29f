// Package lifecycle is rota's job state machine: every rule that decides
// how a job moves between states is written here once, as a pure function,
// and both stores apply its decisions.
//
// A store reads the rows a request concerns, asks this package what to do
// with each (Finish, Expire, ReaddTo, Cancel, Remove, Heartbeat,
// Update, UniqueAdd, SkipLate), and applies the returned Plan in its
// own transaction, in batches where it can; after a change to a job in a
// family it applies what Family asks of the rest of it. Recurring jobs'
// slots (recur.go), parent and child jobs (family.go) and unique adds
// (unique.go) have files of their own. The
// functions do no I/O and read no clock: the store passes the time its own
// statements use (the writer's clock for SQLite, the transaction's now()
// for PostgreSQL), so that a plan's times and the times the store writes
// are one.
//
// A Plan says what the job becomes (state, run time, attempt, the error to
// record, whether the lease is fenced out) and the event to publish once
// the change commits. Per-item refusals (a stale token, a missing job) come
// back as errors that match store.ErrWorkerConflict, store.ErrCanceled,
// store.ErrNotFound or store.ErrFinished, and leave the job unchanged.
package lifecycle

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// Row is the part of a job that the rules decide on.
type Row struct {
	ID          int64
	Type        string
	Group       string
	State       store.State
	Token       string // the current (or last) lease's token; "" when none
	Attempt     int
	MaxAttempts int
	BackoffBase time.Duration
	BackoffMax  time.Duration
	RunAt       time.Time
	// Resubmit says a producer asked for the job to run again after its
	// current run, at ResubmitAt (zero: at once).
	Resubmit   bool
	ResubmitAt time.Time
	// Schedule, Missed and Slot make the job recurring (store.Job);
	// StartedAt is when its last run started.
	Schedule  string
	Missed    store.Missed
	Slot      time.Time
	StartedAt time.Time
	// RetryAfter is the job's fixed lease (store.AddParams.RetryAfter);
	// LeaseUntil the end of its current lease.
	RetryAfter time.Duration
	LeaseUntil time.Time
	// Timeout bounds each run (store.AddParams.Timeout; 0: none): a run
	// started at StartedAt ends by StartedAt+Timeout (RunEnd).
	Timeout time.Duration
	// ExpiresAt is the job's deadline (store.AddParams.ExpiresAt; zero:
	// none): no run starts at or after it (deadline.go).
	ExpiresAt time.Time
	// Parent is the job's parent (0: none); HasChildren says it has had
	// children, and Unfinished whether any of them is pending, running or
	// paused (stores look it up for the rules that need it: Finish, and a
	// parent's resumption).
	Parent      int64
	HasChildren bool
	Unfinished  bool
	// HasDeps says the job was added after other jobs (store.AddParams.After),
	// DepsWaiting how many of them have not ended yet, and DepPolicy what
	// it does when one fails (deps.go). HasDependants says other jobs were
	// added after it while it had not ended: its end is theirs to learn.
	HasDeps       bool
	DepsWaiting   int
	DepPolicy     store.DepPolicy
	HasDependants bool
	// Batch is the batch the job is a member of (0: none): its endings
	// count there (BatchMove).
	Batch int64
}

// Kind is the transition a plan applies. Each store has one way of
// applying each kind.
type Kind uint8

const (
	// KindKeep writes nothing. Its Event, when it has one, is published again:
	// a completion repeated by the lease that made it.
	KindKeep Kind = iota
	// KindComplete: running → completed, with Result.
	KindComplete
	// KindRetry: running → pending at RunAt; the attempt failed and Error is
	// recorded as its error.
	KindRetry
	// KindDiscard: running → failed for good; Error is recorded as the
	// attempt's error.
	KindDiscard
	// KindRequeue: running → pending at RunAt with the attempt given back
	// (Attempt): a snooze or a release.
	KindRequeue
	// KindCancelRun: running → cancelled by its own worker; Error becomes the
	// last error.
	KindCancelRun
	// KindRunAgain: running → pending at RunAt as a new cycle: the data a
	// resubmission asked for, attempt 0, no result, errors or progress.
	KindRunAgain
	// KindCancel: pending, paused or running → cancelled by a producer;
	// CancelRequested tells a running job's worker on its next call.
	KindCancel
	// KindUpdate: a pending or paused job takes a re-add's values (Set).
	KindUpdate
	// KindMarkResubmit: a running job will run again when its run ends, at
	// Set.RunAt with Set.Data.
	KindMarkResubmit
	// KindRevive: an ended job is pending again as a new cycle, with a
	// re-add's values (Set).
	KindRevive
	// KindRemove deletes the job.
	KindRemove
	// KindExtend: a heartbeat extends the lease to LeaseUntil and may update
	// data and progress.
	KindExtend
	// KindRecur: a recurring job's run ended (completed, or failed for good
	// without a permanent failure): it is pending at RunAt, its next slot
	// (Slot), as a new cycle with attempt 0 and its data kept; Result and
	// Error (either may be empty) are the run's outcome.
	KindRecur
	// KindEdit: the job's data, priority, schedule and policy are set in
	// place (Set.Data, Set.Priority, Set.Schedule, Set.Missed; nil keeps),
	// and a pending or paused job's run time (RunAt); its state stays. An
	// update, or a unique add's overwrite.
	KindEdit
	// KindWait: a parent's run completed while it has unfinished children:
	// running → paused until the last of them ends. Its paused children
	// become pending (each a KindResume).
	KindWait
	// KindResume: paused → pending at RunAt: a child whose parent's run ended,
	// or a parent whose last unfinished child ended.
	KindResume
	// KindSkipSlots: a recurring job claimed after it missed slots, under
	// store.MissedSkip, goes back to pending at its next slot to come
	// (RunAt, Slot) without running; the claim's attempt is given back and
	// its token fenced out.
	KindSkipSlots
	// KindLapse: a pending job whose deadline passed (Lapse) ends
	// cancelled and expired with Error as its last error, or, recurring,
	// stays pending at its next slot (RunAt, Slot) with the slot's
	// deadline (ExpiresAt) and Error as its last error.
	KindLapse
	// KindDepsDone: one of a waiting job's dependencies ended: DepsWaiting
	// is the number still to end; at zero the job is pending at RunAt,
	// otherwise it stays waiting (deps.go).
	KindDepsDone
)

var kindNames = [...]string{"keep", "complete", "retry", "discard", "requeue", "cancel-run", "run-again",
	"cancel", "update", "mark-resubmit", "revive", "remove", "extend", "recur", "edit", "wait", "resume", "skip-slots", "lapse", "deps-done"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Plan is what a store does to one job.
type Plan struct {
	Kind Kind
	// State, RunAt and Attempt are the job's after the change.
	State   store.State
	RunAt   time.Time
	Attempt int
	// Error is recorded: as the attempt's error (appended to the job's
	// errors and its last error) for KindRetry and KindDiscard, as the last error
	// for KindCancelRun.
	Error string
	// Result is stored by KindComplete.
	Result []byte
	// DropToken fences the lease out for good: the token is cleared, so
	// that no finish with it passes for a repeat of an earlier one. Set
	// when a lease expired.
	DropToken bool
	// CancelRequested is set by KindCancel of a running job.
	CancelRequested bool
	// Set holds a re-add's values (KindUpdate, KindMarkResubmit, KindRevive).
	Set Readd
	// LeaseUntil is the lease's new end (KindExtend).
	LeaseUntil time.Time
	// Slot is a recurring job's new slot (KindRecur, KindSkipSlots, and KindUpdate and
	// KindRevive of a recurring job).
	Slot time.Time
	// ExpiresAt is the job's deadline after the change (KindLapse,
	// KindRecur, KindSkipSlots, KindRunAgain): a recurring job's moves
	// with its slot (DeadlineAt).
	ExpiresAt time.Time
	// Type is the job's new type, when a snooze renames it (KindRequeue).
	Type string
	// Outcome says what a re-add did (KindUpdate, KindMarkResubmit, KindRevive).
	Outcome store.Outcome
	// Touch is set in place before the transition, in the same
	// transaction: a finish that changes the job as it ends its run
	// (store.FinishParams' Data, Priority, EndSchedule).
	Touch Touch
	// DepsWaiting is a waiting job's count of unended dependencies after
	// the change (KindDepsDone).
	DepsWaiting int
	// DropEndedChildren deletes the job's ended children after the change
	// (a snooze that asks for it: Family).
	DropEndedChildren bool
	// Event is published when the change commits; an Event with ID 0 is
	// not published.
	Event store.Event
}

// Touch is what a finish changes in the job besides its state. The zero
// Touch changes nothing.
type Touch struct {
	// Data replaces the job's data (nil keeps it).
	Data []byte
	// Priority replaces the job's priority (nil keeps it).
	Priority *int
	// EndSchedule removes the job's schedule and slot.
	EndSchedule bool
}

// Any reports whether t changes anything.
func (t *Touch) Any() bool { return t.Data != nil || t.Priority != nil || t.EndSchedule }

// event is the event of r moving to state at runAt. It carries the lease r
// had before the change (store.Event.Lease).
func event(r *Row, state store.State, runAt time.Time) store.Event {
	return store.Event{ID: r.ID, Type: r.Type, Group: r.Group, State: state, RunAt: runAt, Lease: store.LeaseTag(r.Token)}
}

// Fence is the rule of every worker call: a missing (r nil) or cancelled
// job is ErrCanceled; a job that is not running under token is
// ErrWorkerConflict. id names the job when r is nil.
func Fence(id int64, r *Row, token string) error {
	switch {
	case r == nil:
		return fmt.Errorf("job %d was removed: %w", id, store.ErrCanceled)
	case r.State == store.Cancelled:
		return fmt.Errorf("job %d: %w", id, store.ErrCanceled)
	case r.State != store.Running:
		return fmt.Errorf("job %d is %s: %w", id, r.State, store.ErrWorkerConflict)
	case r.Token != token:
		return fmt.Errorf("job %d: %w", id, store.ErrWorkerConflict)
	}
	return nil
}

// Completes reports whether Finish plans a plain completion for p on r:
// p completes and changes nothing else (store.FinishParams.Plain), and r
// is running under p's token with no resubmission pending, no schedule and
// no family and no dependants. Stores complete such items in one
// set-based statement whose condition is exactly this (state = running
// AND token = p.Token AND NOT resubmit AND no schedule, parent,
// children or dependants), without reading the rows first; everything else takes
// Finish.
func Completes(r *Row, p *store.FinishParams) bool {
	return p.As == store.Complete && p.Plain() && r != nil && r.State == store.Running && r.Token == p.Token && !r.Resubmit &&
		r.Schedule == "" && r.Parent == 0 && !r.HasChildren && !r.HasDependants
}

// Finish decides how a worker's finish ends its run: r is the job (nil
// when it does not exist), result p's normalized result, now the store's
// time. The error is the item's own (fencing); the job is then unchanged.
func Finish(r *Row, p *store.FinishParams, result []byte, now time.Time) (Plan, error) {
	if r != nil && r.State == store.Completed && r.Token == p.Token && p.As == store.Complete {
		// Already completed by this lease (for example inside the
		// caller's transaction): the same finish again is a success.
		return Plan{Kind: KindKeep, State: r.State, RunAt: r.RunAt, Attempt: r.Attempt, Event: event(r, store.Completed, r.RunAt)}, nil
	}
	if err := Fence(p.ID, r, p.Token); err != nil {
		return Plan{}, err
	}
	plan, err := end(r, p, result, now)
	if err != nil {
		return Plan{}, err
	}
	plan.Touch = Touch{Data: p.Data, Priority: p.Priority, EndSchedule: p.EndSchedule}
	plan.DropEndedChildren = p.DropEndedChildren
	return plan, nil
}

// end decides the transition of a finish that passed its fence.
func end(r *Row, p *store.FinishParams, result []byte, now time.Time) (Plan, error) {
	if p.EndSchedule {
		// The run is the job's last: it ends as a job without a schedule
		// (the plan's Touch removes it).
		last := *r
		last.Schedule = ""
		r = &last
	}
	if r.Resubmit && p.As != store.Cancel {
		return runAgain(r, now, false), nil
	}
	errText := p.Error
	if errText == "" {
		errText = p.As.String()
	}
	switch p.As {
	case store.Complete:
		if r.Unfinished {
			return Plan{Kind: KindWait, State: store.Paused, RunAt: now, Attempt: r.Attempt, Result: result,
				Event: event(r, store.Paused, now)}, nil
		}
		if r.Schedule != "" {
			return recur(r, result, "", false, now), nil
		}
		return Plan{Kind: KindComplete, State: store.Completed, RunAt: r.RunAt, Attempt: r.Attempt, Result: result,
			Event: event(r, store.Completed, r.RunAt)}, nil
	case store.Fail:
		if !p.Permanent && r.Attempt < r.MaxAttempts {
			return retry(r, now.Add(Backoff(r.BackoffBase, r.BackoffMax, r.Attempt)), errText, false), nil
		}
		if r.Schedule != "" && !p.Permanent {
			return recur(r, nil, errText, false, now), nil
		}
		return discard(r, errText, false), nil
	case store.Snooze, store.Release:
		// A released job is due at once, but keeps an earlier run time,
		// and with it its place in the queue. A snoozed one runs at the
		// time asked for (now when none).
		runAt := now
		switch {
		case p.As == store.Release && r.RunAt.Before(now):
			runAt = r.RunAt
		case p.As != store.Snooze:
		case p.AtNextSlot && r.Schedule != "":
			runAt = NextSlot(r, now)
		case !p.RunAt.IsZero():
			runAt = p.RunAt
		case p.RunIn > 0:
			runAt = In(now, p.RunIn)
		}
		return requeue(r, runAt, p.Rename, p.KeepAttempt), nil
	case store.Cancel:
		return Plan{Kind: KindCancelRun, State: store.Cancelled, RunAt: r.RunAt, Attempt: r.Attempt, Error: errText,
			Event: event(r, store.Cancelled, r.RunAt)}, nil
	}
	return Plan{}, check.Invalidf("job %d: unknown ending %d", p.ID, p.As)
}

// requeue hands r's run back: pending at runAt, renamed to rename when
// set, its attempt given back unless keep.
func requeue(r *Row, runAt time.Time, rename string, keep bool) Plan {
	ev := event(r, store.Pending, runAt)
	if rename != "" {
		ev.Type = rename
	}
	attempt := max(r.Attempt-1, 0) // the run is given back
	if keep {
		attempt = r.Attempt
	}
	return Plan{Kind: KindRequeue, State: store.Pending, RunAt: runAt, Attempt: attempt, Type: rename, Event: ev}
}

// In is the time d after now, counted from now's whole second (Bedrock's
// times are whole seconds: a delay of 5 s from 12:00:00.7 is 12:00:05).
func In(now time.Time, d time.Duration) time.Time {
	return now.Truncate(time.Second).Add(d)
}

// KeyTaken is the refusal of a snooze or resubmit that would rename job id, whose key
// is key, to type typ in its group, where another job holds that key: a
// key is unique within a type and a group (store.AddParams.Key). The job
// is left as it is. Stores look the key up when a plan renames a job.
func KeyTaken(id int64, key, typ, group string) error {
	return check.Invalidf("job %d cannot be renamed to type %q: its key %q is taken in that type and group %q by another job (a key is unique within a type and a group)",
		id, typ, key, group)
}

// LeaseExpired is the error recorded for an attempt whose lease ran out.
const LeaseExpired = "lease expired: no heartbeat within the lease timeout"

// RetryAfterElapsed is the error recorded for a run of a job with a
// retry-after (a fixed lease) that did not finish within it.
func RetryAfterElapsed(d time.Duration) string {
	return fmt.Sprintf("retry-after %v elapsed: the run did not finish within its fixed lease", d)
}

// TimedOutAfter is the error recorded for a run that lasted longer than
// its job's timeout (store.AddParams.Timeout).
func TimedOutAfter(d time.Duration) string {
	return fmt.Sprintf("timed out after %v", d)
}

// RunTimedOut is the refusal of a heartbeat for job id's run that is past
// its timeout d: a worker conflict, which stops the worker.
func RunTimedOut(id int64, d time.Duration) error {
	return check.JobErrorf(store.ErrWorkerConflict, "job %d %s", id, TimedOutAfter(d))
}

// RunEnd is when r's current run must end: StartedAt+Timeout, zero when
// the job has no timeout or is not running.
func RunEnd(r *Row) time.Time {
	if r.Timeout <= 0 || r.StartedAt.IsZero() {
		return time.Time{}
	}
	return r.StartedAt.Add(r.Timeout)
}

// TimedOut reports whether r's run has lasted its timeout at now. A
// lease never outlasts the run's end (the claim and Heartbeat cap it), so
// the lease sweep takes a timed-out run back even while its worker sends
// heartbeats (Expire).
func TimedOut(r *Row, now time.Time) bool {
	end := RunEnd(r)
	return !end.IsZero() && !now.Before(end)
}

// Expire decides what becomes of a running job whose lease ended: it runs
// again (a new cycle when it was resubmitted, a retry due at once when it
// has attempts left) or fails. The expired lease is fenced out for good.
// A job with a retry-after runs again likewise, whether or not it sent
// heartbeats: that is what its fixed lease is for.
//
// A run that outlasted its job's Timeout (TimedOut) is a failed attempt
// like any other: it is retried after the job's back-off, and its error
// says it timed out.
func Expire(r *Row, now time.Time) Plan {
	why := LeaseExpired
	if r.RetryAfter > 0 {
		why = RetryAfterElapsed(r.RetryAfter)
	}
	// The claim and Heartbeat never let a lease outlast the run's end, so
	// a lease that reached it is a run that timed out (whatever the
	// sweep's clock).
	end := RunEnd(r)
	timedOut := !end.IsZero() && !r.LeaseUntil.Before(end)
	if timedOut {
		why = TimedOutAfter(r.Timeout)
	}
	switch {
	case r.Resubmit:
		return runAgain(r, now, true)
	case r.Attempt < r.MaxAttempts && timedOut:
		return retry(r, now.Add(Backoff(r.BackoffBase, r.BackoffMax, r.Attempt)), why, true)
	case r.Attempt < r.MaxAttempts:
		return retry(r, now, why, true)
	case r.Schedule != "":
		return recur(r, nil, why, true, now)
	}
	if r.RetryAfter > 0 {
		why = fmt.Sprintf("%s; it ran %d times, its limit", why, r.Attempt)
	}
	return discard(r, why, true)
}

func retry(r *Row, runAt time.Time, errText string, drop bool) Plan {
	ev := event(r, store.Pending, runAt)
	ev.Failed = true
	return Plan{Kind: KindRetry, State: store.Pending, RunAt: runAt, Attempt: r.Attempt, Error: errText, DropToken: drop, Event: ev}
}

func discard(r *Row, errText string, drop bool) Plan {
	ev := event(r, store.Failed, r.RunAt)
	ev.Failed = true
	return Plan{Kind: KindDiscard, State: store.Failed, RunAt: r.RunAt, Attempt: r.Attempt, Error: errText, DropToken: drop, Event: ev}
}

// runAgain ends a run whose job was resubmitted meanwhile: it is pending
// again at the requested time, with the requested data, as a new cycle.
// A recurring job resubmitted without a time runs again at its next slot.
func runAgain(r *Row, now time.Time, drop bool) Plan {
	runAt := now
	switch {
	case !r.ResubmitAt.IsZero():
		runAt = r.ResubmitAt
	case r.Schedule != "":
		runAt = NextSlot(r, now)
	}
	var slot time.Time
	if r.Schedule != "" {
		slot = runAt
	}
	return Plan{Kind: KindRunAgain, State: store.Pending, RunAt: runAt, Slot: slot, Attempt: 0, DropToken: drop,
		ExpiresAt: DeadlineAt(r, slot), Event: event(r, store.Pending, runAt)}
}

// Readd is what a re-add by key (an add of a job whose type, group and
// key exist) or a resubmit by id asks of the job. Nil pointers and zero values
// keep what the job has.
type Readd struct {
	// RunAt is when the job should run; zero means now, except that a
	// pending job keeps its run time when KeepRunAt is set (resubmit).
	RunAt     time.Time
	KeepRunAt bool
	// Data replaces the job's data (for a running job: its next run's).
	Data        []byte
	Priority    *int
	MaxAttempts int
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Meta, when not nil, replaces the job's metadata.
	Meta map[string]string
	// Schedule and Missed, when not nil, replace the job's (a re-add
	// always sets them; a resubmit keeps them).
	Schedule *string
	Missed   *store.Missed
	// Type, when set, renames a job that is not running (a resubmit's
	// Rename).
	Type string
	// ExpiresAt, when set, is the job's new deadline. A pending or paused
	// job keeps its own when it is zero; an ended job revived has none
	// then, since the one it had may have ended it.
	ExpiresAt time.Time
}

// ReaddOf is the re-add that an add of p, whose type, group and key
// exist, asks for; data is p's normalized data. It never moves the job to
// another group: a key is the job's within its type and group, and the
// same key in another group is another job.
func ReaddOf(p *store.AddParams, data []byte) Readd {
	return Readd{RunAt: p.RunAt, Data: data, Priority: &p.Priority,
		MaxAttempts: p.MaxAttempts, BackoffBase: p.BackoffBase, BackoffMax: p.BackoffMax, Meta: p.Meta,
		Schedule: &p.Schedule, Missed: &p.Missed, ExpiresAt: p.ExpiresAt}
}

// ReaddTo is couch_jobs' resubmit, without its bugs: a pending (or
// paused) job takes the new values and run time; a running one is marked
// to run again when its run ends; an ended one is pending again, as a new
// cycle. The plan's Set has its RunAt filled in.
func ReaddTo(r *Row, a Readd, now time.Time) Plan {
	sched := r.Schedule
	if a.Schedule != nil {
		sched = *a.Schedule
	}
	runAt := FirstRun(sched, a.RunAt, now)
	switch {
	case r.State == store.Pending || r.State == store.Paused || r.State == store.Waiting:
		// A pending job keeps its run time when asked to (resubmit), and
		// a recurring one its slot while its schedule stays the same: a
		// producer that re-adds its recurring jobs at every start moves
		// none of them.
		keep := a.KeepRunAt || (sched != "" && sched == r.Schedule)
		if a.RunAt.IsZero() && keep {
			runAt = r.RunAt
		}
		a.RunAt = runAt
		ev := event(r, r.State, runAt)
		if a.Type != "" {
			ev.Type = a.Type
		}
		return Plan{Kind: KindUpdate, State: r.State, RunAt: runAt, Slot: slotOf(sched, r, runAt, keep), Attempt: r.Attempt, Set: a,
			Type: a.Type, Outcome: store.Updated, Event: ev}
	case r.State == store.Running:
		// Only the next run's time and data, and the schedule: the job
		// keeps its group and settings, and nothing is published until
		// the run ends. A recurring job asked to run again without a
		// time runs at its next slot.
		if !a.RunAt.IsZero() || sched == "" {
			a.RunAt = runAt
		}
		return Plan{Kind: KindMarkResubmit, State: r.State, RunAt: r.RunAt, Slot: r.Slot, Attempt: r.Attempt, Set: a, Outcome: store.Resubmitted}
	}
	a.RunAt = runAt
	ev := event(r, store.Pending, runAt)
	if a.Type != "" {
		ev.Type = a.Type
	}
	return Plan{Kind: KindRevive, State: store.Pending, RunAt: runAt, Slot: slotOf(sched, r, runAt, false), Attempt: 0, Set: a,
		Type: a.Type, Outcome: store.Requeued, Event: ev}
}

// slotOf is the slot of a job re-added with schedule sched to run at
// runAt: none without a schedule, its own when it keeps its time.
func slotOf(sched string, r *Row, runAt time.Time, keep bool) time.Time {
	switch {
	case sched == "":
		return time.Time{}
	case keep && !r.Slot.IsZero():
		return r.Slot
	}
	return runAt
}

// Reached is job r as a caller with this reach finds it: nil, a missing
// job, when it is out of reach, so that every rule answers it word for
// word as it answers a missing one. Stores apply it to the rows they load
// for an operation by id, inside its transaction, so that a job added
// after a front end checked an id is as safe as one added before.
func Reached(r *Row, reach *store.Reach) *Row {
	if r != nil && !reach.Has(r.Type, r.Group) {
		return nil
	}
	return r
}

// Cancel decides a producer's cancel of job id (r nil when it does not
// exist). A job already cancelled stays so without an error or an event;
// another ended job is ErrFinished.
func Cancel(id int64, r *Row) (Plan, error) {
	switch {
	case r == nil:
		return Plan{}, check.NotFound(id)
	case r.State == store.Cancelled:
		return Plan{Kind: KindKeep, State: r.State, RunAt: r.RunAt, Attempt: r.Attempt}, nil
	case r.State.Terminal():
		return Plan{}, check.JobErrorf(store.ErrFinished, "job %d has already ended (%s)", id, r.State)
	}
	return Plan{Kind: KindCancel, State: store.Cancelled, RunAt: r.RunAt, Attempt: r.Attempt,
		CancelRequested: r.State == store.Running, Event: event(r, store.Cancelled, r.RunAt)}, nil
}

// Remove decides the removal of job id (r nil when it does not exist):
// any job can be removed; its event carries its last state.
func Remove(id int64, r *Row) (Plan, error) {
	if r == nil {
		return Plan{}, check.NotFound(id)
	}
	ev := event(r, r.State, time.Time{})
	ev.Removed = true
	return Plan{Kind: KindRemove, State: r.State, RunAt: r.RunAt, Attempt: r.Attempt, Event: ev}, nil
}

// Heartbeat decides a heartbeat on r (nil when the job does not exist):
// fenced like every worker call, it extends the lease by lease from now,
// but not past the end of the run's timeout (RunEnd); a run past it is
// refused (ErrWorkerConflict), so that its worker stops.
// An event is published when it changes what subscribers see (data or
// progress).
func Heartbeat(r *Row, p *store.HeartbeatParams, lease time.Duration, now time.Time) (Plan, error) {
	if err := Fence(p.ID, r, p.Token); err != nil {
		return Plan{}, err
	}
	if TimedOut(r, now) {
		// The run is over, whatever the worker thinks: it is told so,
		// and the lease sweep retries the job.
		return Plan{}, RunTimedOut(p.ID, r.Timeout)
	}
	pl := Plan{Kind: KindExtend, State: store.Running, RunAt: r.RunAt, Attempt: r.Attempt, LeaseUntil: now.Add(lease)}
	if r.RetryAfter > 0 {
		pl.LeaseUntil = r.LeaseUntil // a fixed lease: heartbeats update data and progress only
	}
	if end := RunEnd(r); !end.IsZero() && pl.LeaseUntil.After(end) {
		pl.LeaseUntil = end // no lease outlasts the run's timeout
	}
	if p.Progress != nil || p.Data != nil {
		pl.Event = HeartbeatEvent(r.ID, r.Type, r.Group, p)
	}
	return pl, nil
}

// HeartbeatEvent is the event of a heartbeat that updates data or
// progress, for stores that extend leases in one set-based statement.
func HeartbeatEvent(id int64, typ, grp string, p *store.HeartbeatParams) store.Event {
	ev := store.Event{ID: id, Type: typ, Group: grp, State: store.Running, Lease: store.LeaseTag(p.Token)}
	if p.Progress != nil {
		ev.Progress = *p.Progress
	}
	return ev
}

// CompletedEvent is the event of a plain completion (see Completes), for
// stores that complete in one set-based statement.
func CompletedEvent(id int64, typ, grp string, runAt time.Time, token string) store.Event {
	return store.Event{ID: id, Type: typ, Group: grp, State: store.Completed, RunAt: runAt, Lease: store.LeaseTag(token)}
}

// Backoff returns the delay before retry number attempt (1-based):
// base·2^(attempt−1), capped at max, with ±10% jitter.
func Backoff(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max || d <= 0 {
		d = max
	}
	jitter := time.Duration(float64(d) * 0.1 * (2*rand.Float64() - 1))
	return d + jitter
}

// After makes r the row as it is once p is applied: where the job is
// counted after it (Moves).
func After(r *Row, p *Plan) {
	if p.Touch.EndSchedule {
		r.Schedule, r.Slot = "", time.Time{}
	}
	switch p.Kind {
	case KindKeep, KindExtend:
		return
	case KindEdit:
		r.RunAt = p.RunAt
		if p.Set.Schedule != nil {
			r.Schedule, r.Slot = *p.Set.Schedule, p.Slot
		}
		if p.Set.Missed != nil {
			r.Missed = *p.Set.Missed
		}
		return
	case KindMarkResubmit:
		r.Resubmit, r.ResubmitAt = true, p.Set.RunAt
		if p.Set.Schedule != nil {
			r.Schedule = *p.Set.Schedule
		}
		if p.Set.Missed != nil {
			r.Missed = *p.Set.Missed
		}
		return
	case KindUpdate, KindRevive:
		if p.Kind == KindRevive {
			r.HasDependants = false // they learnt of its end already
		}
		if p.Set.MaxAttempts != 0 {
			r.MaxAttempts = p.Set.MaxAttempts
		}
		if p.Set.BackoffBase != 0 {
			r.BackoffBase = p.Set.BackoffBase
		}
		if p.Set.BackoffMax != 0 {
			r.BackoffMax = p.Set.BackoffMax
		}
		if p.Set.Schedule != nil {
			r.Schedule = *p.Set.Schedule
		}
		if p.Set.Missed != nil {
			r.Missed = *p.Set.Missed
		}
	case KindRunAgain, KindCancel, KindCancelRun, KindComplete, KindDiscard:
		r.Resubmit, r.ResubmitAt = false, time.Time{}
	case KindDepsDone:
		r.DepsWaiting = p.DepsWaiting
	}
	r.State, r.RunAt, r.Attempt = p.State, p.RunAt, p.Attempt
	switch p.Kind {
	case KindLapse, KindRecur, KindSkipSlots, KindRunAgain:
		r.ExpiresAt = p.ExpiresAt
	case KindRevive:
		r.ExpiresAt = p.Set.ExpiresAt
	case KindUpdate:
		if !p.Set.ExpiresAt.IsZero() {
			r.ExpiresAt = p.Set.ExpiresAt
		}
	}
	if p.Type != "" {
		r.Type = p.Type
	}
	if r.Schedule != "" && !p.Slot.IsZero() {
		r.Slot = p.Slot
	}
	if p.DropToken {
		r.Token = ""
	}
}

// Place is where a job is counted: stores keep counts of jobs per type,
// group and state for the fair scheduler.
type Place struct {
	Type, Group string
	State       store.State
}

// Moves says how p moves job r (as it is before p) between the places
// stores count: it leaves from and enters to; to is nil when p removes
// the job, and both are nil when p leaves the job where it was.
func Moves(r *Row, p *Plan) (from, to *Place) {
	switch p.Kind {
	case KindKeep, KindExtend, KindEdit, KindMarkResubmit:
		return nil, nil
	}
	from = &Place{r.Type, r.Group, r.State}
	if p.Kind == KindRemove {
		return from, nil
	}
	after := *r
	After(&after, p)
	if to = (&Place{after.Type, after.Group, after.State}); *to == *from {
		return nil, nil
	}
	return from, to
}

// ClaimedEvent is the event of a job an accept claimed: pending → running
// under a new lease, the attempt counted. Stores claim in set-based
// statements (their condition: pending and due; their change: state
// running, attempt + 1, a fresh token, the lease's end), in the order the
// fair scheduler (internal/rules/fair) decides.
func ClaimedEvent(j *store.Job) store.Event {
	return store.Event{ID: j.ID, Type: j.Type, Group: j.Group, State: store.Running, Lease: store.LeaseTag(j.Token)}
}

// Resubmit decides a resubmit of job id (r nil when it does not exist):
// the job runs again (see ReaddTo), at p.RunAt or, when pending, at its
// own run time, with data (p's normalized data, nil to keep the job's).
// With p.HandBack a running job's run is handed back at once instead
// (Bedrock's RequeueJobs), and a paused one is left to its family.
func Resubmit(id int64, r *Row, p *store.ResubmitParams, data []byte, now time.Time) (Plan, error) {
	if r == nil {
		return Plan{}, check.NotFound(id)
	}
	if p.HandBack {
		switch r.State {
		case store.Running:
			return requeue(r, FirstRun("", p.RunAt, now), p.Rename, p.KeepAttempt), nil // RunNow: now too
		case store.Paused:
			return Plan{Kind: KindKeep, State: r.State, RunAt: r.RunAt, Attempt: r.Attempt, Outcome: store.Unchanged}, nil
		}
	}
	if p.Rename != "" && r.State == store.Running {
		return Plan{}, check.Invalidf("job %d is running: only its worker can rename it, when it snoozes it", id)
	}
	runAt := p.RunAt
	if p.RunNow {
		runAt = now
	}
	return ReaddTo(r, Readd{RunAt: runAt, KeepRunAt: true, Data: data, Type: p.Rename}, now), nil
}
