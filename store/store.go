// Package store defines the contract between rota's engine and its storage
// backends: the job row, the parameters of every operation, the errors they
// return, and the Store interface that each backend (store/sqlite,
// store/postgres) implements and that store/storetest verifies.
//
// Every operation is batch-first: it takes and returns slices, so that a
// backend can serve many jobs with one transaction and one fsync. A batch
// that contains bad input is rejected as a whole and changes nothing; an
// item that fails for a reason of its own (a stale token, a missing job)
// gets its own error in the per-item results while the rest of the batch
// proceeds.
//
// The package holds types and the contract only, as River's rivertype
// does: the rules (validation in internal/rules/check, every state
// transition in internal/rules/lifecycle) are written once inside the
// module, and the protocols above translate, they do not re-implement
// them. Backends may offer more through optional interfaces: Retirer
// (retention), Importer, Tokens, FullWatcher and BedrockIDs.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Errors returned by stores. They are matched with errors.Is; stores wrap
// them with the detail of what failed.
var (
	// ErrNotFound: no job has that id, or no job has that type, group
	// and key.
	ErrNotFound = errors.New("job not found")
	// ErrWorkerConflict: the token is stale, or the job is not running.
	// The caller lost its lease; nothing was changed.
	ErrWorkerConflict = errors.New("worker conflict: lease token is not current")
	// ErrCanceled: the job was cancelled or removed while the caller ran
	// it. Nothing was changed.
	ErrCanceled = errors.New("job canceled")
	// ErrFinished: the operation needs a job that has not ended (for
	// example, cancelling a completed job).
	ErrFinished = errors.New("job already finished")
	// ErrInvalid: the input is malformed. Stores wrap it with what is
	// wrong.
	ErrInvalid = errors.New("invalid input")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
	// ErrUnavailable: the store's database cannot be reached now (a lost
	// or refused connection); the call may be tried again later. A write
	// whose connection broke after it was sent may or may not have been
	// applied, so only idempotent calls are safe to repeat blindly.
	ErrUnavailable = errors.New("store unavailable")
	// ErrUnauthorized: the server behind a remote store refused the call's
	// credentials (no token, or a wrong or revoked one: HTTP 401) or
	// their permission (a token that may not make this call: 403), or a
	// caller's reach (WithReach) does not allow the call (a type's
	// settings, another tenant's group settings). Sending the call again
	// does not help; it needs another token.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrTooLarge: the input is over a documented limit (MaxAddBatch);
	// such errors match ErrInvalid too.
	ErrTooLarge = errors.New("input too large")
)

// invalidf is an error that matches ErrInvalid and says what is wrong
// (check.Invalidf, for the parsers of this package's types).
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// State is a job's lifecycle state. Scheduled (pending, not yet due) and
// retrying (pending after a failed attempt) are views of Pending, not states.
type State uint8

const (
	Pending   State = iota // waiting to run; due at RunAt
	Running                // held by a worker under a lease
	Paused                 // a parent waiting for its children
	Completed              // finished successfully (terminal)
	Failed                 // failed for good (terminal)
	Cancelled              // cancelled (terminal)
	// Waiting: added after other jobs (AddParams.After), it waits for
	// them to end, then becomes pending. It comes last so that the
	// numbers of the other states stay those the stores hold, and so that
	// an older node, which claims state pending only, never claims it.
	Waiting
)

var stateNames = [...]string{"pending", "running", "paused", "completed", "failed", "cancelled", "waiting"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// Terminal reports whether the state is one a job does not leave by itself.
func (s State) Terminal() bool { return s >= Completed && s <= Cancelled }

// Valid reports whether s is one of the defined states.
func (s State) Valid() bool { return int(s) < len(stateNames) }

// ParseState parses a state name as returned by String.
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, invalidf("unknown state %q (want one of pending, running, paused, completed, failed, cancelled, waiting)", name)
}

