package store

import (
	"context"
	"time"
)

// BatchCounts counts a batch's members by where they are: Remaining have
// not ended; the others ended as named (Removed: removed before they
// ended). Total is every job that joined.
type BatchCounts struct {
	Total     int64 `json:"total"`
	Remaining int64 `json:"remaining"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	Cancelled int64 `json:"cancelled"`
	Removed   int64 `json:"removed"`
}

// Add returns c plus d, field by field.
func (c BatchCounts) Add(d BatchCounts) BatchCounts {
	return BatchCounts{
		Total: c.Total + d.Total, Remaining: c.Remaining + d.Remaining, Completed: c.Completed + d.Completed,
		Failed: c.Failed + d.Failed, Cancelled: c.Cancelled + d.Cancelled, Removed: c.Removed + d.Removed,
	}
}

// Times returns c with every field multiplied by n.
func (c BatchCounts) Times(n int64) BatchCounts {
	return BatchCounts{
		Total: c.Total * n, Remaining: c.Remaining * n, Completed: c.Completed * n,
		Failed: c.Failed * n, Cancelled: c.Cancelled * n, Removed: c.Removed * n,
	}
}

// Batch is a batch as stored: a set of jobs added together (Batches.AddBatch), with
// callbacks: jobs added when every member has ended (OnComplete), and
// when every member completed (OnSuccess). A member ends when it
// completes, fails for good, is cancelled, or is removed before it ended;
// a retry is not an ending. The batch is done once it is closed (not
// Open) and no member remains; its callbacks are then added, exactly
// once, in the transaction that ended its last member. Jobs join an open
// or running batch by an add with AddParams.Batch (a member's handler can
// add more members: the batch cannot be done while that member runs);
// a done batch takes no more.
type Batch struct {
	ID          int64       `json:"id"`
	Description string      `json:"description,omitempty"`
	Counts      BatchCounts `json:"counts"`
	// Open says the batch waits for Close before it can be done, so that
	// jobs can join it in several adds from outside it.
	Open bool `json:"open,omitempty"`
	// Done says every member ended after the batch closed; its callbacks
	// were added then (DoneAt), and its counts no longer change.
	Done   bool      `json:"done"`
	DoneAt time.Time `json:"done_at,omitzero"`
	// OnComplete and OnSuccess are the callbacks (nil: none).
	OnComplete *AddParams `json:"-"`
	OnSuccess  *AddParams `json:"-"`
	// CompleteJob and SuccessJob are the jobs the callbacks added, once
	// the batch is done (0: none added).
	CompleteJob int64     `json:"complete_job,omitempty"`
	SuccessJob  int64     `json:"success_job,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// Groups and Types are the distinct groups and types of the jobs
	// added to the batch and of its callbacks, in the order they came;
	// Wide says there were more than MaxBatchReach of either, and then
	// they are not kept. A reach holds the batch only when it holds all
	// of them (Reach.HasBatch), so that a token never sees a batch that
	// holds another tenant's jobs.
	Groups []string `json:"-"`
	Types  []string `json:"-"`
	Wide   bool     `json:"-"`
}

// MaxBatchReach bounds how many distinct groups, and types, a batch keeps
// (Batch.Groups, Batch.Types): a batch over it is Wide, in the reach of
// unscoped tokens only.
const MaxBatchReach = 64

// NewBatch is a batch to add (Batches.AddBatch).
type NewBatch struct {
	// Jobs are the first members, added atomically with the batch: a bad
	// job refuses the whole batch. A job that the add finds instead of
	// inserting (its key's holder, a unique match) is not a member.
	Jobs []AddParams
	// OnComplete, when set, is added once every member has ended, however
	// it ended; OnSuccess once every member completed. Each callback's
	// data is a JSON object, to which the batch is added under "batch":
	// {"id", "counts", "callback": "complete" or "success"}. A callback
	// may run after other jobs (After), not as a child (Parent): it is
	// added when the batch is done, when a parent may have ended. A job
	// it runs after that is removed (or retired) before then counts as
	// removed, and its OnDepFailure applies.
	OnComplete *AddParams
	OnSuccess  *AddParams
	// Open keeps the batch open for more jobs (AddParams.Batch) until
	// CloseBatch: its callbacks wait for the close. A batch that is not
	// open is done as soon as its members have ended (at once, with no
	// members).
	Open bool
	// Description is a note shown with the batch (at most 255 bytes).
	Description string
}

// BatchListParams pages over batches, newest first.
type BatchListParams struct {
	Before int64 // batches with a lower id than this; 0: from the newest
	Limit  int   // 1..MaxListLimit; zero means 100
}

// BatchCallbackField is the field of a callback's data that carries its
// batch.
const BatchCallbackField = "batch"

// Batches is what a store that keeps batches implements (both of rota's
// stores do).
type Batches interface {
	// AddBatch adds a batch and its first jobs in one transaction, and
	// returns it with the jobs' results.
	AddBatch(ctx context.Context, b NewBatch) (Batch, []AddResult, error)
	// GetBatch returns a batch, ErrNotFound when there is none.
	GetBatch(ctx context.Context, id int64) (Batch, error)
	// ListBatches lists batches, newest first.
	ListBatches(ctx context.Context, p BatchListParams) ([]Batch, error)
	// CloseBatch closes an open batch: it is done once its members have
	// ended (at once when they have). Closing a closed batch changes
	// nothing.
	CloseBatch(ctx context.Context, id int64) (Batch, error)
}
