package wire

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// The request and response bodies of the API. The remote client uses the
// same types, so both ends agree by construction.

// Duration is a JSON duration written as a Go duration string ("1.5s",
// "10m").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"1.5s\" or \"10m\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: want a form such as \"1.5s\" or \"10m\"", s)
	}
	*d = Duration(v)
	return nil
}

// AddRequest is one job to add: POST /v1/jobs with this object, or with
// {"jobs": [...]} for a batch.
type AddRequest struct {
	Type        string            `json:"type"`
	Key         string            `json:"key,omitempty"`
	Group       string            `json:"group,omitempty"`
	Priority    int               `json:"priority,omitempty"`
	RunAt       *time.Time        `json:"run_at,omitempty"`
	Data        json.RawMessage   `json:"data,omitempty"`
	MaxAttempts int               `json:"max_attempts,omitempty"`
	BackoffBase Duration          `json:"backoff_base,omitempty"`
	BackoffMax  Duration          `json:"backoff_max,omitempty"`
	Meta        map[string]string `json:"meta,omitempty"`
	Schedule    string            `json:"schedule,omitempty"`
	Missed      store.Missed      `json:"missed,omitempty"`
	RetryAfter  Duration          `json:"retry_after,omitempty"`
	Timeout     Duration          `json:"timeout,omitempty"`
	ExpiresAt   *time.Time        `json:"expires_at,omitempty"`
	Unique      bool              `json:"unique,omitempty"`
	Overwrite   bool              `json:"overwrite,omitempty"`
	Parent      int64             `json:"parent,omitempty"`
	// UniqueFor and UniqueStates are a unique window (store.AddParams).
	UniqueFor    Duration      `json:"unique_for,omitempty"`
	UniqueStates []store.State `json:"unique_states,omitempty"`
	Debounce     Duration      `json:"debounce,omitempty"`
	// After, AfterKeys and OnDepFailure make the job wait for others
	// (store.AddParams).
	After        []int64         `json:"after,omitempty"`
	AfterKeys    []string        `json:"after_keys,omitempty"`
	OnDepFailure store.DepPolicy `json:"on_dep_failure,omitempty"`
	// Batch joins the job to a batch that is not done (store.AddParams).
	Batch int64 `json:"batch,omitempty"`
}

// Params converts the request to store parameters.
func (a AddRequest) Params() store.AddParams {
	p := store.AddParams{Type: a.Type, Key: a.Key, Group: a.Group, Priority: a.Priority, Data: a.Data,
		MaxAttempts: a.MaxAttempts, BackoffBase: time.Duration(a.BackoffBase), BackoffMax: time.Duration(a.BackoffMax),
		Meta: a.Meta, Schedule: a.Schedule, Missed: a.Missed, RetryAfter: time.Duration(a.RetryAfter), Timeout: time.Duration(a.Timeout),
		Unique: a.Unique, Overwrite: a.Overwrite, Parent: a.Parent,
		UniqueFor: time.Duration(a.UniqueFor), UniqueStates: a.UniqueStates, Debounce: time.Duration(a.Debounce),
		After: a.After, AfterKeys: a.AfterKeys, OnDepFailure: a.OnDepFailure, Batch: a.Batch}
	if a.RunAt != nil {
		p.RunAt = *a.RunAt
	}
	if a.ExpiresAt != nil {
		p.ExpiresAt = *a.ExpiresAt
	}
	return p
}

// NewAddRequest converts store parameters to a request.
func NewAddRequest(p store.AddParams) AddRequest {
	a := AddRequest{Type: p.Type, Key: p.Key, Group: p.Group, Priority: p.Priority, Data: p.Data,
		MaxAttempts: p.MaxAttempts, BackoffBase: Duration(p.BackoffBase), BackoffMax: Duration(p.BackoffMax), Meta: p.Meta,
		Schedule: p.Schedule, Missed: p.Missed, RetryAfter: Duration(p.RetryAfter), Timeout: Duration(p.Timeout), Unique: p.Unique, Overwrite: p.Overwrite, Parent: p.Parent,
		UniqueFor: Duration(p.UniqueFor), UniqueStates: p.UniqueStates, Debounce: Duration(p.Debounce),
		After: p.After, AfterKeys: p.AfterKeys, OnDepFailure: p.OnDepFailure, Batch: p.Batch}
	if !p.ExpiresAt.IsZero() {
		t := p.ExpiresAt
		a.ExpiresAt = &t
	}
	if !p.RunAt.IsZero() {
		t := p.RunAt
		a.RunAt = &t
	}
	return a
}

