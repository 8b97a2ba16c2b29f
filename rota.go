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

	"github.com/rotajobs/rota/store"
)

// The job model is shared with the stores; these aliases make it part of
// this package's API.
type (
	// Job is one job as stored.
	Job = store.Job
	// State is a job's lifecycle state.
	State = store.State
	// AddParams describes a job to add.
	AddParams = store.AddParams
	// AcceptParams asks for due jobs, optionally waiting for them.
	AcceptParams = store.AcceptParams
	// AddResult is the result of adding one job, with what the add did.
	AddResult = store.AddResult
	// Outcome says what an add or resubmit did.
	Outcome = store.Outcome
	// ResubmitParams asks for a job to run again.
	ResubmitParams = store.ResubmitParams
	// UpdateParams changes a job in place (Client.Update).
	UpdateParams = store.UpdateParams
	// ListParams filters and pages a listing.
	ListParams = store.ListParams
	// ListResult is one page of jobs.
	ListResult = store.ListResult
	// Lease identifies a running job and proves its holder.
	Lease = store.Lease
	// HeartbeatParams extends a lease and optionally updates the job.
	HeartbeatParams = store.HeartbeatParams
	// HeartbeatResult answers one heartbeat.
	HeartbeatResult = store.HeartbeatResult
	// FinishParams ends a worker's hold on a job.
	FinishParams = store.FinishParams
	// Ending is how a worker ends its hold on a job.
	Ending = store.Ending
	// TypeConfig is per-type configuration.
	TypeConfig = store.TypeConfig
	// Bands is a counting scheme interleaving two priority bands.
	Bands = store.Bands
	// GroupConfig sets a group's weight and bound on running jobs.
	GroupConfig = store.GroupConfig
	// Event is a committed change to a job, as subscriptions deliver it.
	Event = store.Event
	// Count is how many jobs of a type and group are in a state.
	Count = store.Count
	// AttemptError is the error one attempt ended with.
	AttemptError = store.AttemptError
	// Missed is a recurring job's policy for slots it missed.
	Missed = store.Missed
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

// ParseState parses a state name.
func ParseState(name string) (State, error) { return store.ParseState(name) }

// Reach is what a caller may reach (store.Reach): a server gives every
// request of a scoped token its reach, and the stores honour it. A program
// serving several tenants through one Client does the same with WithReach.
type Reach = store.Reach

// NewReach returns the reach of these group and type GLOB patterns; nil
// patterns reach every group or type.
func NewReach(groups, types []string) (*Reach, error) { return store.NewReach(groups, types) }

// WithReach returns ctx carrying reach r: the Client's operations with it
// see only jobs in reach (listings page over them, counts count them, a
// parent out of reach is answered as a missing one).
func WithReach(ctx context.Context, r *Reach) context.Context { return store.WithReach(ctx, r) }
