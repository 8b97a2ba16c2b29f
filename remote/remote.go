// Package remote is a client for a rota server. Its Store implements
// store.Store over the HTTP API, so the same rota.Client and worker runtime
// that run in-process run unchanged against a server:
//
//	client, err := remote.NewClient("http://127.0.0.1:7700", remote.Config{})
//	w := rota.NewWorker(client, rota.WorkerConfig{Concurrency: 32})
//
// Accept waits on the server's long poll; concurrent finishes and
// heartbeats are coalesced into one request each while the previous one is
// in flight, so a remote worker is not bound by round trips.
package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/batch"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// requestTimeout bounds one batched finish or heartbeat request: they are
// quick on a healthy server, and the bound keeps a wedged connection from
// holding every caller forever.
const requestTimeout = time.Minute

// Config tunes a Store. The zero value is ready to use.
type Config struct {
	// Token is sent as "Authorization: Bearer <token>" when set.
	Token string
	// HTTPClient makes the requests; nil means a client with sensible
	// connection reuse and no overall timeout (long polls and event
	// streams last long).
	HTTPClient *http.Client
	// MaxBatch bounds how many finishes or heartbeats share one request;
	// zero means 500.
	MaxBatch int
	// TLS configures https:// connections of the default HTTP client (for
	// example RootCAs, to trust a private certificate authority); nil
	// means the system's roots. Ignored when HTTPClient is set.
	TLS *tls.Config
}

// Store talks to a rota server. It is safe for concurrent use.
type Store struct {
	base   *url.URL
	cfg    Config
	http   *http.Client
	finish *batch.Batcher[store.FinishParams, error]
	beat   *batch.Batcher[store.HeartbeatParams, store.HeartbeatResult]

	closeOnce sync.Once
	closed    chan struct{}

	watchMu  sync.Mutex
	watchers map[int]func([]store.Event)
	watchSeq int
	feedCtx  context.Context // the feed's, once the first watcher opened it
	stopFeed context.CancelFunc
	all      bool         // the stream includes every change (store.FullWatcher)
	oldSSE   bool         // the server knows ?running=false but not ?completed=false
	last     string       // the last event's id: a new connection resumes after it
	reading  *feedConn    // the connection being read, if any
	swap     *replacement // a connection with every change opening to replace it
}

// feedConn is one connection of the event stream.
type feedConn struct {
	resp   *http.Response
	cancel context.CancelFunc
	all    bool // it carries every change, starts and completions included
}

// replacement is a connection with every change that WatchAll opens while
// the worker's stream goes on, so that the two overlap: a change
// between them may come twice, never be lost (a resumed stream cannot
// replay removals). c is nil when it could not be opened.
type replacement struct {
	done chan struct{}
	c    *feedConn
}

// errNoFilter: the server does not know ?running=false (it predates it),
// so the stream carries every change; errNoCompletedFilter: it knows that
// one but not ?completed=false, so the worker's stream carries completions.
var (
	errNoFilter          = errors.New("remote: the server's event stream has no running filter")
	errNoCompletedFilter = errors.New("remote: the server's event stream has no completed filter")
)

var (
	_ store.Store       = (*Store)(nil)
	_ rota.WaitAccepter = (*Store)(nil)
	_ rota.JobWaiter    = (*Store)(nil)
	_ store.FullWatcher = (*Store)(nil)
)

// New returns a store for the server at baseURL (for example
// "http://127.0.0.1:7700").
func New(baseURL string, cfg Config) (*Store, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote: server address %q: want http://host:port or https://host:port", baseURL)
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 500
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		if cfg.TLS != nil {
			tr.TLSClientConfig = cfg.TLS.Clone()
		}
		hc = &http.Client{Transport: tr}
	}
	s := &Store{base: u, cfg: cfg, http: hc, closed: make(chan struct{}), watchers: map[int]func([]store.Event){}}
	s.finish = batch.New(cfg.MaxBatch, requestTimeout, s.finishBatch)
	s.beat = batch.New(cfg.MaxBatch, requestTimeout, s.heartbeatBatch)
	return s, nil
}

