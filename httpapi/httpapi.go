// Package httpapi is rota's HTTP/JSON API: a resource-oriented API under
// /v1 (jobs, accept, heartbeat, finish, stats, Server-Sent Events), plus
// /healthz, /metrics and the OpenAPI document. It translates requests to a
// rota.Client's operations and errors to JSON; it holds no job semantics
// of its own.
package httpapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the API's OpenAPI 3.1 document.
func OpenAPI() []byte { return slices.Clone(openAPI) }

// Config tunes a Server. The zero value is ready to use and has no
// authentication.
type Config struct {
	// AuthToken, when set, is the admin token: it, or a named token of
	// the store's (store.Tokens, POST /v1/tokens), is required as
	// "Authorization: Bearer <token>" on every request except /healthz.
	// Without it the server checks no token (rota serve then binds
	// loopback only) and refuses to manage named ones.
	AuthToken string
	// MaxBodyBytes bounds request bodies; zero means 8 MiB.
	MaxBodyBytes int64
	// MaxWait bounds an accept's long-poll wait; zero means 60s.
	MaxWait time.Duration
	// BodyTimeout bounds how long a request's body may take to arrive
	// (slow clients may not hold connections); zero means
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
	// WriteTimeout bounds how long one write of an answer may wait for
	// the client to take it (slow readers may not hold connections); zero
	// means DefaultWriteTimeout. Long polls and streams may last longer:
	// it starts at each write.
	WriteTimeout time.Duration
	// Hosts are names, besides localhost and IP addresses, that a server
	// without AuthToken answers to (the Host header): a name it does not
	// know may be another site's, rebound to this server's address. "*"
	// lets every name through.
	Hosts []string
	// MaxTokenRequests bounds the requests one named token may have in
	// flight at once (long polls, event streams and every other request),
	// so that no tenant holds every connection the server serves; more
	// are answered 429 with Retry-After. The admin token is not bounded.
	// Zero means DefaultMaxTokenRequests; negative, no bound.
	MaxTokenRequests int
	// MaxMetricTypes bounds how many job types get a label of their own in
	// the metrics; the types seen after that count as "other", so that
	// clients cannot grow the metrics without bound. Zero means 100.
	MaxMetricTypes int
	// Logger receives request errors; nil means slog.Default().
	Logger *slog.Logger
}

// Server serves the API for one client. Create it with New.
type Server struct {
	c       *rota.Client
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	flight  inflight // each named token's requests in flight
	metrics *metrics
	stop    func()
	tokens  *tokenCache // nil when the store keeps no tokens
}

// New returns the API for c. Close releases what it holds.
func New(c *rota.Client, cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 8 << 20
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 60 * time.Second
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.MaxMetricTypes <= 0 {
		cfg.MaxMetricTypes = 100
	}
	if cfg.MaxTokenRequests == 0 {
		cfg.MaxTokenRequests = DefaultMaxTokenRequests
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{c: c, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), flight: inflight{max: cfg.MaxTokenRequests, n: map[string]int{}}}
	if ts, ok := c.Store().(store.Tokens); ok {
		s.tokens = &tokenCache{st: ts, m: map[[32]byte]cachedToken{}}
	}
	s.metrics, s.stop = newMetrics(c, cfg.MaxMetricTypes)
	s.routes()
	return s
}

// Close stops the server's background work (the metrics feed).
func (s *Server) Close() { s.stop() }

// Routes lists the API's routes as "METHOD /path/{param}", as the OpenAPI
// document must describe them.
var Routes = []string{
	"GET /healthz",
	"GET /metrics",
	"GET /v1/openapi.json",
	"POST /v1/jobs",
	"GET /v1/jobs",
	"GET /v1/jobs/{id}",
	"GET /v1/jobs/{id}/deps",
	"DELETE /v1/jobs/{id}",
	"PATCH /v1/jobs/{id}",
	"POST /v1/jobs/{id}/cancel",
	"GET /v1/jobs/{id}/history",
	"POST /v1/jobs/{id}/resubmit",
	"POST /v1/jobs/{id}/heartbeat",
	"POST /v1/jobs/{id}/finish",
	"POST /v1/jobs/{id}/fail",
	"POST /v1/jobs/{id}/snooze",
	"POST /v1/jobs/{id}/release",
	"GET /v1/jobs/{id}/logs",
	"POST /v1/jobs/{id}/logs",
	"POST /v1/accept",
	"POST /v1/heartbeat",
	"POST /v1/finish",
	"POST /v1/batches",
	"GET /v1/batches",
	"GET /v1/batches/{id}",
	"POST /v1/batches/{id}/jobs",
	"POST /v1/batches/{id}/close",
	"GET /v1/stats",
	"GET /v1/events",
	"GET /v1/types",
	"PUT /v1/types/{type}",
	"GET /v1/groups",
	"PUT /v1/groups",
	"GET /v1/tokens",
	"POST /v1/tokens",
	"DELETE /v1/tokens/{name}",
}