// MarshalText encodes the state as its name.
func (s State) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("invalid state %d", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes a state name.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// AttemptError is the error one attempt ended with.
type AttemptError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// Job is one job row as a store returns it.
type Job struct {
	ID       int64           `json:"id"`
	Type     string          `json:"type"`
	Key      string          `json:"key,omitempty"`
	Group    string          `json:"group"`
	Priority int             `json:"priority"`
	State    State           `json:"state"`
	RunAt    time.Time       `json:"run_at"`
	Data     json.RawMessage `json:"data"`

	Attempt     int           `json:"attempt"`
	MaxAttempts int           `json:"max_attempts"`
	BackoffBase time.Duration `json:"backoff_base"` // JSON: a Go duration string, "1s"
	BackoffMax  time.Duration `json:"backoff_max"`

	// Token fences worker calls; it is set while the job runs and kept
	// after it ends so that a repeated finish by the same lease is
	// recognised.
	Token      string    `json:"token,omitempty"`
	Worker     string    `json:"worker,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`

	CancelRequested bool `json:"cancel_requested,omitempty"`
	Resubmit        bool `json:"resubmit,omitempty"`

	Progress  float64         `json:"progress"`
	LastError string          `json:"last_error,omitempty"`
	Errors    []AttemptError  `json:"errors,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`

	// Meta is what the producer attached to the job besides its data
	// (AddParams.Meta): trace context, routing.
	Meta map[string]string `json:"meta,omitempty"`

	// Schedule makes the job recurring (AddParams.Schedule); Slot is the
	// slot of its schedule that its current cycle stands for, and RunAt,
	// while it is pending, its next run.
	Schedule string    `json:"schedule,omitempty"`
	Missed   Missed    `json:"missed,omitempty"`
	Slot     time.Time `json:"slot,omitzero"`

	// RetryAfter gives the job a fixed lease (AddParams.RetryAfter).
	RetryAfter time.Duration `json:"retry_after,omitempty"` // JSON: a Go duration string
	// Timeout bounds each run of the job (AddParams.Timeout); 0 for none.
	Timeout time.Duration `json:"timeout,omitempty"` // JSON: a Go duration string
	// ExpiresAt is the job's deadline (AddParams.ExpiresAt), zero for
	// none: no run starts after it. For a recurring job it is the current
	// slot's, and moves with the slot. Expired says the job ended because
	// its deadline passed before it started (State is Cancelled, and
	// LastError says when it expired).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	Expired   bool      `json:"expired,omitempty"`
	// UniqueFor and Debounce are the unique window and the debounce the
	// add that inserted the job asked for (AddParams); 0 for none. They
	// act on later adds; the job keeps them to show.
	UniqueFor time.Duration `json:"unique_for,omitempty"` // JSON: a Go duration string
	Debounce  time.Duration `json:"debounce,omitempty"`   // JSON: a Go duration string

	// Parent is the job's parent (AddParams.Parent), 0 for none;
	// HasChildren says the job has had children (list them with
	// ListParams.Parent).
	Parent      int64 `json:"parent,omitempty"`
	HasChildren bool  `json:"has_children,omitempty"`
	// Batch is the batch the job is a member of (AddParams.Batch), 0 for
	// none.
	Batch int64 `json:"batch,omitempty"`
	// BedrockID is the job's id in Bedrock's protocol (BedrockIDs), 0
	// until the protocol first names the job.
	BedrockID int64 `json:"bedrock_id,omitempty"`
	// ParentData is the parent's data, given to a child by accept.
	ParentData json.RawMessage `json:"parent_data,omitempty"`
	// Children are the parent's children that ended since its last
	// completed run, given to a parent by accept.
	Children []Child `json:"children,omitempty"`
	// HasDeps says the job was added after other jobs (AddParams.After);
	// DepPolicy is what it does when one of them fails.
	HasDeps   bool      `json:"has_deps,omitempty"`
	DepPolicy DepPolicy `json:"on_dep_failure,omitempty"`
	// Deps are the outcomes of the jobs it was added after, in the order
	// they were named, given by accept to a job that has them.
	Deps []Dep `json:"deps,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// PrevStartedAt is when the run before the current one started (zero
	// before a second run): Bedrock's lastRun as a dequeue reports it.
	PrevStartedAt time.Time `json:"prev_started_at,omitzero"`
	FinishedAt    time.Time `json:"finished_at,omitzero"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// jobJSON is Job's JSON form: durations are strings such as "1.5s", which
// people and other languages read more easily than nanoseconds.
type jobJSON struct {
	*jobAlias
	BackoffBase string `json:"backoff_base"`
	BackoffMax  string `json:"backoff_max"`
	RetryAfter  string `json:"retry_after,omitempty"`
	Timeout     string `json:"timeout,omitempty"`
	UniqueFor   string `json:"unique_for,omitempty"`
	Debounce    string `json:"debounce,omitempty"`
}

type jobAlias Job

// MarshalJSON encodes the job with durations as strings.
func (j Job) MarshalJSON() ([]byte, error) {
	a := jobAlias(j)
	v := jobJSON{jobAlias: &a, BackoffBase: j.BackoffBase.String(), BackoffMax: j.BackoffMax.String()}
	if j.RetryAfter > 0 {
		v.RetryAfter = j.RetryAfter.String()
	}
	if j.Timeout > 0 {
		v.Timeout = j.Timeout.String()
	}
	if j.UniqueFor > 0 {
		v.UniqueFor = j.UniqueFor.String()
	}
	if j.Debounce > 0 {
		v.Debounce = j.Debounce.String()
	}
	return json.Marshal(v)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (j *Job) UnmarshalJSON(b []byte) error {
	v := jobJSON{jobAlias: (*jobAlias)(j)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var err error
	if v.BackoffBase != "" {
		if j.BackoffBase, err = time.ParseDuration(v.BackoffBase); err != nil {
			return fmt.Errorf("backoff_base: %w", err)
		}
	}
	if v.BackoffMax != "" {
		if j.BackoffMax, err = time.ParseDuration(v.BackoffMax); err != nil {
			return fmt.Errorf("backoff_max: %w", err)
		}
	}
	if v.RetryAfter != "" {
		if j.RetryAfter, err = time.ParseDuration(v.RetryAfter); err != nil {
			return fmt.Errorf("retry_after: %w", err)
		}
	}
	if v.Timeout != "" {
		if j.Timeout, err = time.ParseDuration(v.Timeout); err != nil {
			return fmt.Errorf("timeout: %w", err)
		}
	}
	if v.UniqueFor != "" {
		if j.UniqueFor, err = time.ParseDuration(v.UniqueFor); err != nil {
			return fmt.Errorf("unique_for: %w", err)
		}
	}
	if v.Debounce != "" {
		if j.Debounce, err = time.ParseDuration(v.Debounce); err != nil {
			return fmt.Errorf("debounce: %w", err)
		}
	}
	return nil
}

// LeaseTag returns the fingerprint of a lease token that changes carry;
// empty for an empty token.
func LeaseTag(token string) string {
	if token == "" {
		return ""
	}
	// FNV-1a, 64 bits, written out: it runs for every change of every
	// job, and hash/fnv would allocate.
	h := uint64(14695981039346656037)
	for i := 0; i < len(token); i++ {
		h ^= uint64(token[i])
		h *= 1099511628211
	}
	var buf [16]byte
	return string(strconv.AppendUint(buf[:0], h, 16))
}

// Lease returns the job's id and token, which worker calls carry.
func (j Job) Lease() Lease { return Lease{ID: j.ID, Token: j.Token} }

// Defaults applied by stores when AddParams leaves a field zero.
const (
	DefaultMaxAttempts  = 20
	DefaultBackoffBase  = time.Second
	DefaultBackoffMax   = time.Hour
	DefaultLeaseTimeout = 30 * time.Second
	// MinLeaseTimeout is the shortest lease a type or an accept may ask
	// for: a shorter one would expire before any worker could heartbeat.
	MinLeaseTimeout = time.Millisecond
	// MaxDataSize bounds a job's data, result and error texts.
	MaxDataSize = 1 << 20
	// MaxDataDepth bounds how deeply a job's data and result nest (objects
	// and arrays within each other).
	MaxDataDepth = 64
	// MaxAddBatch bounds how many jobs one add takes.
	MaxAddBatch = 10000
	// DefaultRetryAfterRuns is MaxAttempts of a job with a RetryAfter
	// that does not set it: Bedrock's limit of 10 runs.
	DefaultRetryAfterRuns = 10
)

// AddParams describes a job to add.
type AddParams struct {
	Type string // required; 1..255 bytes of UTF-8, no control characters, no . or .. between slashes
	// Key, when set, is unique within Type and Group: adding a job whose
	// type, group and key exist re-adds the existing job (see Outcome).
	// The same key in another group is another job: a re-add never moves
	// a job to another group, and never finds a job of another group.
	Key      string
	Group    string
	Priority int
	// RunAt is when the job becomes due; zero means now.
	RunAt time.Time
	// Data is a JSON object; nil means {}.
	Data json.RawMessage
	// MaxAttempts bounds retries; zero means DefaultMaxAttempts.
	MaxAttempts int
	// BackoffBase and BackoffMax shape the exponential retry delay
	// base·2^(attempt−1), capped at BackoffMax, with ±10% jitter. Zero
	// means the defaults.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Meta is small string pairs carried with the job beside its data, for
	// infrastructure rather than the handler: a trace context (otelrota),
	// routing hints. At most MaxMetaKeys keys and MaxMetaSize bytes; nil
	// keeps a re-added job's.
	Meta map[string]string
	// Schedule makes the job recurring: a Bedrock repeat ("SCHEDULED,
	// +1 HOUR", "FINISHED, +5 MINUTES", "DAILY") or a cron expression
	// ("*/5 * * * *", "@daily", "CRON_TZ=Europe/Paris 0 9 * * 1-5"). When
	// a run completes, or fails for good other than by a permanent failure,
	// the job is pending again at its next slot, with its data as the run
	// left it. Without RunAt, a repeat first runs now and a cron
	// expression at its first match.
	Schedule string
	// Missed is what the job does about slots that pass while it cannot
	// run; the zero value is MissedOnce.
	Missed Missed
	// RetryAfter, when positive, gives every run of the job a fixed lease
	// of this length that heartbeats do not extend (Bedrock's retryAfter):
	// a run not finished by then is taken back and the job runs again, up
	// to MaxAttempts runs (DefaultRetryAfterRuns when zero), after which
	// it fails. For work that may hang or die without a trace, where
	// running it again is the cure.
	RetryAfter time.Duration
	// Timeout, when positive, bounds each run of the job: a run that lasts
	// longer is stopped (its handler's context ends, and the store takes
	// the job back even while its worker sends heartbeats) and counts as a
	// failed attempt, "timed out after …", retried under the job's policy.
	// It is at least MinLeaseTimeout. Zero takes the type's default
	// (TypeConfig.Timeout) when the job is started.
	Timeout time.Duration
	// ExpiresAt, when set, is the job's deadline: a job not started by
	// then is never started. It ends cancelled, with Job.Expired set and
	// a last error "expired at …, not started", or, when recurring, skips
	// to its next slot, whose deadline is as far after the slot as
	// ExpiresAt is after the first (RunAt). A deadline that has passed
	// already is accepted: the job expires at once. It must be after
	// RunAt when RunAt is given.
	ExpiresAt time.Time
	// Unique makes the add return the existing job of this type in this
	// group, if there is one that has not completed (pending, running, paused, failed or
	// cancelled; the lowest id when there are several), instead of adding
	// another: Bedrock's unique by name. The outcome is Unchanged, unless
	// Overwrite applies. Unique and Key do not go together.
	Unique bool
	// Overwrite, with Unique, updates an existing job whose data differ
	// from the add's: the add's data are merged into the job's by JSON
	// merge patch (RFC 7396: keys kept in order, new ones appended, null
	// removes), and its priority and schedule become the add's (so an add
	// without them clears them), as Bedrock does; its state and run time
	// stay. The outcome is then Updated.
	Overwrite bool
	// UniqueFor, when positive, makes the add return an existing job
	// instead of adding one when that job was created less than UniqueFor
	// ago (by the store's clock), is of the add's type and group, and has
	// the add's key, or, without a key, the same data (normalized JSON,
	// compared byte for byte); the outcome is then Unchanged. Within the
	// window a keyed add is not a re-add: the job stays as it is. Past it,
	// a keyed add re-adds the job and an add without a key adds one. Not
	// with Unique. Adds of one type, group and key (or data) are
	// serialised across nodes, so concurrent adds make one job.
	UniqueFor time.Duration
	// UniqueStates narrows the states a job must be in for UniqueFor to
	// find it; nil means any state but cancelled (a completed or failed
	// job within the window still counts: a throttle).
	UniqueStates []State
	// Debounce, when positive, makes a keyed add run its job Debounce
	// after the add (by the store's clock), and another add of the key
	// before then replace the pending job's data and push its run time to
	// Debounce after that add: the last add wins, and the job runs once
	// the adds stop for Debounce. It is a re-add (see Outcome): Updated
	// says the add debounced a pending job. Needs Key; not with RunAt,
	// Unique or UniqueFor.
	Debounce time.Duration
	// Parent makes the job a child of that job, which must be running (a
	// child of a running parent is paused until the parent finishes its
	// run) or paused waiting for its children (the child is pending at
	// once). A parent whose run completes while it has unfinished
	// children is paused until the last of them ends; it then runs again
	// and sees them (Job.Children). A child cannot have children.
	Parent int64
	// After names jobs this one runs after: it is added waiting (state
	// Waiting) until every one of them has ended, then becomes pending
	// (due at RunAt, or at once when RunAt has passed). A dependency that
	// fails for good, is cancelled or is removed applies OnDepFailure.
	// Each must exist (in the caller's reach); a dependency that has
	// already ended counts as ended. The graph is acyclic by
	// construction: a job can only name jobs that exist before it.
	After []int64
	// AfterKeys names, by their Key, jobs added earlier in the same call
	// (Add with several jobs), so that a whole workflow is added in one
	// atomic call; the latest earlier item with that key is meant.
	AfterKeys []string
	// OnDepFailure is what the job does when a dependency fails, is
	// cancelled or is removed: DepCancel (the zero value) cancels it, and
	// so on down the graph; DepRun runs it once the rest have ended.
	OnDepFailure DepPolicy
	// Batch makes the job a member of that batch (Batches), which must
	// not be done: the batch's callbacks wait for it to end.
	Batch int64
	// BedrockID gives the job a Bedrock id in the add's transaction
	// (BedrockIDs; a job the add finds keeps the one it has), returned in
	// the result's Job.BedrockID, so that Bedrock's CreateJob is one
	// transaction. Only stores that implement BedrockIDs honour it.
	BedrockID bool
}

// Dep is a job's dependency (AddParams.After) as the job sees it when it
// runs: the dependency's outcome.
type Dep struct {
	ID    int64  `json:"id"`
	Type  string `json:"type"`
	Key   string `json:"key,omitempty"`
	Group string `json:"group,omitempty"`
	State State  `json:"state"`
	// Removed says the dependency was deleted (removed by someone, or by
	// retention once its type's retention passed) before the job ran:
	// its type, key, result and error are no longer known, and State is
	// Cancelled when the job was removed before it ended.
	Removed bool            `json:"removed,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// DepPolicy is what a job added after others (AddParams.After) does when
// one of them fails for good, is cancelled or is removed.
type DepPolicy uint8

const (
	// DepCancel cancels the job, and so its own dependants under the
	// same policy, down the graph.
	DepCancel DepPolicy = iota
	// DepRun runs the job anyway once all its dependencies have ended; it
	// sees their outcomes (Job.Deps).
	DepRun
)

var depPolicyNames = [...]string{"cancel", "run"}

func (d DepPolicy) String() string {
	if int(d) < len(depPolicyNames) {
		return depPolicyNames[d]
	}
	return fmt.Sprintf("DepPolicy(%d)", d)
}

// Valid reports whether d is one of the defined policies.
func (d DepPolicy) Valid() bool { return int(d) < len(depPolicyNames) }

// ParseDepPolicy parses a policy name as returned by String; "" is
// DepCancel.
func ParseDepPolicy(name string) (DepPolicy, error) {
	if name == "" {
		return DepCancel, nil
	}
	for i, n := range depPolicyNames {
		if n == name {
			return DepPolicy(i), nil
		}
	}
	return 0, invalidf("unknown dependency failure policy %q (want cancel or run)", name)
}

// MarshalText encodes the policy as its name.
func (d DepPolicy) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("invalid dependency failure policy %d", d)
	}
	return []byte(d.String()), nil
}

// UnmarshalText decodes a policy name.
func (d *DepPolicy) UnmarshalText(b []byte) error {
	v, err := ParseDepPolicy(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MaxAfter bounds how many dependencies one job may name (After and
// AfterKeys together): a fan-in of that many costs the add one lock and
// one edge each, and each dependency's end one step.
const MaxAfter = 100000

// Child is a child job as its parent sees it when it runs again.
type Child struct {
	ID        int64           `json:"id"`
	State     State           `json:"state"`
	Data      json.RawMessage `json:"data"`
	Result    json.RawMessage `json:"result,omitempty"`
	LastError string          `json:"last_error,omitempty"`
}

// Missed is a recurring job's policy for slots that passed while it could
// not run (the server was down, its type or group paused, its run took
// longer than a slot). A slot counts as missed when the next one falls due
// before the job starts.
type Missed uint8

const (
	// MissedOnce runs the job once for all the slots it missed, then keeps
	// to its schedule from the next slot to come.
	MissedOnce Missed = iota
	// MissedSkip skips missed slots: a job that would start late runs at
	// its next slot to come instead.
	MissedSkip
	// MissedAll runs the job once for each missed slot, one run after the
	// other, as Bedrock does for repeats it does not re-anchor.
	MissedAll
)

var missedNames = [...]string{"once", "skip", "all"}

func (m Missed) String() string {
	if int(m) < len(missedNames) {
		return missedNames[m]
	}
	return fmt.Sprintf("Missed(%d)", m)
}

// Valid reports whether m is one of the defined policies.
func (m Missed) Valid() bool { return int(m) < len(missedNames) }

// ParseMissed parses a policy name as returned by String; "" is MissedOnce.
func ParseMissed(name string) (Missed, error) {
	if name == "" {
		return MissedOnce, nil
	}
	for i, n := range missedNames {
		if n == name {
			return Missed(i), nil
		}
	}
	return 0, invalidf("unknown missed-slot policy %q (want once, skip or all)", name)
}

// MarshalText encodes the policy as its name.
func (m Missed) MarshalText() ([]byte, error) {
	if int(m) >= len(missedNames) {
		return nil, fmt.Errorf("invalid missed-slot policy %d", m)
	}
	return []byte(m.String()), nil
}

// UnmarshalText decodes a policy name.
func (m *Missed) UnmarshalText(b []byte) error {
	v, err := ParseMissed(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Bounds of AddParams.Meta.
const (
	MaxMetaKeys = 32
	MaxMetaSize = 4096 // keys and values together
)

// Outcome says what an add or resubmit did.
type Outcome uint8

const (
	Inserted    Outcome = iota + 1 // a new job
	Updated                        // a pending job got new data and run time
	Resubmitted                    // a running job will run again when its worker ends
	Requeued                       // an ended job is pending again
	Unchanged                      // a unique add found the job and changed nothing
)

var outcomeNames = [...]string{"", "inserted", "updated", "resubmitted", "requeued", "unchanged"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", o)
}

// MarshalText encodes the outcome as its name.
func (o Outcome) MarshalText() ([]byte, error) {
	if o == 0 || int(o) >= len(outcomeNames) {
		return nil, fmt.Errorf("invalid outcome %d", o)
	}
	return []byte(o.String()), nil
}

// UnmarshalText decodes an outcome name.
func (o *Outcome) UnmarshalText(b []byte) error {
	for i, n := range outcomeNames {
		if i > 0 && n == string(b) {
			*o = Outcome(i)
			return nil
		}
	}
	return fmt.Errorf("unknown outcome %q (want inserted, updated, resubmitted, requeued or unchanged)", b)
}

// AddResult is the result of adding one job.
type AddResult struct {
	Job     Job
	Outcome Outcome
}

// ResubmitParams asks for a job to run again (couch_jobs' resubmit).
type ResubmitParams struct {
	ID int64
	// RunAt is when it should run again; zero keeps a pending job's run
	// time and means now otherwise.
	RunAt time.Time
	// Data, when set, replaces the job's data for the next run.
	Data json.RawMessage
	// Rename, when set, gives a pending, paused or ended job a new type
	// (Bedrock's RequeueJobs with a name); a running job is renamed by
	// its worker's snooze (FinishParams.Rename).
	Rename string
	// HandBack makes a running job pending at once (at RunAt; now when
	// zero), its run handed back and its worker fenced out, rather than
	// run again after its run ends; it may then be renamed. A paused job
	// (a family's) is left to its family's rules. Bedrock's RequeueJobs.
	HandBack bool
	// KeepAttempt, with HandBack, leaves a handed-back run counted in the
	// job's attempts (Bedrock's RequeueJobs without decrementFailures).
	KeepAttempt bool
	// RunNow, with a zero RunAt, makes the job run at the store's time,
	// a pending one too (the dashboard's "retry").
	RunNow bool
}

// UpdateParams changes a job in place, in any state, without moving it
// to another state (Bedrock's UpdateJob): an operator's or producer's
// edit. Nil and zero fields keep what the job has.
type UpdateParams struct {
	ID int64
	// Data replaces the job's data (a running job's worker sees it at its
	// next accept of the job, and may overwrite it with a heartbeat).
	Data json.RawMessage
	// Priority replaces the job's priority.
	Priority *int
	// RunAt moves a pending or paused job's run time; for a job in
	// another state it is an error.
	RunAt time.Time
	// Schedule and Missed replace a job's schedule ("" removes it) and
	// missed-slot policy; a pending job keeps its run time.
	Schedule *string
	Missed   *Missed
	// RunIn, when RunAt is zero, moves a pending or paused job's run time
	// to RunIn after the store's time, counted from its whole second.
	RunIn time.Duration
	// NextSlot, when RunAt and RunIn are zero, moves a pending or paused
	// recurring job to its schedule's next slot after the store's time:
	// from its run time under a new Schedule (Bedrock's UpdateJob with a
	// repeat), from the slot its run stands for under its own (Bedrock's
	// FinishJob of a job whose fixed lease ended). A job in another state
	// keeps its run time.
	NextSlot bool
}

// ListParams filters and pages a listing. Jobs come in id order.
type ListParams struct {
	Types  []string // exact type names; empty means all
	States []State  // empty means all
	Groups []string // empty means all
	Parent int64    // only the children of this job; 0 means any
	// Recurring lists only jobs with a schedule (no index serves it: it
	// reads the jobs the other filters leave).
	Recurring bool
	// UpdatedSince, when set, lists only jobs that changed at or after it
	// (an event stream's replay; no index serves it).
	UpdatedSince time.Time
	// After is the cursor: only jobs with a larger id (or smaller, when
	// Descending) are listed. Zero starts at the beginning.
	After      int64
	Descending bool
	Limit      int // 1..1000; zero means 100
}

// MaxNameLen bounds type names, keys, groups and worker names, in bytes.
const MaxNameLen = 255

// MaxListLimit bounds ListParams.Limit.
const MaxListLimit = 1000

// MaxStreamPatterns bounds the type patterns of one subscription (an event
// stream): every change is matched against every stream's patterns (once
// per type name), so a stream may not ask for an unbounded number. One
// pattern may hold alternatives ({a,b,c}).
const MaxStreamPatterns = 32

// ListResult is one page of a listing.
type ListResult struct {
	Jobs []Job
	// Next is the cursor of the next page, zero when this was the last.
	Next int64
}

// AcceptParams asks for due jobs to run.
type AcceptParams struct {
	// Types are type names or GLOB patterns (* ? [...]); at least one.
	Types []string
	// Limit is how many jobs at most; zero means 1.
	Limit int
	// DueBy accepts jobs whose RunAt is no later than this; zero means now.
	DueBy time.Time
	// Worker names the caller, for people reading the job.
	Worker string
	// LeaseTimeout overrides the type's lease timeout when positive.
	LeaseTimeout time.Duration
	// Priority, when set, accepts only jobs of this priority (Bedrock's
	// GetJob with jobPriority); the fair order holds among them.
	Priority *int
	// Groups, when set, accepts only jobs of groups that match one of
	// these GLOB patterns ("" is the default group): a token scoped to
	// some tenants takes only their jobs. Other groups are passed over as
	// if paused; the fair order holds among the rest.
	Groups []string
	// SkipGroups are groups (exact names) whose jobs this accept passes
	// over as if they were paused, whatever Groups says: Bedrock's
	// protocol keeps its mocked jobs in a group of their own, which only
	// its mock requests take.
	SkipGroups []string
	// Wait is how long to wait for a job when none is due; zero returns at
	// once. The rota.Client waits (on the store's change feed, or server
	// side through a WaitAccepter such as the remote client); a Store's
	// Accept returns at once. A store may read it as the caller waiting
	// for the first jobs rather than draining a backlog: PostgreSQL's then
	// returns what its first claim took, possibly fewer than Limit while
	// other groups have jobs due, which NextRunAt (at or before now)
	// shows.
	Wait time.Duration
}

// MaxAcceptLimit bounds AcceptParams.Limit.
const MaxAcceptLimit = 10000

// AcceptResult is what accept hands to a worker.
type AcceptResult struct {
	Jobs []Job
	// NextRunAt is the earliest RunAt among pending jobs of the requested
	// types that were not due, zero when there are none; a waiting
	// acceptor sleeps until then.
	NextRunAt time.Time
	// NextTokenAt is when the next job may start under a rate that held
	// back the accept (TypeConfig.Rate, GroupConfig.Rate): due jobs wait
	// for a token until then, and a waiting acceptor sleeps until then
	// rather than poll. Zero when no rate held it back.
	NextTokenAt time.Time
}

// Lease identifies a running job and the token that proves the caller
// holds it.
type Lease struct {
	ID    int64
	Token string
}

// HeartbeatParams extends a lease and optionally updates the job.
type HeartbeatParams struct {
	Lease
	Data     json.RawMessage // nil keeps the data
	Progress *float64        // nil keeps the progress; 0..100
}

// HeartbeatResult is the answer to one heartbeat.
type HeartbeatResult struct {
	LeaseUntil time.Time
	// Resubmit reports that a producer asked for the job to run again
	// after this run.
	Resubmit bool
	Err      error
}

// Ending is how a worker ends its hold on a job.
type Ending uint8

const (
	Complete Ending = iota + 1 // done; Result is stored
	Fail                       // failed; retried with back-off unless Permanent or out of attempts
	Snooze                     // run again at RunAt; the attempt is given back
	Release                    // hand back unfinished (shutdown); the attempt is given back
	Cancel                     // the worker cancels the job
)

var endingNames = [...]string{"", "complete", "fail", "snooze", "release", "cancel"}

func (e Ending) String() string {
	if int(e) < len(endingNames) {
		return endingNames[e]
	}
	return fmt.Sprintf("Ending(%d)", e)
}

// FinishParams ends a worker's hold on a job. It is the single fenced
// transition out of running.
type FinishParams struct {
	Lease
	As Ending
	// Result is the job's output (Complete); nil means none.
	Result json.RawMessage
	// Error is the reason (Fail, Cancel).
	Error string
	// Permanent makes a Fail final regardless of attempts left.
	Permanent bool
	// RunAt is when a snoozed job runs again.
	RunAt time.Time
	// Rename, with Snooze, gives the job a new type for its next run
	// (Bedrock's RetryJob with a name). A keyed job cannot take a type
	// whose job of its group holds its key (ErrInvalid, for the item).
	Rename string
	// KeepAttempt, with Snooze or Release, leaves the run counted in the
	// job's attempts, which they otherwise give back (Bedrock's
	// RequeueJobs without decrementFailures keeps a retryAfter job's
	// count of runs).
	KeepAttempt bool

	// The fields below change the job in the same transaction as the
	// finish, so that a command that ends a run and changes the job
	// (Bedrock's FinishJob, RetryJob and FailJob) is applied whole or not
	// at all. Times relative to now are resolved with the store's clock.

	// Data, when set, replaces the job's data (as a heartbeat's would),
	// with any ending.
	Data json.RawMessage
	// EndSchedule, with Complete, makes the run the job's last: its
	// schedule is removed, so that the completion ends it (Bedrock's
	// ignoreRepeat).
	EndSchedule bool
	// Priority, with Snooze, gives the job a new priority.
	Priority *int
	// RunIn, with Snooze and no RunAt, makes the job due RunIn after the
	// store's time, counted from its whole second (Bedrock's delay).
	RunIn time.Duration
	// AtNextSlot, with Snooze, makes a recurring job due at its
	// schedule's next slot, as if its run had ended (Bedrock's RetryJob of
	// a repeating job); a job without a schedule runs at RunAt or RunIn.
	AtNextSlot bool
	// DropEndedChildren, with Snooze, deletes the job's ended children,
	// as a completed run does, so that its next run sees only new ones
	// (Bedrock's RetryJob).
	DropEndedChildren bool
}

// Plain reports whether p only ends its run: it changes nothing else of
// the job (no data, schedule, priority or children), so that a store may
// complete it on its fast path.
func (p *FinishParams) Plain() bool {
	return p.Data == nil && !p.EndSchedule && p.Priority == nil && p.RunIn == 0 && !p.AtNextSlot && !p.DropEndedChildren
}

// TypeConfig is per-type configuration.
type TypeConfig struct {
	Type string
	// LeaseTimeout is how long a worker may go without a heartbeat
	// before its job is taken back; zero means DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// Bands interleaves two priority bands within each group, Docspell's
	// counting scheme: of every High+Low jobs a group hands out, High come
	// from its high band (priority > 0) and Low from its low band
	// (priority ≤ 0), each falling back to the other when it is empty. The
	// zero value means strict priority order.
	Bands Bands
	// GroupMaxRunning bounds the running jobs of each group of this type;
	// zero means no bound.
	GroupMaxRunning int
	// MaxRunning bounds the running jobs of the whole type, all groups
	// together, across every node of the store; zero means no bound.
	MaxRunning int
	// Timeout is the default run timeout of the type's jobs that have
	// none of their own (AddParams.Timeout); zero means none. It applies
	// when a job is started, so a change reaches the jobs waiting.
	Timeout time.Duration
	// Rate bounds how many of the type's jobs start per second, minute or
	// hour, all groups together, across every node of the store; the zero
	// Rate means none. Jobs over it wait (they are not failed), and the
	// rate is shared between the type's groups by their weights, what an
	// idle group leaves going to the others (docs/fairness.md).
	Rate Rate
	// Burst is how many jobs may start at once under Rate (the bucket's
	// size); zero means the default: N for a rate per second, else 1.
	Burst int
	// Paused stops accepts of the type: its jobs are added and wait, and
	// its running jobs finish, until it is resumed. Recurring jobs whose
	// slots pass meanwhile follow their missed-slot policy.
	Paused bool
	// Retention is how long the type's completed and cancelled jobs are
	// kept after they end, before they are deleted in the background
	// (Retirer); zero means DefaultRetention.
	Retention time.Duration
	// FailedRetention is how long the type's failed jobs are kept after
	// they fail, before they are deleted in the background; zero keeps
	// them until they are removed (Bedrock's promise: failed jobs are a
	// dead-letter list that people triage, never deleted automatically).
	FailedRetention time.Duration
}

// BedrockIDs is a store that gives jobs Bedrock's ids: random positive
// 63-bit integers, which Bedrock's clients expect, kept beside rota's ids
// (which count up). Both stores are; the Bedrock protocol needs one.
type BedrockIDs interface {
	// BedrockIDs returns the Bedrock id of each of these jobs (by rota
	// id), first giving one to those that have none; jobs that do not
	// exist are left out.
	BedrockIDs(ctx context.Context, ids []int64) (map[int64]int64, error)
	// ByBedrockID returns the rota ids of the jobs with these Bedrock
	// ids (by Bedrock id); unknown ones are left out.
	ByBedrockID(ctx context.Context, bids []int64) (map[int64]int64, error)
}

// DepsReader is a store that reads the dependencies between jobs
// (AddParams.After). Both stores are.
type DepsReader interface {
	// Deps returns job id's dependencies with their outcomes, in the
	// order it named them (none for a job without), and the ids of up to
	// limit jobs added after it, in id order.
	Deps(ctx context.Context, id int64, limit int) (deps []Dep, dependants []int64, err error)
}

// FullWatcher is a store whose change feed carries, until asked, only
// what a worker acts on: it leaves out jobs starting to run or reporting
// progress and jobs completing (events with State Running or Completed
// that are not removals). A remote server's event stream is one: every
// change costs the server and each client, starts and completions are
// nearly all of a busy feed, and a worker completed its own jobs (one
// completed by another party is learnt at its next heartbeat). The client
// asks for every change when something subscribes to changes.
type FullWatcher interface {
	// WatchAll makes the feed include every change from now on.
	WatchAll()
}

// Bounds of TypeConfig.Retention.
const (
	DefaultRetention = 7 * 24 * time.Hour
	MinRetention     = time.Second
	MaxRetention     = 100 * 365 * 24 * time.Hour
)

// Retirer is a store that deletes ended jobs once their type's retention
// has passed. Both stores are; the lease monitor (internal/expiry) calls
// it. On PostgreSQL only the elected leader deletes.
type Retirer interface {
	// Retire deletes up to limit completed and cancelled jobs that ended
	// more than their type's Retention before now, and failed jobs that
	// failed more than their type's FailedRetention before now (none when
	// it is zero), and returns how many it deleted. A child whose parent has not ended is kept: the
	// parent has yet to see it. Jobs that have not ended (recurring jobs
	// between runs, parents waiting for children) are never deleted.
	Retire(ctx context.Context, now time.Time, limit int) (int, error)
}

// Bands is a counting scheme such as 2,1.
type Bands struct {
	High int `json:"high"`
	Low  int `json:"low"`
}

// IsZero reports whether the scheme is unset (strict priority order).
func (b Bands) IsZero() bool { return b.High == 0 && b.Low == 0 }

// String formats the scheme as "high,low".
func (b Bands) String() string { return fmt.Sprintf("%d,%d", b.High, b.Low) }

// ParseBands parses "high,low", such as "2,1"; "" means unset.
func ParseBands(s string) (Bands, error) {
	if s == "" {
		return Bands{}, nil
	}
	var b Bands
	if n, err := fmt.Sscanf(s, "%d,%d", &b.High, &b.Low); err != nil || n != 2 || fmt.Sprintf("%d,%d", b.High, b.Low) != s {
		return Bands{}, invalidf("priority bands %q: want two counts such as \"2,1\"", s)
	}
	return b, b.Validate()
}

// Validate reports what is wrong with the scheme: a count outside
// 0..1000, or two zero counts in a set scheme.
func (b Bands) Validate() error {
	if b.High < 0 || b.Low < 0 || b.High > 1000 || b.Low > 1000 {
		return invalidf("priority bands %s: counts must be within 0..1000", b)
	}
	if !b.IsZero() && b.High+b.Low == 0 {
		return invalidf("priority bands %s: at least one count must be positive", b)
	}
	return nil
}

// Next returns whether the n-th pick (0-based) of a group comes from the
// high band.
func (b Bands) Next(n int) bool {
	if b.High+b.Low == 0 {
		return true
	}
	return n%(b.High+b.Low) < b.High
}

// GroupConfig sets a group's share of the workers and a bound on its
// running jobs. A group without one has weight 1 and no bound of its own.
type GroupConfig struct {
	Group string
	// Type scopes the setting to one type. Empty applies to every type:
	// MaxRunning then bounds the group's running jobs of all types
	// together, and Weight applies where no type-specific weight is set.
	Type string
	// MaxRunning bounds the group's running jobs; zero means no bound.
	MaxRunning int
	// Weight is the group's share relative to others while both have due
	// jobs: a group of weight 2 gets twice the jobs of a group of weight 1.
	// Zero means 1.
	Weight float64
	// Paused stops accepts from the group (of Type, or of every type):
	// its jobs wait until it is resumed.
	Paused bool
	// Rate bounds how many of the group's jobs (of Type, or of every type
	// together) start per second, minute or hour, across every node of the
	// store; the zero Rate means none. It holds beside the type's rate:
	// the tighter one holds.
	Rate Rate
	// Burst is how many jobs may start at once under Rate; zero means the
	// default: N for a rate per second, else 1.
	Burst int
}

// Rate is a rate of job starts: N per Per, where Per is a second, a
// minute or an hour ("50/s", "100/m", "10/h"). The zero Rate is none.
type Rate struct {
	N   int
	Per time.Duration
}

// MaxRate bounds Rate.N.
const MaxRate = 1_000_000

// IsZero reports whether r is no rate.
func (r Rate) IsZero() bool { return r.N == 0 }

// String is r as "N/s", "N/m" or "N/h"; "" for no rate.
func (r Rate) String() string {
	if r.IsZero() {
		return ""
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
	if unit == "" {
		return fmt.Sprintf("%d/%v", r.N, r.Per)
	}
	return fmt.Sprintf("%d/%s", r.N, unit)
}

// BurstOf is the burst a rate allows with burst set (zero: the default,
// N for a rate per second, else 1).
func (r Rate) BurstOf(burst int) int {
	switch {
	case r.IsZero():
		return 0
	case burst > 0:
		return burst
	case r.Per == time.Second:
		return r.N
	}
	return 1
}

// MaxWeight bounds GroupConfig.Weight.
const MaxWeight = 1000

// Count is how many jobs of one type and group are in one state.
type Count struct {
	Type  string `json:"type"`
	Group string `json:"group"`
	State State  `json:"state"`
	Jobs  int64  `json:"jobs"`
	// Expired is how many of these jobs (ended ones) are past their
	// type's retention, waiting for the background sweep to delete them.
	Expired int64 `json:"expired,omitempty"`
}

// Event is a committed change to a job, as delivered to Watch callbacks and
// subscribers, and sent on the HTTP API's event stream.
type Event struct {
	ID       int64   `json:"id"`
	Type     string  `json:"type"`
	Group    string  `json:"group"`
	State    State   `json:"state"`
	Removed  bool    `json:"removed,omitempty"` // the job was removed; State is its last state
	Progress float64 `json:"progress"`          // set with running changes
	// Failed says the change ends a run that failed: the job failed for
	// good, or is pending again for another attempt or its next slot. It
	// tells a retry from a job queued anew.
	Failed bool `json:"failed,omitempty"`
	// Expired says the change ends a job, or a recurring job's slot,
	// whose deadline (Job.ExpiresAt) passed before it started.
	Expired bool `json:"expired,omitempty"`
	// Lease fingerprints the lease the change concerns (LeaseTag of its
	// token; empty when none): a worker acts only on changes about its
	// own lease, so that a late event about an earlier run (over a
	// network, events can arrive after the answer to an accept) never
	// cancels the current one. It reveals nothing of the token.
	Lease string `json:"lease,omitempty"`
	// RunAt is the job's RunAt when pending, so that waiting acceptors
	// know when it becomes due.
	RunAt time.Time `json:"run_at,omitzero"`
	// At is when the change was delivered after its commit (the store
	// stamps it), by the clock of the process that committed it.
	At time.Time `json:"at"`
}

// Store is a durable job store. Implementations are safe for concurrent use.
type Store interface {
	// Add adds jobs, or re-adds existing ones by (type, group, key).
	Add(ctx context.Context, jobs []AddParams) ([]AddResult, error)
	// Get returns the jobs with these ids, in the same order; an id that
	// does not exist yields a Job with ID 0 in its place.
	Get(ctx context.Context, ids []int64) ([]Job, error)
	// GetByKey returns the job with this type, group and key (a key is
	// unique within a type and a group), or ErrNotFound.
	GetByKey(ctx context.Context, typ, group, key string) (Job, error)
	// List returns a page of jobs.
	List(ctx context.Context, p ListParams) (ListResult, error)
	// Stats counts jobs by type, group and state, ordered by those; combinations
	// with no jobs are left out. The counts are one consistent snapshot.
	Stats(ctx context.Context) ([]Count, error)
	// Resubmit asks for jobs to run again; per-item errors.
	Resubmit(ctx context.Context, p []ResubmitParams) ([]AddResult, []error, error)
	// Cancel cancels jobs that have not ended; per-item errors.
	Cancel(ctx context.Context, ids []int64) ([]error, error)
	// Remove deletes jobs in any state; per-item errors.
	Remove(ctx context.Context, ids []int64) ([]error, error)
	// Update changes jobs in place (UpdateParams); per-item errors. It
	// returns the jobs as they are after the change.
	Update(ctx context.Context, p []UpdateParams) ([]Job, []error, error)

	// Accept leases due jobs to a worker. Within a type it takes the next
	// group in weighted round-robin order among the groups with due jobs
	// (skipping groups at their bound on running jobs), then that group's
	// best job: due retries first, then priority (or the priority band the
	// type's counting scheme calls for), then run time, then id. A batch
	// spreads over groups in the same order. Across several types, the
	// type whose next job ranks best by that same order goes first.
	Accept(ctx context.Context, p AcceptParams) (AcceptResult, error)
	// Heartbeat extends leases; per-item results.
	Heartbeat(ctx context.Context, p []HeartbeatParams) ([]HeartbeatResult, error)
	// Finish ends leases; per-item errors.
	Finish(ctx context.Context, p []FinishParams) ([]error, error)

	// ExpireLeases takes back running jobs whose lease ended before now:
	// they go back to pending, or fail when out of attempts. It also ends
	// pending jobs whose deadline (Job.ExpiresAt) is not after now. It
	// returns how many jobs it changed and the earliest lease end or
	// deadline still to come (zero when none), so that the caller sleeps
	// until then.
	ExpireLeases(ctx context.Context, now time.Time) (int, time.Time, error)

	// SetTypeConfig stores per-type configuration, replacing the type's
	// previous settings.
	SetTypeConfig(ctx context.Context, c TypeConfig) error
	// TypeConfigs lists the types the store knows, with their settings.
	TypeConfigs(ctx context.Context) ([]TypeConfig, error)
	// SetGroupConfig stores a group's weight, bound and pause for one type
	// or for all (Type ""), replacing earlier settings for that pair; a
	// zero MaxRunning and Weight, not paused, remove them. Changes apply to
	// the next accept.
	SetGroupConfig(ctx context.Context, c GroupConfig) error
	// GroupConfigs lists the group settings, by group and type.
	GroupConfigs(ctx context.Context) ([]GroupConfig, error)

	// Watch registers fn to receive every committed change, in commit
	// order, until the returned function is called. fn must not block.
	Watch(fn func([]Event)) (stop func())

	// Close releases the store. Pending operations fail with ErrClosed.
	Close() error
}