// NewClient returns a rota.Client on the server at baseURL; its Close
// closes the connection to the server too. The server runs the lease
// monitor, so the client runs no maintenance of its own.
func NewClient(baseURL string, cfg Config) (*rota.Client, error) {
	st, err := New(baseURL, cfg)
	if err != nil {
		return nil, err
	}
	return rota.NewClient(st, rota.Config{NoMaintenance: true, CloseStore: true})
}

// Close stops the event stream and fails later calls with store.ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.watchMu.Lock()
		if s.stopFeed != nil {
			s.stopFeed()
		}
		s.watchMu.Unlock()
		s.finish.Close()
		s.beat.Close()
	})
	return nil
}

func (s *Store) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// do sends a request and decodes a JSON answer into out (unless nil). An
// error answer becomes an error that matches the store's sentinels.
// Idempotent reads (GET) that find the server's store unavailable (a 503)
// are tried again this many times, with back-off. A read that finds no
// server at all fails at once: that is more often a wrong address than a
// restart, and the caller should hear of it now.
const (
	readRetries    = 4
	readRetryFirst = 100 * time.Millisecond
	readRetryMax   = 2 * time.Second
)

func (s *Store) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	if method != "GET" {
		return s.doOnce(ctx, method, path, query, in, out)
	}
	wait := readRetryFirst
	for attempt := 0; ; attempt++ {
		err := s.doOnce(ctx, method, path, query, in, out)
		var unavailable *unavailableError
		if err == nil || attempt == readRetries || ctx.Err() != nil || !errors.As(err, &unavailable) {
			return err
		}
		if unavailable.retryAfter > 0 {
			wait = min(unavailable.retryAfter, readRetryMax)
		}
		if sleep(ctx, wait); ctx.Err() != nil {
			return ctx.Err()
		}
		wait = min(2*wait, readRetryMax)
	}
}

// unavailableError is a 503 with its Retry-After.
type unavailableError struct {
	err        error
	retryAfter time.Duration
}

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