func (s *Server) routes() {
	var (
		producer = route[none]{job: producerJob}
		queries  = route[none]{}
	)
	handlers := map[string]http.HandlerFunc{
		"GET /healthz":                 s.healthz,
		"GET /metrics":                 s.metrics.handler.ServeHTTP,
		"GET /v1/openapi.json":         s.openapi,
		"POST /v1/jobs":                handle(s, route[json.RawMessage]{body: needBody}, s.add),
		"GET /v1/jobs":                 handle(s, queries, s.list),
		"GET /v1/jobs/{id}":            handle(s, producer, s.get),
		"GET /v1/jobs/{id}/deps":       handle(s, producer, s.deps),
		"DELETE /v1/jobs/{id}":         handle(s, producer, s.remove),
		"PATCH /v1/jobs/{id}":          handle(s, route[wire.UpdateRequest]{job: producerJob, body: needBody}, s.update),
		"POST /v1/jobs/{id}/cancel":    handle(s, producer, s.cancel),
		"GET /v1/jobs/{id}/history":    handle(s, route[none]{job: storeJob}, s.history),
		"POST /v1/jobs/{id}/resubmit":  handle(s, route[wire.ResubmitRequest]{job: producerJob, body: mayBody}, s.resubmit),
		"POST /v1/jobs/{id}/heartbeat": handle(s, route[wire.HeartbeatRequest]{job: workerJob, body: needBody}, s.heartbeatOne),
		"POST /v1/jobs/{id}/finish":    handle(s, route[wire.FinishRequest]{job: workerJob, body: needBody}, s.finishOne),
		"POST /v1/jobs/{id}/fail":      handle(s, route[wire.FailRequest]{job: workerJob, body: needBody}, s.failOne),
		"POST /v1/jobs/{id}/snooze":    handle(s, route[wire.SnoozeRequest]{job: workerJob, body: needBody, check: checkSnooze}, s.snoozeOne),
		"POST /v1/jobs/{id}/release":   handle(s, route[wire.TokenRequest]{job: workerJob, body: needBody}, s.releaseOne),
		"GET /v1/jobs/{id}/logs":       handle(s, producer, s.logs),
		"POST /v1/jobs/{id}/logs":      handle(s, route[wire.AppendLogsRequest]{job: workerJob, body: needBody}, s.appendLogs),
		"POST /v1/accept":              handle(s, route[wire.AcceptRequest]{body: needBody}, s.accept),
		"POST /v1/heartbeat":           handle(s, route[wire.HeartbeatBatchRequest]{body: needBody}, s.heartbeatBatch),
		"POST /v1/finish":              handle(s, route[wire.FinishBatchRequest]{body: needBody, decode: decodeFinishBatch}, s.finishBatch),
		"POST /v1/batches":             handle(s, route[wire.BatchRequest]{body: needBody}, s.batchAdd),
		"GET /v1/batches":              handle(s, queries, s.batchList),
		"GET /v1/batches/{id}":         handle(s, queries, s.batchGet),
		"POST /v1/batches/{id}/jobs":   handle(s, route[wire.AddBatchRequest]{body: needBody}, s.batchJobs),
		"POST /v1/batches/{id}/close":  handle(s, route[none]{}, s.batchClose),
		"GET /v1/stats":                handle(s, queries, s.stats),
		"GET /v1/events":               handle(s, queries, s.events),
		"GET /v1/types":                handle(s, queries, s.types),
		"PUT /v1/types/{type}":         handle(s, route[wire.TypeConfig]{body: needBody, check: typeOfPath}, s.setType),
		"GET /v1/groups":               handle(s, queries, s.groups),
		"PUT /v1/groups":               handle(s, route[wire.GroupConfig]{body: needBody, check: mayConfigureGroup}, s.setGroup),
		"GET /v1/tokens":               handle(s, route[none]{allow: s.namedTokens}, s.listTokens),
		"POST /v1/tokens":              handle(s, route[wire.CreateTokenRequest]{allow: s.namedTokens, body: needBody}, s.createToken),
		"DELETE /v1/tokens/{name}":     handle(s, route[none]{allow: s.namedTokens}, s.revokeToken),
	}
	for _, pattern := range Routes {
		h := handlers[pattern]
		if h == nil {
			panic("httpapi: no handler for " + pattern)
		}
		s.mux.Handle(pattern, s.guard(pattern, h))
	}
	// Anything else under /v1 is a JSON 404 or 405, never an HTML page.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		for _, pattern := range Routes {
			method, path, _ := strings.Cut(pattern, " ")
			if pathMatches(path, r.URL.Path) && method != r.Method {
				writeErrorCode(w, http.StatusMethodNotAllowed, wire.CodeMethod, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path))
				return
			}
		}
		writeErrorCode(w, http.StatusNotFound, wire.CodeNotFound, fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path))
	})
}

func pathMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], "{") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}

// ServeHTTP applies the connection rules (conn.go), checks
// authentication (access.go) and dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.serveConn(w, r, s.serve)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if err := crossOrigin.Check(r); err != nil {
		writeErrorCode(w, http.StatusForbidden, wire.CodeForbidden, "a page of another site may not change anything here: "+err.Error())
		return
	}
	a, status, msg := s.authenticate(r)
	if status != 0 {
		// Answered before its body is read, and the connection closes
		// (serveConn waits bodyLinger at most for the body): a client
		// without a valid token holds nothing.
		closeAfter(w, r)
	}
	switch {
	case status == http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="rota"`)
		writeErrorCode(w, status, wire.CodeUnauthorized, msg)
		return
	case status != 0:
		writeErrorCode(w, status, wire.CodeForbidden, msg)
		return
	case a == nil:
		// The token store could not be read.
		writeErrorCode(w, http.StatusServiceUnavailable, wire.CodeUnavailable, "cannot check the bearer token now: "+msg)
		return
	}
	leave, err := s.flight.enter(a)
	if err != nil {
		// Refused before its body is read, as a refused token is.
		closeAfter(w, r)
		s.writeError(w, r, err)
		return
	}
	defer leave()
	// Every change the request makes is recorded with its token's name.
	r = r.WithContext(store.WithActor(r.Context(), a.actor()))
	if a != adminAccess {
		r = r.WithContext(store.WithReach(context.WithValue(r.Context(), accessKey{}, a), a.reach))
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if _, err := s.c.List(ctx, store.ListParams{Limit: 1}); err != nil {
		writeErrorCode(w, http.StatusServiceUnavailable, wire.CodeUnavailable, "store: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPI)
}

func pathID(r *http.Request) (int64, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, check.Invalidf("job id %q is not a positive integer", raw)
	}
	return id, nil
}

// hideToken removes the lease token from jobs shown to anyone but the
// worker that holds them.
func hideToken(j store.Job) store.Job {
	j.Token = ""
	return j
}

// ---- producer side ----

func (s *Server) add(r *http.Request, _ int64, raw *json.RawMessage) (answer, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(*raw, &probe); err != nil {
		return answer{}, check.Invalidf("the body must be a JSON object: a job, or {\"jobs\": [...]}")
	}
	if jobs, batch := probe["jobs"]; batch {
		return s.addBatch(r, *raw, jobs)
	}
	var req wire.AddRequest
	if err := decodeStrict(*raw, &req); err != nil {
		return answer{}, err
	}
	p := req.Params()
	if err := mayAdd(accessOf(r), []store.AddParams{p}); err != nil {
		return answer{}, err
	}
	res, err := s.c.Add(r.Context(), p)
	if err != nil {
		return answer{}, err
	}
	s.metrics.added.WithLabelValues(s.metrics.types.of(res.Job.Type)).Inc()
	status := http.StatusOK
	if res.Outcome == store.Inserted {
		status = http.StatusCreated
	}
	return answer{status: status, body: wire.AddResponse{Job: hideToken(res.Job), Outcome: res.Outcome}}, nil
}

// addBatch adds {"jobs": [...]}; an oversized batch is refused before its
// jobs are decoded.
func (s *Server) addBatch(r *http.Request, raw, jobs json.RawMessage) (answer, error) {
	if n := check.JSONArrayLen(jobs); n > store.MaxAddBatch {
		return answer{}, check.TooLarge("a batch of %d jobs is more than %d", n, store.MaxAddBatch)
	}
	var req wire.AddBatchRequest
	if err := decodeStrict(raw, &req); err != nil {
		return answer{}, err
	}
	if len(req.Jobs) == 0 {
		return answer{}, check.Invalidf("\"jobs\" is empty")
	}
	ps := make([]store.AddParams, len(req.Jobs))
	for i, j := range req.Jobs {
		ps[i] = j.Params()
	}
	if err := mayAdd(accessOf(r), ps); err != nil {
		return answer{}, err
	}
	res, err := s.c.AddMany(r.Context(), ps)
	if err != nil {
		return answer{}, err
	}
	out := wire.AddBatchResponse{Results: make([]wire.AddResponse, len(res))}
	for i, x := range res {
		out.Results[i] = wire.AddResponse{Job: hideToken(x.Job), Outcome: x.Outcome}
		s.metrics.added.WithLabelValues(s.metrics.types.of(x.Job.Type)).Inc()
	}
	return ok(out), nil
}

func (s *Server) get(r *http.Request, id int64, _ *none) (answer, error) {
	wait, states, err := s.waitParams(r)
	if err != nil {
		return answer{}, err
	}
	if wait > 0 {
		// A long poll, couch_jobs' wait: the job once it is in one of
		// the states (terminal ones by default), with its data; when the
		// wait passes first, or the job ends in another state, the job
		// as it is, which the caller tells by its state.
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		j, werr := s.c.Wait(ctx, id, states...)
		cancel()
		switch {
		case werr == nil && accessOf(r).reaches(j.Type, j.Group):
			return ok(wire.JobResponse{Job: hideToken(j)}), nil
		case errors.Is(werr, store.ErrNotFound):
			return answer{}, notFound(id)
		case werr != nil && !errors.Is(werr, context.DeadlineExceeded) && !errors.Is(werr, store.ErrFinished):
			return answer{}, werr
		}
	}
	j, err := s.c.Get(r.Context(), id)
	if err == nil && !accessOf(r).reaches(j.Type, j.Group) {
		err = notFound(id)
	}
	if err != nil {
		return answer{}, err
	}
	return ok(wire.JobResponse{Job: hideToken(j)}), nil
}

// waitParams reads a get's long poll: wait (a duration up to the
// server's MaxWait; none answers at once) and the states to wait for
// (state, repeatable or comma-separated).
func (s *Server) waitParams(r *http.Request) (time.Duration, []store.State, error) {
	q := r.URL.Query()
	for name := range q {
		if name != "wait" && name != "state" {
			return 0, nil, check.Invalidf("unknown query parameter %q (want wait, state)", name)
		}
	}
	var states []store.State
	for _, name := range queryList(r, "state") {
		st, err := store.ParseState(name)
		if err != nil {
			return 0, nil, err
		}
		states = append(states, st)
	}
	v := q.Get("wait")
	if v == "" {
		if len(states) > 0 {
			return 0, nil, check.Invalidf("state needs wait (how long to wait for the job to be in one of them)")
		}
		return 0, nil, nil
	}
	wait, err := time.ParseDuration(v)
	if err != nil || wait < 0 || wait > s.cfg.MaxWait {
		return 0, nil, check.Invalidf("wait %q is not a duration in 0..%v", v, s.cfg.MaxWait)
	}
	return wait, states, nil
}

// deps answers a job's dependencies with their outcomes and its
// dependants (Client.Deps): the dependencies the token does not reach
// show as their ids and states alone, and the dependants it does not
// reach are left out.
func (s *Server) deps(r *http.Request, id int64, _ *none) (answer, error) {
	q := r.URL.Query()
	for name := range q {
		if name != "limit" {
			return answer{}, check.Invalidf("unknown query parameter %q (want limit)", name)
		}
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxListLimit {
			return answer{}, check.Invalidf("limit %q: want 1..%d", v, store.MaxListLimit)
		}
		limit = n
	}
	// The request's reach leaves out what the token does not reach
	// (Client.Deps).
	deps, after, err := s.c.Deps(r.Context(), id, limit)
	if err != nil {
		return answer{}, err
	}
	if deps == nil {
		deps = []store.Dep{}
	}
	if after == nil {
		after = []int64{}
	}
	return ok(wire.DepsResponse{Deps: deps, Dependants: after}), nil
}

// queryList reads a repeatable query parameter; values may also be
// comma-separated.
func queryList(r *http.Request, name string) []string {
	var out []string
	for _, v := range r.URL.Query()[name] {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

var listParams = []string{"type", "state", "group", "parent", "recurring", "updated_since", "limit", "cursor", "order", "key", "id"}

func (s *Server) list(r *http.Request, _ int64, _ *none) (answer, error) {
	q := r.URL.Query()
	for name := range q {
		if !slices.Contains(listParams, name) {
			return answer{}, check.Invalidf("unknown query parameter %q (want one of %s)", name, strings.Join(listParams, ", "))
		}
	}
	if ids := queryList(r, "id"); len(ids) > 0 {
		return s.listByID(r, ids)
	}
	if key := q.Get("key"); key != "" {
		return s.listByKey(r, key)
	}
	p, err := listFilter(r)
	if err != nil {
		return answer{}, err
	}
	res, err := s.c.List(r.Context(), p)
	if err != nil {
		return answer{}, err
	}
	// The store pages over the jobs the token reaches (the request's
	// context carries its reach): a cursor is given only when one of them
	// follows. Filtering again here costs nothing and keeps a store that
	// does not honour the reach from showing more.
	a := accessOf(r)
	out := wire.ListResponse{Jobs: make([]store.Job, 0, len(res.Jobs))}
	for _, j := range res.Jobs {
		if a.reaches(j.Type, j.Group) {
			out.Jobs = append(out.Jobs, hideToken(j))
		}
	}
	if res.Next != 0 {
		out.NextCursor = strconv.FormatInt(res.Next, 10)
	}
	return ok(out), nil
}

// listFilter reads a listing's query parameters.
func listFilter(r *http.Request) (store.ListParams, error) {
	q := r.URL.Query()
	p := store.ListParams{Types: queryList(r, "type"), Groups: q["group"]} // group names may contain commas
	for _, name := range queryList(r, "state") {
		st, err := store.ParseState(name)
		if err != nil {
			return p, err
		}
		p.States = append(p.States, st)
	}
	var err error
	if v := q.Get("updated_since"); v != "" {
		if p.UpdatedSince, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return p, check.Invalidf("updated_since %q is not an RFC 3339 time", v)
		}
	}
	switch q.Get("recurring") {
	case "", "false":
	case "true":
		p.Recurring = true
	default:
		return p, check.Invalidf("recurring %q: want true or false", q.Get("recurring"))
	}
	if v := q.Get("parent"); v != "" {
		if p.Parent, err = strconv.ParseInt(v, 10, 64); err != nil || p.Parent <= 0 {
			return p, check.Invalidf("parent %q is not a job id", v)
		}
	}
	if v := q.Get("limit"); v != "" {
		if p.Limit, err = strconv.Atoi(v); err != nil || p.Limit <= 0 {
			return p, check.Invalidf("limit %q is not a number in 1..%d", v, store.MaxListLimit)
		}
	}
	if v := q.Get("cursor"); v != "" {
		if p.After, err = strconv.ParseInt(v, 10, 64); err != nil || p.After <= 0 {
			return p, check.Invalidf("cursor %q is not one this server gave out", v)
		}
	}
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		p.Descending = true
	default:
		return p, check.Invalidf("order %q: want asc or desc", q.Get("order"))
	}
	return p, nil
}

// listByKey lists the job with a key: a key is unique within a type and a
// group, the default one ("") unless given.
func (s *Server) listByKey(r *http.Request, key string) (answer, error) {
	types, groups := queryList(r, "type"), r.URL.Query()["group"]
	if len(types) != 1 || len(groups) > 1 {
		return answer{}, check.Invalidf("key needs exactly one type, and at most one group (the default group when none)")
	}
	j, err := s.c.GetByKey(r.Context(), types[0], r.URL.Query().Get("group"), key)
	if errors.Is(err, store.ErrNotFound) || err == nil && !accessOf(r).reaches(j.Type, j.Group) {
		return ok(wire.ListResponse{Jobs: []store.Job{}}), nil
	}
	if err != nil {
		return answer{}, err
	}
	return ok(wire.ListResponse{Jobs: []store.Job{hideToken(j)}}), nil
}

func (s *Server) listByID(r *http.Request, raw []string) (answer, error) {
	if len(raw) > store.MaxListLimit {
		return answer{}, check.Invalidf("at most %d ids at once", store.MaxListLimit)
	}
	ids := make([]int64, len(raw))
	for i, v := range raw {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			return answer{}, check.Invalidf("id %q is not a positive integer", v)
		}
		ids[i] = id
	}
	jobs, err := s.c.GetMany(r.Context(), ids)
	if err != nil {
		return answer{}, err
	}
	out := wire.ListResponse{Jobs: []store.Job{}}
	a := accessOf(r)
	for _, j := range jobs {
		if j.ID != 0 && a.reaches(j.Type, j.Group) {
			out.Jobs = append(out.Jobs, hideToken(j))
		}
	}
	return ok(out), nil
}

// cancel answers with the job as get does (a long poll, when asked).
// history is a job's history; a scoped token's reach applies in the
// store, to a removed job's records too.
func (s *Server) history(r *http.Request, id int64, _ *none) (answer, error) {
	h, err := s.c.History(r.Context(), id)
	if err != nil {
		return answer{}, err
	}
	return ok(wire.HistoryResponse{History: h}), nil
}

func (s *Server) cancel(r *http.Request, id int64, _ *none) (answer, error) {
	if err := s.c.Cancel(r.Context(), id); err != nil {
		return answer{}, err
	}
	return s.get(r, id, nil)
}

func (s *Server) resubmit(r *http.Request, id int64, req *wire.ResubmitRequest) (answer, error) {
	p := store.ResubmitParams{ID: id, Data: req.Data}
	if req.RunAt != nil {
		p.RunAt = *req.RunAt
	}
	res, err := s.c.Resubmit(r.Context(), p)
	if err != nil {
		return answer{}, err
	}
	return ok(wire.AddResponse{Job: hideToken(res.Job), Outcome: res.Outcome}), nil
}

func (s *Server) update(r *http.Request, id int64, req *wire.UpdateRequest) (answer, error) {
	j, err := s.c.Update(r.Context(), req.Params(id))
	if err != nil {
		return answer{}, err
	}
	return ok(wire.JobResponse{Job: hideToken(j)}), nil
}

func (s *Server) remove(r *http.Request, id int64, _ *none) (answer, error) {
	if err := s.c.Remove(r.Context(), id); err != nil {
		return answer{}, err
	}
	return noContent, nil
}

func (s *Server) stats(r *http.Request, _ int64, _ *none) (answer, error) {
	counts, err := s.c.Stats(r.Context())
	if err != nil {
		return answer{}, err
	}
	a := accessOf(r)
	out := wire.StatsResponse{Counts: []store.Count{}, ByState: map[string]int64{}}
	for _, c := range counts {
		if a.reaches(c.Type, c.Group) {
			out.Counts = append(out.Counts, c)
		}
	}
	for st := store.Pending; st.Valid(); st++ {
		out.ByState[st.String()] = 0
	}
	for _, c := range out.Counts {
		out.ByState[c.State.String()] += c.Jobs
	}
	return ok(out), nil
}

func (s *Server) types(r *http.Request, _ int64, _ *none) (answer, error) {
	tcs, err := s.c.TypeConfigs(r.Context())
	if err != nil {
		return answer{}, err
	}
	a := accessOf(r)
	out := wire.TypesResponse{Types: []wire.TypeConfig{}}
	for _, tc := range tcs {
		if a.types == nil || a.reachesType(tc.Type) {
			out.Types = append(out.Types, wire.NewTypeConfig(tc))
		}
	}
	return ok(out), nil
}

// typeOfPath checks that a type's setting names the type of its path, if
// any.
func typeOfPath(r *http.Request, req *wire.TypeConfig) error {
	typ := r.PathValue("type")
	if req.Type != "" && req.Type != typ {
		return check.Invalidf("body names type %q but the path names %q", req.Type, typ)
	}
	req.Type = typ
	return nil
}

func (s *Server) setType(r *http.Request, _ int64, req *wire.TypeConfig) (answer, error) {
	tc, err := req.Params()
	if err == nil {
		err = s.c.SetTypeConfig(r.Context(), tc)
	}
	if err != nil {
		return answer{}, err
	}
	return ok(wire.NewTypeConfig(tc)), nil
}

func (s *Server) groups(r *http.Request, _ int64, _ *none) (answer, error) {
	gcs, err := s.c.GroupConfigs(r.Context())
	if err != nil {
		return answer{}, err
	}
	a := accessOf(r)
	out := wire.GroupsResponse{Groups: []wire.GroupConfig{}}
	for _, g := range gcs {
		if a.reachesGroupConfig(g) {
			out.Groups = append(out.Groups, wire.NewGroupConfig(g))
		}
	}
	return ok(out), nil
}

// mayConfigureGroup checks that the token reaches the group it sets.
func mayConfigureGroup(r *http.Request, req *wire.GroupConfig) error {
	gc, err := req.Params()
	if err != nil {
		return err
	}
	if a := accessOf(r); !a.reachesGroupConfig(gc) {
		return fmt.Errorf("%w: %s may not set %s of %s", wire.ErrForbidden, a, groupName(gc.Group), typeName(gc.Type))
	}
	return nil
}

func (s *Server) setGroup(r *http.Request, _ int64, req *wire.GroupConfig) (answer, error) {
	gc, err := req.Params()
	if err != nil {
		return answer{}, err
	}
	if err := s.c.SetGroupConfig(r.Context(), gc); err != nil {
		return answer{}, err
	}
	return ok(req), nil
}

// ---- worker side ----

func (s *Server) accept(r *http.Request, _ int64, req *wire.AcceptRequest) (answer, error) {
	if req.Wait < 0 || time.Duration(req.Wait) > s.cfg.MaxWait {
		return answer{}, check.Invalidf("wait %v is out of range 0..%v", time.Duration(req.Wait), s.cfg.MaxWait)
	}
	p := req.Params()
	if err := scopeAccept(accessOf(r), &p); err != nil {
		return answer{}, err
	}
	start := time.Now()
	ctx, stop := r.Context(), func() {}
	if req.Wait > 0 {
		ctx, stop = s.whileValid(r) // a revoked token's wait ends
	}
	jobs, err := s.c.Accept(ctx, p)
	stop()
	if err != nil {
		if revoked(ctx) {
			err = errRevoked
		}
		return answer{}, err
	}
	if len(jobs) > 0 || req.Wait == 0 {
		s.metrics.acceptLatency.Observe(time.Since(start).Seconds())
	}
	for _, j := range jobs {
		s.metrics.accepted.WithLabelValues(s.metrics.types.of(j.Type)).Inc()
	}
	// The answer as encoding/json would write wire.AcceptWire, without
	// its reflection: it carries every job a remote worker runs.
	return rawJSON(wire.AppendAccept(make([]byte, 0, 512*len(jobs)+16), jobs)), nil
}

func (s *Server) heartbeatOne(r *http.Request, id int64, req *wire.HeartbeatRequest) (answer, error) {
	res, err := s.c.Heartbeat(r.Context(), store.HeartbeatParams{Lease: store.Lease{ID: id, Token: req.Token}, Data: req.Data, Progress: req.Progress})
	if err != nil {
		return answer{}, err
	}
	return ok(wire.HeartbeatResponse{LeaseUntil: res.LeaseUntil, Resubmit: res.Resubmit}), nil
}

// logsParams are the query parameters of GET /v1/jobs/{id}/logs.
var logsParams = []string{"attempt", "after", "limit"}

// logs answers a page of a job's log: ?attempt= (default the latest that
// logged), ?after= (a seq), ?limit= (at most 1,000, the default).
func (s *Server) logs(r *http.Request, id int64, _ *none) (answer, error) {
	p := store.LogsParams{ID: id}
	for name, vs := range r.URL.Query() {
		var dst *int
		switch name {
		case "attempt":
			dst = &p.Attempt
		case "after":
			dst = &p.After
		case "limit":
			dst = &p.Limit
		default:
			return answer{}, check.Invalidf("unknown query parameter %q (want one of %s)", name, strings.Join(logsParams, ", "))
		}
		n, err := strconv.Atoi(vs[0])
		if err != nil || len(vs) > 1 {
			return answer{}, check.Invalidf("%s %q is not one integer", name, vs[0])
		}
		*dst = n
	}
	res, err := s.c.Logs(r.Context(), p)
	if errors.Is(err, rota.ErrNoLogs) {
		return answer{}, check.Invalidf("this server's store keeps no per-job logs")
	}
	if err != nil {
		return answer{}, err
	}
	return ok(wire.Logs(res)), nil
}

// appendLogs appends records to the log of the attempt the token holds;
// the store bounds the attempt's log whatever the worker says.
func (s *Server) appendLogs(r *http.Request, id int64, req *wire.AppendLogsRequest) (answer, error) {
	recs, err := wire.LogRecords(req.Records)
	if err != nil {
		return answer{}, err
	}
	res, err := s.c.AppendLogs(r.Context(), []store.AppendLogsParams{{Lease: store.Lease{ID: id, Token: req.Token}, Records: recs, Dropped: req.Dropped}})
	if errors.Is(err, rota.ErrNoLogs) {
		return answer{}, check.Invalidf("this server's store keeps no per-job logs")
	}
	if err != nil {
		return answer{}, err
	}
	if res[0].Err != nil {
		return answer{}, res[0].Err
	}
	return ok(wire.AppendLogsResponse{Kept: res[0].Kept, Dropped: res[0].Dropped}), nil
}

func (s *Server) heartbeatBatch(r *http.Request, _ int64, req *wire.HeartbeatBatchRequest) (answer, error) {
	ps := make([]store.HeartbeatParams, len(req.Items))
	ids := make([]int64, len(req.Items))
	for i, it := range req.Items {
		ps[i] = store.HeartbeatParams{Lease: store.Lease{ID: it.ID, Token: it.Token}, Data: it.Data, Progress: it.Progress}
		ids[i] = it.ID
	}
	// Items the token does not reach are refused one by one; the rest go on.
	refused := s.reachEach(r, ids, noLease)
	var run []store.HeartbeatParams
	for i, p := range ps {
		if refused[i] == nil {
			run = append(run, p)
		}
	}
	var done []store.HeartbeatResult
	var err error
	if len(run) > 0 {
		done, err = s.c.HeartbeatMany(r.Context(), run)
	}
	if err != nil {
		return answer{}, err
	}
	out := wire.HeartbeatBatchResponse{Results: make([]wire.HeartbeatResult, len(ps))}
	for i := range ps {
		var x store.HeartbeatResult
		if refused[i] != nil {
			x.Err = refused[i]
		} else {
			x, done = done[0], done[1:]
		}
		out.Results[i] = wire.HeartbeatResult{LeaseUntil: x.LeaseUntil, Resubmit: x.Resubmit, Error: wire.ErrorOf(x.Err)}
	}
	return ok(out), nil
}

// finishSingle runs one fenced ending and answers it.
func (s *Server) finishSingle(r *http.Request, p store.FinishParams) (answer, error) {
	start := time.Now()
	errs, err := s.c.FinishMany(r.Context(), []store.FinishParams{p})
	if err != nil {
		return answer{}, err
	}
	s.metrics.finishLatency.Observe(time.Since(start).Seconds())
	if errs[0] != nil {
		return answer{}, errs[0]
	}
	return noContent, nil
}

func (s *Server) finishOne(r *http.Request, id int64, req *wire.FinishRequest) (answer, error) {
	return s.finishSingle(r, store.FinishParams{Lease: store.Lease{ID: id, Token: req.Token}, As: store.Complete, Result: req.Result})
}

func (s *Server) failOne(r *http.Request, id int64, req *wire.FailRequest) (answer, error) {
	return s.finishSingle(r, store.FinishParams{Lease: store.Lease{ID: id, Token: req.Token}, As: store.Fail, Error: req.Error, Permanent: req.Permanent})
}

// checkSnooze refuses a snooze that gives both a time and a delay, a
// negative delay, or a rename to a type out of the token's reach.
func checkSnooze(r *http.Request, req *wire.SnoozeRequest) error {
	if req.RunAt != nil && req.Delay != 0 {
		return check.Invalidf("give run_at or delay, not both")
	}
	if req.Delay < 0 {
		return check.Invalidf("delay %v must not be negative", time.Duration(req.Delay))
	}
	if a := accessOf(r); req.Rename != "" && a.types != nil && !a.reachesType(req.Rename) {
		return fmt.Errorf("%w: %s may not rename a job to type %q", wire.ErrForbidden, a, req.Rename)
	}
	return nil
}

func (s *Server) snoozeOne(r *http.Request, id int64, req *wire.SnoozeRequest) (answer, error) {
	runAt := time.Now().Add(time.Duration(req.Delay))
	if req.RunAt != nil {
		runAt = *req.RunAt
	}
	return s.finishSingle(r, store.FinishParams{Lease: store.Lease{ID: id, Token: req.Token}, As: store.Snooze, RunAt: runAt, Rename: req.Rename})
}

func (s *Server) releaseOne(r *http.Request, id int64, req *wire.TokenRequest) (answer, error) {
	return s.finishSingle(r, store.FinishParams{Lease: store.Lease{ID: id, Token: req.Token}, As: store.Release})
}

// decodeFinishBatch reads a worker's batch as json.Marshal writes it,
// without reflection (wire/finish.go), or else strictly, with errors that
// name what is wrong.
func decodeFinishBatch(body []byte, req *wire.FinishBatchRequest) error {
	var ok bool
	if *req, ok = wire.ParseFinishBatch(body); ok {
		return nil
	}
	*req = wire.FinishBatchRequest{}
	return decodeBody(body, req, false)
}

// finishParams are a finish batch's items, refused whole when one is
// malformed or renames a job to a type out of the token's reach.
func finishParams(r *http.Request, req *wire.FinishBatchRequest) ([]store.FinishParams, error) {
	ps := make([]store.FinishParams, len(req.Items))
	a := accessOf(r)
	for i, it := range req.Items {
		p, err := it.Params()
		if err == nil && p.Rename != "" && a.types != nil && !a.reachesType(p.Rename) {
			err = fmt.Errorf("%w: %s may not rename a job to type %q", wire.ErrForbidden, a, p.Rename)
		}
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

func (s *Server) finishBatch(r *http.Request, _ int64, req *wire.FinishBatchRequest) (answer, error) {
	ps, err := finishParams(r, req)
	if err != nil {
		return answer{}, err
	}
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	refused := s.reachEach(r, ids, noLease)
	var run []store.FinishParams
	for i, p := range ps {
		if refused[i] == nil {
			run = append(run, p)
		}
	}
	start := time.Now()
	var done []error
	if len(run) > 0 {
		done, err = s.c.FinishMany(r.Context(), run)
	}
	if err != nil {
		return answer{}, err
	}
	errs := make([]error, len(ps))
	for i := range errs {
		if refused[i] != nil {
			errs[i] = refused[i]
		} else {
			errs[i], done = done[0], done[1:]
		}
	}
	s.metrics.finishLatency.Observe(time.Since(start).Seconds())
	if !slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		return rawJSON(wire.AppendFinishResults(nil, len(errs))), nil
	}
	out := wire.FinishBatchResponse{Results: make([]wire.ItemResult, len(errs))}
	for i, e := range errs {
		out.Results[i] = wire.ItemResult{Error: wire.ErrorOf(e)}
	}
	return ok(out), nil
}