// AddBatchRequest adds several jobs in one transaction.
type AddBatchRequest struct {
	Jobs []AddRequest `json:"jobs"`
}

// AddResponse answers a single add.
type AddResponse struct {
	Job     store.Job     `json:"job"`
	Outcome store.Outcome `json:"outcome"`
}

// AddBatchResponse answers a batch add, in request order.
type AddBatchResponse struct {
	Results []AddResponse `json:"results"`
}

// JobResponse carries one job.
type JobResponse struct {
	Job store.Job `json:"job"`
}

// DepsResponse is a job's dependencies with their outcomes, in the order
// it named them, and the ids of the jobs added after it (GET
// /v1/jobs/{id}/deps).
type DepsResponse struct {
	Deps       []store.Dep `json:"deps"`
	Dependants []int64     `json:"dependants"`
}

// HistoryResponse is a job's history (GET /v1/jobs/{id}/history): what
// its row tells and the audit records of the changes made to it, oldest
// first.
type HistoryResponse struct {
	History []store.HistoryEntry `json:"history"`
}

// ListResponse is one page of jobs. NextCursor, when set, is passed as
// ?cursor= for the next page.
type ListResponse struct {
	Jobs       []store.Job `json:"jobs"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// ResubmitRequest asks for a job to run again; both fields are optional.
type ResubmitRequest struct {
	RunAt *time.Time      `json:"run_at,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// UpdateRequest changes a job in place: PATCH /v1/jobs/{id}. Absent
// fields keep the job's.
type UpdateRequest struct {
	Data     json.RawMessage `json:"data,omitempty"`
	Priority *int            `json:"priority,omitempty"`
	RunAt    *time.Time      `json:"run_at,omitempty"`
	Schedule *string         `json:"schedule,omitempty"`
	Missed   *store.Missed   `json:"missed,omitempty"`
}

// Params converts the request to store parameters for job id.
func (u UpdateRequest) Params(id int64) store.UpdateParams {
	p := store.UpdateParams{ID: id, Data: u.Data, Priority: u.Priority, Schedule: u.Schedule, Missed: u.Missed}
	if u.RunAt != nil {
		p.RunAt = *u.RunAt
	}
	return p
}

// NewUpdateRequest converts store parameters to a request.
func NewUpdateRequest(p store.UpdateParams) UpdateRequest {
	u := UpdateRequest{Data: p.Data, Priority: p.Priority, Schedule: p.Schedule, Missed: p.Missed}
	if !p.RunAt.IsZero() {
		t := p.RunAt
		u.RunAt = &t
	}
	return u
}

// AcceptRequest leases due jobs: POST /v1/accept.
type AcceptRequest struct {
	Types        []string   `json:"types"`
	Limit        int        `json:"limit,omitempty"`
	DueBy        *time.Time `json:"due_by,omitempty"`
	Wait         Duration   `json:"wait,omitempty"`
	Worker       string     `json:"worker,omitempty"`
	LeaseTimeout Duration   `json:"lease_timeout,omitempty"`
	Priority     *int       `json:"priority,omitempty"`
}

// Params converts the request to store parameters.
func (a AcceptRequest) Params() store.AcceptParams {
	p := store.AcceptParams{Types: a.Types, Limit: a.Limit, Worker: a.Worker, LeaseTimeout: time.Duration(a.LeaseTimeout),
		Wait: time.Duration(a.Wait), Priority: a.Priority}
	if a.DueBy != nil {
		p.DueBy = *a.DueBy
	}
	return p
}

// AcceptResponse carries the leased jobs, each with its token.
type AcceptResponse struct {
	Jobs []store.Job `json:"jobs"`
}

// HeartbeatRequest extends one lease: POST /v1/jobs/{id}/heartbeat.
type HeartbeatRequest struct {
	Token    string          `json:"token"`
	Data     json.RawMessage `json:"data,omitempty"`
	Progress *float64        `json:"progress,omitempty"`
}

// HeartbeatResponse answers one heartbeat.
type HeartbeatResponse struct {
	LeaseUntil time.Time `json:"lease_until"`
	Resubmit   bool      `json:"resubmit"`
}

// HeartbeatItem is one lease in a batch heartbeat.
type HeartbeatItem struct {
	ID       int64           `json:"id"`
	Token    string          `json:"token"`
	Data     json.RawMessage `json:"data,omitempty"`
	Progress *float64        `json:"progress,omitempty"`
}

// HeartbeatBatchRequest extends several leases: POST /v1/heartbeat.
type HeartbeatBatchRequest struct {
	Items []HeartbeatItem `json:"items"`
}

// HeartbeatResult is one item's answer in a batch.
type HeartbeatResult struct {
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	Resubmit   bool      `json:"resubmit,omitempty"`
	Error      *Error    `json:"error,omitempty"`
}

// HeartbeatBatchResponse answers a batch heartbeat, in request order.
type HeartbeatBatchResponse struct {
	Results []HeartbeatResult `json:"results"`
}

// FinishRequest completes a job: POST /v1/jobs/{id}/finish.
type FinishRequest struct {
	Token  string          `json:"token"`
	Result json.RawMessage `json:"result,omitempty"`
}

// FailRequest records a failed attempt: POST /v1/jobs/{id}/fail.
type FailRequest struct {
	Token     string `json:"token"`
	Error     string `json:"error"`
	Permanent bool   `json:"permanent,omitempty"`
}

// SnoozeRequest puts a job back until later without using up an attempt:
// POST /v1/jobs/{id}/snooze with run_at or delay.
type SnoozeRequest struct {
	Token  string     `json:"token"`
	RunAt  *time.Time `json:"run_at,omitempty"`
	Delay  Duration   `json:"delay,omitempty"`
	Rename string     `json:"rename,omitempty"`
}

// TokenRequest carries only a token: POST /v1/jobs/{id}/release.
type TokenRequest struct {
	Token string `json:"token"`
}

// FinishItem is one ending in a batch: POST /v1/finish. As is one of
// complete, fail, snooze, release, cancel.
type FinishItem struct {
	ID        int64           `json:"id"`
	Token     string          `json:"token"`
	As        string          `json:"as"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	Permanent bool            `json:"permanent,omitempty"`
	RunAt     *time.Time      `json:"run_at,omitempty"`
	Rename    string          `json:"rename,omitempty"`
}

// FinishBatchRequest ends several leases in one call.
type FinishBatchRequest struct {
	Items []FinishItem `json:"items"`
}

// ItemResult is one item's answer in a batch: empty on success.
type ItemResult struct {
	Error *Error `json:"error,omitempty"`
}

// FinishBatchResponse answers a batch finish, in request order.
type FinishBatchResponse struct {
	Results []ItemResult `json:"results"`
}

// StatsResponse counts jobs by type, group and state, and in total by
// state.
type StatsResponse struct {
	Counts  []store.Count    `json:"counts"`
	ByState map[string]int64 `json:"by_state"`
}

// TypeConfig is a type's settings: GET /v1/types, PUT /v1/types/{type}.
// PUT replaces all of them; omitted fields take their defaults.
type TypeConfig struct {
	Type         string   `json:"type,omitempty"`
	LeaseTimeout Duration `json:"lease_timeout,omitempty"`
	// Bands is a counting scheme such as "2,1"; empty means strict
	// priority order.
	Bands           string `json:"bands,omitempty"`
	GroupMaxRunning int    `json:"group_max_running,omitempty"`
	MaxRunning      int    `json:"max_running,omitempty"`
	// Rate is "N/s", "N/m" or "N/h": how many of the type's jobs start per
	// period, all groups together; empty means none.
	Rate            string   `json:"rate,omitempty"`
	Burst           int      `json:"burst,omitempty"`
	Paused          bool     `json:"paused,omitempty"`
	Retention       Duration `json:"retention,omitempty"`
	FailedRetention Duration `json:"failed_retention,omitempty"`
	// Timeout is the default run timeout of the type's jobs without
	// their own.
	Timeout Duration `json:"timeout,omitempty"`
}

// Params converts the wire form to store settings.
func (t TypeConfig) Params() (store.TypeConfig, error) {
	b, err := store.ParseBands(t.Bands)
	if err != nil {
		return store.TypeConfig{}, err
	}
	rate, err := check.ParseRate(t.Rate)
	if err != nil {
		return store.TypeConfig{}, err
	}
	return store.TypeConfig{Type: t.Type, LeaseTimeout: time.Duration(t.LeaseTimeout), Bands: b, GroupMaxRunning: t.GroupMaxRunning, MaxRunning: t.MaxRunning,
		Rate: rate, Burst: t.Burst,
		Paused: t.Paused, Retention: time.Duration(t.Retention), FailedRetention: time.Duration(t.FailedRetention), Timeout: time.Duration(t.Timeout)}, nil
}

// NewTypeConfig converts store settings to the wire form.
func NewTypeConfig(c store.TypeConfig) TypeConfig {
	t := TypeConfig{Type: c.Type, LeaseTimeout: Duration(c.LeaseTimeout), GroupMaxRunning: c.GroupMaxRunning, MaxRunning: c.MaxRunning, Paused: c.Paused,
		Retention: Duration(c.Retention), FailedRetention: Duration(c.FailedRetention), Timeout: Duration(c.Timeout), Rate: c.Rate.String(), Burst: c.Burst}
	if !c.Bands.IsZero() {
		t.Bands = c.Bands.String()
	}
	return t
}

// GroupConfig is a group's settings: GET /v1/groups, PUT /v1/groups (the
// default group is ""). A zero max_running and weight, no pause and no
// rate remove them.
type GroupConfig struct {
	Group      string  `json:"group"`
	Type       string  `json:"type,omitempty"`
	MaxRunning int     `json:"max_running,omitempty"`
	Weight     float64 `json:"weight,omitempty"`
	Paused     bool    `json:"paused,omitempty"`
	// Rate is "N/s", "N/m" or "N/h": how many of the group's jobs (of
	// Type, or of all types together) start per period; empty means none.
	Rate  string `json:"rate,omitempty"`
	Burst int    `json:"burst,omitempty"`
}

// Params converts the wire form to store settings.
func (g GroupConfig) Params() (store.GroupConfig, error) {
	rate, err := check.ParseRate(g.Rate)
	if err != nil {
		return store.GroupConfig{}, err
	}
	return store.GroupConfig{Group: g.Group, Type: g.Type, MaxRunning: g.MaxRunning, Weight: g.Weight, Paused: g.Paused,
		Rate: rate, Burst: g.Burst}, nil
}

// NewGroupConfig converts store settings to the wire form.
func NewGroupConfig(c store.GroupConfig) GroupConfig {
	return GroupConfig{Group: c.Group, Type: c.Type, MaxRunning: c.MaxRunning, Weight: c.Weight, Paused: c.Paused,
		Rate: c.Rate.String(), Burst: c.Burst}
}

// GroupsResponse lists group settings.
type GroupsResponse struct {
	Groups []GroupConfig `json:"groups"`
}

// TypesResponse lists known types.
type TypesResponse struct {
	Types []TypeConfig `json:"types"`
}

// Event is one Server-Sent Event's data on GET /v1/events.
type Event = store.Event

// ErrorResponse is every error's body.
type ErrorResponse struct {
	Error Error `json:"error"`
}

// Error says what failed: Code is stable and matchable (see the OpenAPI
// document), Message is for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Endings by their wire names.
var endingByName = map[string]store.Ending{
	"complete": store.Complete, "fail": store.Fail, "snooze": store.Snooze,
	"release": store.Release, "cancel": store.Cancel,
}

// EndingName is the wire name of an ending.
func EndingName(e store.Ending) string { return e.String() }

// FinishItemParams converts a batch item to store parameters.
func (f FinishItem) Params() (store.FinishParams, error) {
	as, ok := endingByName[f.As]
	if !ok {
		return store.FinishParams{}, check.Invalidf("job %d: \"as\" is %q, want one of complete, fail, snooze, release, cancel", f.ID, f.As)
	}
	p := store.FinishParams{Lease: store.Lease{ID: f.ID, Token: f.Token}, As: as, Result: f.Result, Error: f.Error, Permanent: f.Permanent,
		Rename: f.Rename}
	if f.RunAt != nil {
		p.RunAt = *f.RunAt
	}
	return p, nil
}

// NewFinishItem converts store parameters to a batch item.
func NewFinishItem(p store.FinishParams) FinishItem {
	f := FinishItem{ID: p.ID, Token: p.Token, As: EndingName(p.As), Result: p.Result, Error: p.Error, Permanent: p.Permanent,
		Rename: p.Rename}
	if !p.RunAt.IsZero() {
		t := p.RunAt
		f.RunAt = &t
	}
	return f
}

// ParseEnding returns the ending with this wire name.
func ParseEnding(name string) (store.Ending, bool) {
	e, ok := endingByName[name]
	return e, ok
}

// Endings is how many endings have wire names.
func Endings() int { return len(endingByName) }

// CreateTokenRequest is the body of POST /v1/tokens: a named token that
// reaches the jobs of some groups and types (GLOB patterns; none means
// all), read-only or not.
type CreateTokenRequest struct {
	Name     string   `json:"name"`
	Groups   []string `json:"groups,omitempty"`
	Types    []string `json:"types,omitempty"`
	ReadOnly bool     `json:"read_only,omitempty"`
}

// CreateTokenResponse is the new token, and its secret: shown this once,
// kept by the server only as a hash.
type CreateTokenResponse struct {
	Token  store.Token `json:"token"`
	Secret string      `json:"secret"`
}

// TokensResponse lists the named tokens, without their secrets.
type TokensResponse struct {
	Tokens []store.Token `json:"tokens"`
}

// LogRecord is one record of a job's log. Level is slog's name of the
// level ("DEBUG", "INFO", "WARN", "ERROR", or one of them with an offset,
// "INFO+2"); attempt and seq are the store's, left out of an append.
type LogRecord struct {
	Attempt int             `json:"attempt,omitempty"`
	Seq     int             `json:"seq,omitempty"`
	Time    time.Time       `json:"time,omitzero"`
	Level   string          `json:"level"`
	Message string          `json:"message"`
	Attrs   json.RawMessage `json:"attrs,omitempty"`
}

// AppendLogsRequest appends records to the log of the attempt the token
// holds: POST /v1/jobs/{id}/logs.
type AppendLogsRequest struct {
	Token   string      `json:"token"`
	Records []LogRecord `json:"records"`
	// Dropped counts records the worker dropped itself.
	Dropped int `json:"dropped,omitempty"`
}

// AppendLogsResponse says how many of the records the server kept and
// dropped (past the attempt's bound).
type AppendLogsResponse struct {
	Kept    int `json:"kept"`
	Dropped int `json:"dropped"`
}

// LogAttempt sums up one attempt's log.
type LogAttempt struct {
	Attempt int `json:"attempt"`
	Records int `json:"records"`
	Bytes   int `json:"bytes"`
	Dropped int `json:"dropped"`
}

// LogsResponse is a page of a job's log: GET /v1/jobs/{id}/logs.
type LogsResponse struct {
	Attempt  int          `json:"attempt"`
	Attempts []LogAttempt `json:"attempts"`
	Records  []LogRecord  `json:"records"`
	Next     int          `json:"next,omitempty"`
}