func (s *Store) doOnce(ctx context.Context, method, path string, query url.Values, in, out any) error {
	if s.isClosed() {
		return store.ErrClosed
	}
	if store.ReachOf(ctx).Scoped() {
		// The server applies the token's reach; one this client cannot
		// send is refused rather than seem applied.
		return check.Invalidf("remote: %s %s with a reach (rota.WithReach): a remote client reaches what its token reaches; use a token created with those groups and types", method, path)
	}
	u := *s.base
	u.Path += path
	u.RawQuery = query.Encode()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("remote: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("remote: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e wire.ErrorResponse
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var err error
		if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
			err = fmt.Errorf("remote: %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(raw))
		} else {
			err = wire.AsError(&e.Error)
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			return &unavailableError{err: err, retryAfter: time.Duration(secs) * time.Second}
		}
		return err
	}
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if ar, ok := out.(answerReader); ok {
		buf := answerBufs.Get().(*bytes.Buffer)
		buf.Reset()
		_, err := buf.ReadFrom(resp.Body)
		if err == nil {
			err = ar.readAnswer(buf.Bytes())
		}
		if buf.Cap() <= maxPooledAnswer {
			answerBufs.Put(buf)
		}
		if err != nil {
			return fmt.Errorf("remote: %s %s: decode answer: %w", method, path, err)
		}
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("remote: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// ---- producer side ----

// Add adds jobs in one request.
func (s *Store) Add(ctx context.Context, jobs []store.AddParams) ([]store.AddResult, error) {
	req := wire.AddBatchRequest{Jobs: make([]wire.AddRequest, len(jobs))}
	for i, p := range jobs {
		if p.BedrockID {
			return nil, notCarried("an add's Bedrock id (AddParams.BedrockID)")
		}
		req.Jobs[i] = wire.NewAddRequest(p)
	}
	var resp wire.AddBatchResponse
	if err := s.do(ctx, "POST", "/v1/jobs", nil, req, &resp); err != nil {
		return nil, err
	}
	out := make([]store.AddResult, len(resp.Results))
	for i, r := range resp.Results {
		out[i] = store.AddResult{Job: r.Job, Outcome: r.Outcome}
	}
	return out, nil
}

// Get returns jobs by id, in order; missing ids give zero Jobs.
func (s *Store) Get(ctx context.Context, ids []int64) ([]store.Job, error) {
	out := make([]store.Job, len(ids))
	for start := 0; start < len(ids); start += store.MaxListLimit {
		chunk := ids[start:min(start+store.MaxListLimit, len(ids))]
		parts := make([]string, len(chunk))
		for i, id := range chunk {
			parts[i] = strconv.FormatInt(id, 10)
		}
		var resp wire.ListResponse
		if err := s.do(ctx, "GET", "/v1/jobs", url.Values{"id": {strings.Join(parts, ",")}}, nil, &resp); err != nil {
			return nil, err
		}
		byID := make(map[int64]store.Job, len(resp.Jobs))
		for _, j := range resp.Jobs {
			byID[j.ID] = j
		}
		for i, id := range chunk {
			out[start+i] = byID[id]
		}
	}
	return out, nil
}

// History returns a job's history from the server (store.Auditor), GET
// /v1/jobs/{id}/history. The server records changes made through it with
// the name of the client's token, whatever actor ctx names.
func (s *Store) History(ctx context.Context, id int64) ([]store.HistoryEntry, error) {
	var resp wire.HistoryResponse
	if err := s.do(ctx, "GET", jobPath(id, "history"), nil, nil, &resp); err != nil {
		return nil, err
	}
	return resp.History, nil
}

// waitPoll is how long one long poll of WaitJob lasts, well under the
// server's bound on waits (60 s by default).
const waitPoll = 10 * time.Second

// WaitJob waits for the job to be in one of states (terminal ones when
// none) with the server's long-polling get, GET /v1/jobs/{id}?wait=…;
// rota.Client.Wait defers to it. The job comes with its data as the
// server read it when it reached the state.
func (s *Store) WaitJob(ctx context.Context, id int64, states []store.State) (store.Job, error) {
	q := url.Values{"wait": {waitPoll.String()}}
	for _, st := range states {
		q.Add("state", st.String())
	}
	path := "/v1/jobs/" + strconv.FormatInt(id, 10)
	for {
		var resp wire.JobResponse
		if err := s.do(ctx, "GET", path, q, nil, &resp); err != nil {
			return store.Job{}, err
		}
		j := resp.Job
		switch {
		case rota.WaitedFor(j.State, states):
			return j, nil
		case j.State.Terminal():
			return j, fmt.Errorf("job %d ended %s without being in a state waited for: %w", id, j.State, store.ErrFinished)
		}
		if err := ctx.Err(); err != nil {
			return store.Job{}, err
		}
	}
}

// Deps returns a job's dependencies with their outcomes and up to limit
// of its dependants (store.DepsReader), GET /v1/jobs/{id}/deps.
func (s *Store) Deps(ctx context.Context, id int64, limit int) ([]store.Dep, []int64, error) {
	var resp wire.DepsResponse
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if err := s.do(ctx, "GET", jobPath(id, "deps"), q, nil, &resp); err != nil {
		return nil, nil, err
	}
	return resp.Deps, resp.Dependants, nil
}

// GetByKey returns the job with this type, group and key.
func (s *Store) GetByKey(ctx context.Context, typ, group, key string) (store.Job, error) {
	if typ == "" || key == "" {
		return store.Job{}, check.Invalidf("type and key are both required")
	}
	var resp wire.ListResponse
	if err := s.do(ctx, "GET", "/v1/jobs", url.Values{"type": {typ}, "group": {group}, "key": {key}}, nil, &resp); err != nil {
		return store.Job{}, err
	}
	if len(resp.Jobs) == 0 {
		return store.Job{}, fmt.Errorf("type %q group %q key %q: %w", typ, group, key, store.ErrNotFound)
	}
	return resp.Jobs[0], nil
}

// List returns a page of jobs.
func (s *Store) List(ctx context.Context, p store.ListParams) (store.ListResult, error) {
	q := url.Values{}
	if len(p.Types) > 0 {
		q.Set("type", strings.Join(p.Types, ","))
	}
	if len(p.Groups) > 0 {
		q["group"] = p.Groups // groups may contain commas; send them one by one
	}
	for _, st := range p.States {
		if !st.Valid() {
			return store.ListResult{}, check.Invalidf("unknown state %d", st)
		}
		q.Add("state", st.String())
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.After != 0 {
		q.Set("cursor", strconv.FormatInt(p.After, 10))
	}
	if p.Descending {
		q.Set("order", "desc")
	}
	if p.Recurring {
		q.Set("recurring", "true")
	}
	if p.Parent != 0 {
		q.Set("parent", strconv.FormatInt(p.Parent, 10))
	}
	if !p.UpdatedSince.IsZero() {
		q.Set("updated_since", p.UpdatedSince.Format(time.RFC3339Nano))
	}
	var resp wire.ListResponse
	if err := s.do(ctx, "GET", "/v1/jobs", q, nil, &resp); err != nil {
		return store.ListResult{}, err
	}
	res := store.ListResult{Jobs: resp.Jobs}
	if resp.NextCursor != "" {
		next, err := strconv.ParseInt(resp.NextCursor, 10, 64)
		if err != nil {
			return store.ListResult{}, fmt.Errorf("remote: list: bad cursor %q from the server", resp.NextCursor)
		}
		res.Next = next
	}
	return res, nil
}

// Stats counts jobs by type, group and state.
func (s *Store) Stats(ctx context.Context) ([]store.Count, error) {
	var resp wire.StatsResponse
	if err := s.do(ctx, "GET", "/v1/stats", nil, nil, &resp); err != nil {
		return nil, err
	}
	return resp.Counts, nil
}

// Resubmit asks for jobs to run again, one request per job.
func (s *Store) Resubmit(ctx context.Context, ps []store.ResubmitParams) ([]store.AddResult, []error, error) {
	out := make([]store.AddResult, len(ps))
	errs := make([]error, len(ps))
	for i, p := range ps {
		if p.HandBack || p.KeepAttempt || p.RunNow {
			return nil, nil, notCarried("a resubmit's HandBack, KeepAttempt or RunNow")
		}
		req := wire.ResubmitRequest{Data: p.Data}
		if !p.RunAt.IsZero() {
			t := p.RunAt
			req.RunAt = &t
		}
		var resp wire.AddResponse
		err := s.do(ctx, "POST", jobPath(p.ID, "resubmit"), nil, req, &resp)
		if err != nil && !isItemError(err) {
			return nil, nil, err
		}
		out[i], errs[i] = store.AddResult{Job: resp.Job, Outcome: resp.Outcome}, err
	}
	return out, errs, nil
}

// Update changes jobs in place, one request per job.
func (s *Store) Update(ctx context.Context, ps []store.UpdateParams) ([]store.Job, []error, error) {
	out := make([]store.Job, len(ps))
	errs := make([]error, len(ps))
	for i, p := range ps {
		if p.ID <= 0 {
			return nil, nil, check.Invalidf("job id %d is not valid", p.ID)
		}
		if p.RunIn != 0 || p.NextSlot {
			return nil, nil, notCarried("an update's RunIn or NextSlot")
		}
		var resp wire.JobResponse
		err := s.do(ctx, "PATCH", jobPath(p.ID, ""), nil, wire.NewUpdateRequest(p), &resp)
		if err != nil && !isItemError(err) {
			return nil, nil, err
		}
		out[i], errs[i] = resp.Job, err
	}
	return out, errs, nil
}

// Cancel cancels jobs, one request per job.
func (s *Store) Cancel(ctx context.Context, ids []int64) ([]error, error) {
	return s.each(ctx, ids, func(id int64) error { return s.do(ctx, "POST", jobPath(id, "cancel"), nil, nil, nil) })
}

// Remove deletes jobs, one request per job.
func (s *Store) Remove(ctx context.Context, ids []int64) ([]error, error) {
	return s.each(ctx, ids, func(id int64) error { return s.do(ctx, "DELETE", jobPath(id, ""), nil, nil, nil) })
}

func (s *Store) each(ctx context.Context, ids []int64, fn func(int64) error) ([]error, error) {
	for _, id := range ids {
		if id <= 0 {
			return nil, check.Invalidf("job id %d is not valid", id)
		}
	}
	errs := make([]error, len(ids))
	for i, id := range ids {
		err := fn(id)
		if err != nil && !isItemError(err) {
			return nil, err
		}
		errs[i] = err
	}
	return errs, nil
}

// isItemError reports whether err is about one job (and the batch goes
// on) rather than about the call.
func isItemError(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrFinished) ||
		errors.Is(err, store.ErrCanceled) || errors.Is(err, store.ErrWorkerConflict)
}

func jobPath(id int64, action string) string {
	p := "/v1/jobs/" + strconv.FormatInt(id, 10)
	if action != "" {
		p += "/" + action
	}
	return p
}

// SetTypeConfig stores a type's settings on the server.
func (s *Store) SetTypeConfig(ctx context.Context, c store.TypeConfig) error {
	if err := check.TypeConfig(c); err != nil {
		return err
	}
	return s.do(ctx, "PUT", "/v1/types/"+url.PathEscape(c.Type), nil, wire.NewTypeConfig(c), nil)
}

// TypeConfigs lists the server's types.
func (s *Store) TypeConfigs(ctx context.Context) ([]store.TypeConfig, error) {
	var resp wire.TypesResponse
	if err := s.do(ctx, "GET", "/v1/types", nil, nil, &resp); err != nil {
		return nil, err
	}
	out := make([]store.TypeConfig, len(resp.Types))
	for i, t := range resp.Types {
		c, err := t.Params()
		if err != nil {
			return nil, fmt.Errorf("remote: type %q from the server: %w", t.Type, err)
		}
		out[i] = c
	}
	return out, nil
}

// SetGroupConfig stores a group's settings on the server.
func (s *Store) SetGroupConfig(ctx context.Context, c store.GroupConfig) error {
	if err := check.GroupConfig(c); err != nil {
		return err
	}
	return s.do(ctx, "PUT", "/v1/groups", nil,
		wire.NewGroupConfig(c), nil)
}

// GroupConfigs lists the server's group settings.
func (s *Store) GroupConfigs(ctx context.Context) ([]store.GroupConfig, error) {
	var resp wire.GroupsResponse
	if err := s.do(ctx, "GET", "/v1/groups", nil, nil, &resp); err != nil {
		return nil, err
	}
	out := make([]store.GroupConfig, len(resp.Groups))
	for i, g := range resp.Groups {
		var err error
		if out[i], err = g.Params(); err != nil {
			return nil, fmt.Errorf("group %q: %w", g.Group, err)
		}
	}
	return out, nil
}

// ---- worker side ----

// Accept leases due jobs without waiting (it ignores p.Wait, as every
// Store does).
func (s *Store) Accept(ctx context.Context, p store.AcceptParams) (store.AcceptResult, error) {
	p.Wait = 0
	return s.AcceptWait(ctx, p)
}

// AcceptWait leases due jobs, waiting on the server's long poll for up to
// p.Wait (the server bounds it, 60 s by default).
func (s *Store) AcceptWait(ctx context.Context, p store.AcceptParams) (store.AcceptResult, error) {
	if len(p.SkipGroups) > 0 {
		// The server decides a remote worker's groups (its token's).
		return store.AcceptResult{}, check.Invalidf("a remote store's accept cannot skip groups (SkipGroups %q)", p.SkipGroups)
	}
	req := wire.AcceptRequest{Types: p.Types, Limit: p.Limit, Wait: wire.Duration(p.Wait), Worker: p.Worker, LeaseTimeout: wire.Duration(p.LeaseTimeout),
		Priority: p.Priority}
	if !p.DueBy.IsZero() {
		t := p.DueBy
		req.DueBy = &t
	}
	var resp acceptAnswer
	if err := s.do(ctx, "POST", "/v1/accept", nil, req, &resp); err != nil {
		return store.AcceptResult{}, err
	}
	return store.AcceptResult{Jobs: resp.jobs}, nil
}

// acceptAnswer is an accept's answer, read with wire.ParseAccept: it
// carries every job a remote worker runs, and encoding/json takes about
// 6 µs per job to read it.
type acceptAnswer struct{ jobs []store.Job }

func (a *acceptAnswer) readAnswer(body []byte) (err error) {
	a.jobs, err = wire.ParseAccept(body)
	return err
}

// answerReader is an answer that reads its body itself, not through
// encoding/json. body is valid only during the call (it is reused): what
// the answer keeps, it copies.
type answerReader interface{ readAnswer(body []byte) error }

// answerBufs are buffers for answers that answerReaders read: an accept's
// answer of hundreds of jobs was read into a buffer grown from nothing
// each time (the largest allocation of a remote worker but one). Buffers
// that grew past maxPooledAnswer are left to the collector.
var answerBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledAnswer = 4 << 20

// Heartbeat extends leases; concurrent calls share requests.
func (s *Store) Heartbeat(ctx context.Context, ps []store.HeartbeatParams) ([]store.HeartbeatResult, error) {
	if s.isClosed() {
		return nil, store.ErrClosed
	}
	return s.beat.Do(ctx, ps...)
}

func (s *Store) heartbeatBatch(ctx context.Context, ps []store.HeartbeatParams) ([]store.HeartbeatResult, error) {
	req := wire.HeartbeatBatchRequest{Items: make([]wire.HeartbeatItem, len(ps))}
	for i, p := range ps {
		req.Items[i] = wire.HeartbeatItem{ID: p.ID, Token: p.Token, Data: p.Data, Progress: p.Progress}
	}
	var resp wire.HeartbeatBatchResponse
	if err := s.do(ctx, "POST", "/v1/heartbeat", nil, req, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(ps) {
		return nil, fmt.Errorf("remote: heartbeat: %d answers for %d leases", len(resp.Results), len(ps))
	}
	out := make([]store.HeartbeatResult, len(ps))
	for i, r := range resp.Results {
		out[i] = store.HeartbeatResult{LeaseUntil: r.LeaseUntil, Resubmit: r.Resubmit, Err: wire.AsError(r.Error)}
	}
	return out, nil
}

// Finish ends leases; concurrent calls share requests.
func (s *Store) Finish(ctx context.Context, ps []store.FinishParams) ([]error, error) {
	if s.isClosed() {
		return nil, store.ErrClosed
	}
	for _, p := range ps {
		if !p.Plain() || p.KeepAttempt {
			return nil, notCarried("what a finish changes besides the job's state (FinishParams.Data, EndSchedule, Priority, RunIn, AtNextSlot, DropEndedChildren, KeepAttempt)")
		}
	}
	return s.finish.Do(ctx, ps...)
}

func (s *Store) finishBatch(ctx context.Context, ps []store.FinishParams) ([]error, error) {
	req := wire.FinishBatchRequest{Items: make([]wire.FinishItem, len(ps))}
	for i, p := range ps {
		req.Items[i] = wire.NewFinishItem(p)
	}
	var resp finishAnswer
	if err := s.do(ctx, "POST", "/v1/finish", nil, req, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(ps) {
		return nil, fmt.Errorf("remote: finish: %d answers for %d leases", len(resp.Results), len(ps))
	}
	out := make([]error, len(ps))
	for i, r := range resp.Results {
		out[i] = wire.AsError(r.Error)
	}
	return out, nil
}

// notCarried refuses what the HTTP API does not carry (Bedrock's
// protocol runs on a store of its own, not through a server), rather than
// drop it.
func notCarried(what string) error {
	return check.Invalidf("remote: %s is not carried over the HTTP API", what)
}

// finishAnswer reads a batch finish's answer, without reflection when
// every item succeeded.
type finishAnswer struct{ wire.FinishBatchResponse }

func (a *finishAnswer) readAnswer(body []byte) error {
	if n, ok := wire.ParseFinishResults(body); ok {
		a.Results = make([]wire.ItemResult, n)
		return nil
	}
	return json.Unmarshal(body, &a.FinishBatchResponse)
}

// ExpireLeases does nothing: the server runs the lease monitor.
func (s *Store) ExpireLeases(ctx context.Context, now time.Time) (int, time.Time, error) {
	if s.isClosed() {
		return 0, time.Time{}, store.ErrClosed
	}
	return 0, time.Time{}, nil
}

// ---- change feed ----

// Watch registers fn for changes from the server's event stream, which is
// opened with the first watcher and reconnects by itself. Until WatchAll,
// the stream carries only what a worker acts on: it leaves out jobs
// starting to run, their progress and jobs completing.
func (s *Store) Watch(fn func([]store.Event)) func() {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.watchSeq++
	id := s.watchSeq
	s.watchers[id] = fn
	if s.feedCtx == nil && !s.isClosed() {
		s.feedCtx, s.stopFeed = context.WithCancel(context.Background())
		go s.feed(s.feedCtx)
	}
	return func() {
		s.watchMu.Lock()
		delete(s.watchers, id)
		s.watchMu.Unlock()
	}
}

// WatchAll makes the event stream include every change, which until then
// leaves out jobs starting to run, their progress and jobs completing
// (store.FullWatcher), for the rest of the store's life. A stream already
// open is replaced by one with every change, opened before the old one
// closes.
func (s *Store) WatchAll() {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.all {
		return
	}
	s.all = true
	s.replaceStale()
}

// replaceStale starts replacing the connection being read when it lacks
// changes that are now wanted. The caller holds watchMu.
func (s *Store) replaceStale() {
	if s.all && s.reading != nil && !s.reading.all && s.swap == nil {
		r := &replacement{done: make(chan struct{})}
		s.swap = r
		go s.replace(s.feedCtx, r, s.reading, s.last)
	}
}

// replace opens r's connection, resuming after last, then ends old.
func (s *Store) replace(ctx context.Context, r *replacement, old *feedConn, last string) {
	c, err := s.open(ctx, true, last)
	if err == nil {
		r.c = c
	}
	close(r.done)
	old.cancel()
}

func (s *Store) feed(ctx context.Context) {
	var next *feedConn // a connection that replaced the last one
	for backoff := 100 * time.Millisecond; ctx.Err() == nil; {
		c := next
		if c == nil {
			s.watchMu.Lock()
			all, last := s.all, s.last
			s.watchMu.Unlock()
			var err error
			if c, err = s.open(ctx, all, last); err != nil {
				if errors.Is(err, errNoFilter) || errors.Is(err, errNoCompletedFilter) {
					s.watchMu.Lock()
					if errors.Is(err, errNoFilter) {
						s.all = true
					} else {
						s.oldSSE = true
					}
					s.watchMu.Unlock()
					continue
				}
				sleep(ctx, backoff)
				backoff = min(backoff*2, 5*time.Second)
				continue
			}
		}
		backoff = 100 * time.Millisecond
		if next = s.read(c); next == nil {
			// The connection broke, or the server ended it because this
			// client fell behind: the next one resumes after s.last, the
			// server replaying what changed meanwhile.
			sleep(ctx, backoff)
		}
	}
	if next != nil {
		next.resp.Body.Close()
		next.cancel()
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// open opens a connection of the event stream, with every change or a
// worker's, resuming after the event id last (none when empty).
func (s *Store) open(ctx context.Context, all bool, last string) (*feedConn, error) {
	u := *s.base
	u.Path += "/v1/events"
	s.watchMu.Lock()
	completed := !s.oldSSE
	s.watchMu.Unlock()
	if !all {
		u.RawQuery = "running=false"
		if completed {
			u.RawQuery += "&completed=false"
		}
	}
	conn, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(conn, "GET", u.String(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	if s.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusBadRequest && !all {
			// A server refuses what it does not know, naming it (and,
			// knowing running=false, naming it among what it wants).
			switch {
			case completed && bytes.Contains(body, []byte(`"completed`)):
				return nil, errNoCompletedFilter
			case bytes.Contains(body, []byte(`"running`)):
				return nil, errNoFilter
			}
		}
		return nil, fmt.Errorf("remote: event stream: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	if last == "" {
		// Before the first event, a reconnection resumes from when this
		// connection began, by the server's clock (event ids are its
		// change times): a second early, so that nothing between is lost.
		if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
			s.watchMu.Lock()
			if s.last == "" {
				s.last = strconv.FormatInt(d.Add(-time.Second).UnixMicro(), 10)
			}
			s.watchMu.Unlock()
		}
	}
	return &feedConn{resp: resp, cancel: cancel, all: all}, nil
}

// read delivers c's events until c ends, and returns the connection that
// replaced it (WatchAll), if any.
func (s *Store) read(c *feedConn) *feedConn {
	s.watchMu.Lock()
	s.reading = c
	s.replaceStale() // WatchAll came while c was opening
	s.watchMu.Unlock()
	defer c.cancel()
	defer c.resp.Body.Close()
	sc := bufio.NewScanner(c.resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	wire.ParseEventStreamIDs(func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}, func(event, id string, data []byte) bool {
		if event == "" && data == nil {
			// An id alone: how far a stream that leaves changes out got.
			s.watchMu.Lock()
			s.last = id
			s.watchMu.Unlock()
			return true
		}
		if event != "job" {
			return event != "resume" // the server ends the stream; reconnect
		}
		ev, err := wire.ParseEvent(data)
		s.watchMu.Lock()
		s.last = id
		if err == nil {
			for _, fn := range s.watchers {
				fn([]store.Event{ev})
			}
		}
		s.watchMu.Unlock()
		return true
	})
	s.watchMu.Lock()
	s.reading = nil
	r := s.swap
	s.swap = nil
	s.watchMu.Unlock()
	if r == nil {
		return nil
	}
	<-r.done
	return r.c
}

// ---- named tokens (the admin token's) ----

// CreateToken creates a named token on the server and returns it with
// its secret, which the server shows this once.
func (s *Store) CreateToken(ctx context.Context, req wire.CreateTokenRequest) (wire.CreateTokenResponse, error) {
	var resp wire.CreateTokenResponse
	err := s.do(ctx, "POST", "/v1/tokens", nil, req, &resp)
	return resp, err
}

// Tokens lists the server's named tokens, without their secrets.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	var resp wire.TokensResponse
	err := s.do(ctx, "GET", "/v1/tokens", nil, nil, &resp)
	return resp.Tokens, err
}

// RevokeToken revokes a named token.
func (s *Store) RevokeToken(ctx context.Context, name string) error {
	return s.do(ctx, "DELETE", "/v1/tokens/"+url.PathEscape(name), nil, nil, nil)
}
