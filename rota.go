// Package rota is a durable, fair background-job system. A program imports
// it to add jobs and run them with typed handlers, on an embedded SQLite
// database file by default:
//
//	import _ "github.com/rotajobs/rota/store/sqlite" // the embedded store
//
//	client, err := rota.Open("jobs.db")
//	...
//	client.Add(ctx, rota.AddParams{Type: "email.send", Data: data})
//
//	w := rota.NewWorker(client, rota.WorkerConfig{Concurrency: 8})
//	rota.Handle(w, "email.send", func(ctx context.Context, job *rota.Job, args Email) error {
//		return send(ctx, args)
//	})
//	w.Run(ctx) // until ctx ends, then a graceful shutdown
//
// The package imports no store: each lives in its own package under store/
// and registers itself when imported, as database/sql drivers do
// (store/sqlite needs cgo; store/postgres does not). A program that talks
// to a rota server uses package remote and links no store at all.
//
// Jobs survive crashes: an add or finish that returned without error is
// on disk. Every job runs at least once; a worker holds a job under a lease
// with a fencing token, and a worker whose lease was lost can no longer
// change the job.
package rota

import (
	"context"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// The job model is shared with the stores; these aliases make it part of
// this package's API. Each alias's comment lists its fields, since go doc
// shows an alias without them; go doc github.com/rotajobs/rota/store.Job
// (and so on) shows each field's own comment.
type (
	// Job is one job as stored. Its fields:
	//   - who it is: ID, Type, Key, Group, Priority, Meta, Data, BedrockID
	//     (its id in Bedrock's protocol, 0 if it has none);
	//   - where it is: State, RunAt, Attempt of MaxAttempts, BackoffBase and
	//     BackoffMax, Progress, Result, LastError and Errors (one
	//     AttemptError per failed attempt);
	//   - its run: Worker, Token, LeaseUntil, CancelRequested, Resubmit (it
	//     runs again when this attempt ends), RetryAfter (a fixed lease),
	//     Timeout (how long each run may last), ExpiresAt and Expired (its
	//     deadline, and whether it ended because that passed before it
	//     started);
	//   - the add that inserted it: UniqueFor and Debounce (its unique
	//     window and debounce, kept to show);
	//   - recurring jobs: Schedule, Missed, Slot;
	//   - families: Parent, HasChildren, ParentData, Children;
	//   - workflows: HasDeps (it was added after other jobs), DepPolicy,
	//     Deps (their outcomes, given to it by accept);
	//   - batches: Batch, the batch it is a member of (Client.AddBatch);
	//   - times: CreatedAt, StartedAt, PrevStartedAt, FinishedAt, UpdatedAt.
	Job = store.Job
	// State is a job's lifecycle state.
	State = store.State
	// AddParams describes a job to add: Type (required), Data (a JSON
	// object), Key (unique within the type), Group, Priority, RunAt, Meta,
	// MaxAttempts, BackoffBase and BackoffMax; Schedule and Missed for a
	// recurring job; RetryAfter for a fixed lease; Timeout to bound each
	// run; ExpiresAt for a deadline to start by; Unique and Overwrite for a unique add; UniqueFor and
	// UniqueStates for a unique window
	// (deduplication, throttle); Debounce for a keyed add whose job runs
	// once the adds stop; Parent to add a child of a running job; After
	// (job ids) and AfterKeys (earlier jobs of the same call, by key) to
	// make it wait for other jobs, with OnDepFailure saying what it does
	// when one fails; Batch to join a batch that is not done; BedrockID to give it a Bedrock id in the add's
	// transaction.
	AddParams = store.AddParams
	// NewBatch is a batch to add (Client.AddBatch): its first Jobs, its
	// callbacks OnComplete (added once every member has ended) and
	// OnSuccess (once every member completed), Open to keep it open for
	// more jobs until CloseBatch, and a Description.
	NewBatch = store.NewBatch
	// Batch is a batch as stored: ID, Description, Counts of its members
	// by outcome, Open, Done and DoneAt, the callbacks OnComplete and
	// OnSuccess and the jobs they added (CompleteJob, SuccessJob),
	// CreatedAt, and the distinct Groups and Types of its members and
	// callbacks (Wide: too many to keep), which decide whose reach holds
	// it (Reach.HasBatch).
	Batch = store.Batch
	// BatchCounts counts a batch's members: Total, Remaining (not ended),
	// Completed, Failed, Cancelled, Removed (removed before they ended).
	BatchCounts = store.BatchCounts
	// BatchListParams pages over batches, newest first: Before (an id)
	// and Limit.
	BatchListParams = store.BatchListParams
	// AcceptParams asks for due jobs, optionally waiting for them: Types,
	// Limit, DueBy, Worker, LeaseTimeout, Priority, Groups, SkipGroups
	// (groups passed over, as Bedrock's mocked jobs') and Wait.
	AcceptParams = store.AcceptParams
	// AddResult is the result of adding one job: Job, the job as stored
	// (its id is res.Job.ID), and Outcome, what the add did (Inserted,
	// Updated, Resubmitted or Requeued).
	AddResult = store.AddResult
	// Outcome says what an add or resubmit did.
	Outcome = store.Outcome
	// ResubmitParams asks for job ID to run again, at RunAt (zero: now),
	// or RunNow at the store's time, with Data (nil keeps the job's), and
	// Rename, a new type for a job that is not running (Bedrock's
	// RequeueJobs with a name); HandBack hands a running job's run back
	// at once, KeepAttempt leaving it counted (Bedrock's RequeueJobs).
	ResubmitParams = store.ResubmitParams
	// UpdateParams changes job ID in place (Client.Update): Data, Priority,
	// RunAt, Schedule and Missed, each left unchanged when nil or zero;
	// RunIn (a run time after the store's) and NextSlot (the schedule's
	// next slot) move a pending job by the store's clock.
	UpdateParams = store.UpdateParams
	// ListParams filters and pages a listing: Types, States, Groups,
	// Parent, Recurring, UpdatedSince; After (the cursor), Descending and
	// Limit.
	ListParams = store.ListParams
	// ListResult is one page of jobs: Jobs, and Next, the cursor of the
	// next page (0 when this is the last).
	ListResult = store.ListResult
	// Lease identifies a running job and proves its holder: ID and Token.
	Lease = store.Lease
	// HeartbeatParams extends a Lease and optionally updates the job's
	// Data and Progress.
	HeartbeatParams = store.HeartbeatParams
	// HeartbeatResult answers one heartbeat: LeaseUntil, the lease's new
	// end; Resubmit, whether the job runs again after this attempt; Err,
	// this heartbeat's error.
	HeartbeatResult = store.HeartbeatResult
	// FinishParams ends a worker's hold on a job: Lease, As (the Ending),
	// Result, Error and Permanent for a failure, RunAt for a snooze,
	// Rename, with a snooze, for a new type (Bedrock's RetryJob with a
	// name), and KeepAttempt, with a snooze or release, to leave the run
	// counted (Bedrock's RequeueJobs without decrementFailures). What it
	// changes besides the state goes in the same transaction: Data (any
	// ending), EndSchedule (complete), and with a snooze Priority, RunIn (a
	// delay from the store's time), AtNextSlot and DropEndedChildren.
	FinishParams = store.FinishParams
	// Ending is how a worker ends its hold on a job.
	Ending = store.Ending
	// TypeConfig is per-type configuration: Type, LeaseTimeout, Bands,
	// GroupMaxRunning, MaxRunning, Rate and Burst, Paused, Retention,
	// FailedRetention and Timeout (the default run timeout of its jobs
	// without their own).
	TypeConfig = store.TypeConfig
	// Rate is a rate of job starts, N per Per (a second, a minute or an
	// hour), on a type or a group (TypeConfig.Rate, GroupConfig.Rate), with
	// a Burst beside it; ParseRate reads "N/s", "N/m" and "N/h".
	Rate = store.Rate
	// Bands is a counting scheme interleaving two priority bands: High
	// and Low.
	Bands = store.Bands
	// GroupConfig sets a group's Weight, bound on running jobs
	// (MaxRunning), rate of starts (Rate, Burst), and whether it is Paused:
	// Group, for every type or for Type.
	GroupConfig = store.GroupConfig
	// Event is a committed change to a job, as subscriptions deliver it:
	// ID, Type, Group, State, Removed, Failed (the change ends a run that
	// failed, retried or not), Expired (it ends a job, or a recurring job's
	// slot, whose deadline passed before it started), Progress, Lease (a
	// tag of the lease it had), RunAt and At (when it was committed).
	Event = store.Event
	// Count is how many jobs (Jobs) of a Type and Group are in a State;
	// Expired counts those past their retention.
	Count = store.Count
	// AttemptError is the Error one Attempt ended with, and when (At).
	AttemptError = store.AttemptError
	// Missed is a recurring job's policy for slots it missed.
	Missed = store.Missed
	// Dep is the outcome of a job's dependency (AddParams.After), given
	// to the job when it runs (Job.Deps): its ID, Type, Key, Group, State,
	// Result and Error, or Removed when it was deleted before the job ran.
	Dep = store.Dep
	// DepPolicy is what a job added after others does when one of them
	// fails, is cancelled or is removed (AddParams.OnDepFailure).
	DepPolicy = store.DepPolicy
)

// Dependency failure policies (AddParams.OnDepFailure).
const (
	DepCancel = store.DepCancel
	DepRun    = store.DepRun
)

// Missed-slot policies of recurring jobs (AddParams.Missed).
const (
	MissedOnce = store.MissedOnce
	MissedSkip = store.MissedSkip
	MissedAll  = store.MissedAll
)

// Job states.
const (
	Pending   = store.Pending
	Running   = store.Running
	Paused    = store.Paused
	Completed = store.Completed
	Failed    = store.Failed
	Cancelled = store.Cancelled
	Waiting   = store.Waiting
)

// Add outcomes.
const (
	Inserted    = store.Inserted
	Updated     = store.Updated
	Resubmitted = store.Resubmitted
	Requeued    = store.Requeued
)

// Endings for FinishParams.As.
const (
	Complete = store.Complete
	Fail     = store.Fail
	Snooze   = store.Snooze
	Release  = store.Release
	Cancel   = store.Cancel
)

// Errors. Match them with errors.Is.
var (
	ErrNotFound       = store.ErrNotFound
	ErrWorkerConflict = store.ErrWorkerConflict
	ErrCanceled       = store.ErrCanceled
	ErrFinished       = store.ErrFinished
	ErrInvalid        = store.ErrInvalid
	ErrClosed         = store.ErrClosed
	ErrUnavailable    = store.ErrUnavailable
	ErrTooLarge       = store.ErrTooLarge
	ErrUnauthorized   = store.ErrUnauthorized
)

// MaxRate bounds Rate.N.
const MaxRate = store.MaxRate

// ParseRate reads a rate of job starts: "N/s", "N/m" or "N/h"; "" is no
// rate. A bad one fails with ErrInvalid, naming the field.
func ParseRate(s string) (Rate, error) { return check.ParseRate(s) }

// ParseState parses a state name.
func ParseState(name string) (State, error) { return store.ParseState(name) }

// QuotePattern returns the type pattern that selects the type name alone,
// whatever pattern characters (* ? [ {) it holds: "a?b" gives "a[?]b".
// Accept, Subscribe and a reach take patterns; a type with such
// characters is named exactly through its quoted pattern.
func QuotePattern(name string) string { return glob.Quote(name) }

// Reach is what a caller may reach (store.Reach): a server gives every
// request of a scoped token its reach, and the stores honour it. A program
// serving several tenants through one Client does the same with WithReach.
type Reach = store.Reach

// NewReach returns the reach of these group and type GLOB patterns; nil
// patterns reach every group or type.
func NewReach(groups, types []string) (*Reach, error) { return store.NewReach(groups, types) }

// WithReach returns ctx carrying reach r: the Client's operations with it
// see only jobs in reach (listings page over them, counts count them; a
// job out of reach, by id, by key or as a parent, is answered as a missing
// one by Get, GetMany, GetByKey, Cancel, Remove, Update and Resubmit,
// inside the store's transaction). Worker calls are fenced by the lease
// token, which only the job's own worker holds.
func WithReach(ctx context.Context, r *Reach) context.Context { return store.WithReach(ctx, r) }

type (
	// HistoryEntry is one line of a job's history (Client.History): At, when
	// it happened; Action, what ("added", "started", "attempt failed",
	// "ended", or a change: "cancel", "retry", "update", "pause type", …);
	// Audited, whether it is an audit record of a change someone made rather
	// than a fact of the job's row; Actor, who made the change (WithActor);
	// Detail, what it changed ("priority 0 → 5") or an attempt's error.
	HistoryEntry = store.HistoryEntry
)

// WithActor returns ctx naming who makes the changes made with it: the
// store records the name, with the time and what changed, for every
// Cancel, Remove, Update, Resubmit and change of a type's or group's
// settings made with ctx (the audit trail, read with Client.History). A
// server names each request's token itself; a program names itself, or
// the person it acts for. Without it the changes are recorded with no
// actor.
func WithActor(ctx context.Context, actor string) context.Context {
	return store.WithActor(ctx, actor)
}
