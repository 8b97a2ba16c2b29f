package httpapi_test

// End-to-end tests of the HTTP API: a real SQLite store in a temporary
// directory, a rota.Client on it, the API served on a loopback port by
// httptest, and requests over real HTTP. Every response is also checked
// against the OpenAPI document (httpapi.Spec, in openapi_test.go): a status,
// a body shape or an error code the document does not describe fails the
// test. The server's error log is captured; a request that fails with a 500
// logs there, so any such log fails the test too.
//
// No test asserts how long anything took; timeouts only keep a broken
// server from hanging the run.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// ---- harness ----

type testServer struct {
	URL   string
	c     *rota.Client
	ts    *httptest.Server
	token string
	spec  *httpapi.Spec
	http  *http.Client
}

// errorLog collects the server's error-level logs.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelError }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	l.mu.Lock()
	l.msgs = append(l.msgs, b.String())
	l.mu.Unlock()
	return nil
}
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newServer starts the API on a fresh store. Everything it starts is
// stopped when the test ends, after the test's own cleanups.
func newServer(t *testing.T, cfg httpapi.Config) *testServer {
	t.Helper()
	return newServerWith(t, cfg, rota.Config{})
}

// newServerWith is newServer with the engine's configuration too.
func newServerWith(t *testing.T, cfg httpapi.Config, rcfg rota.Config) *testServer {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rcfg.Logger = quiet()
	c, err := rota.NewClient(st, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	elog := &errorLog{}
	cfg.Logger = slog.New(elog)
	api := httpapi.New(c, cfg)
	ts := httptest.NewServer(api)
	s := &testServer{URL: ts.URL, c: c, ts: ts, token: cfg.AuthToken, spec: httpapi.LoadSpec(t), http: ts.Client()}
	t.Cleanup(func() {
		ts.CloseClientConnections() // event streams and long polls
		ts.Close()
		api.Close()
		c.Close()
		st.Close()
		elog.mu.Lock()
		defer elog.mu.Unlock()
		for _, m := range elog.msgs {
			t.Errorf("the server logged an error (a 500): %s", m)
		}
	})
	return s
}

type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Body)) }

// send makes one request. body is nil (no body), a string or []byte (sent
// as is), or a value to encode as JSON. hdr is name, value pairs; an
// Authorization given there replaces the server's token.
func (s *testServer) send(ctx context.Context, method, target string, body any, hdr ...string) (reply, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+target, rd)
	if err != nil {
		return reply{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// check holds every response to the document, and to "never a 500".
func (s *testServer) check(t *testing.T, method, target string, r reply) {
	t.Helper()
	if r.Status >= 500 {
		t.Errorf("%s %s: %s; the API must not fail with a 5xx here", method, target, r)
	}
	u, _ := url.Parse(target)
	s.spec.CheckResponse(t, method, u.Path, r.Status, r.Header, r.Body)
}

func (s *testServer) do(t *testing.T, method, target string, body any, hdr ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r, err := s.send(ctx, method, target, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	s.check(t, method, target, r)
	return r
}

// want does a request and fails unless it answers status; it decodes the
// body into a T, rejecting fields T does not have.
func want[T any](t *testing.T, s *testServer, status int, method, target string, body any) T {
	t.Helper()
	r := s.do(t, method, target, body)
	if r.Status != status {
		t.Fatalf("%s %s: got %s, want status %d", method, target, r, status)
	}
	var v T
	if status == http.StatusNoContent {
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s %s: decoding %T: %v: %s", method, target, v, err, r.Body)
	}
	return v
}

func wantError(t *testing.T, r reply, status int, code, msg string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("got %s, want status %d", r, status)
	}
	var e wire.ErrorResponse
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Errorf("error body is not an ErrorResponse: %v: %s", err, r.Body)
		return
	}
	if e.Error.Code != code {
		t.Errorf("error code %q, want %q (message %q)", e.Error.Code, code, e.Error.Message)
	}
	if !strings.Contains(e.Error.Message, msg) {
		t.Errorf("error message %q does not say %q", e.Error.Message, msg)
	}
}

func (s *testServer) add(t *testing.T, job map[string]any) store.Job {
	t.Helper()
	r := s.do(t, "POST", "/v1/jobs", job)
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("add %v: %s", job, r)
	}
	var res addResp
	if err := json.Unmarshal(r.Body, &res); err != nil {
		t.Fatal(err)
	}
	return res.Job
}

func (s *testServer) accept(t *testing.T, limit int, types ...string) []store.Job {
	t.Helper()
	return want[wire.AcceptResponse](t, s, 200, "POST", "/v1/accept", map[string]any{"types": types, "limit": limit, "worker": "tester"}).Jobs
}

func (s *testServer) acceptOne(t *testing.T, typ string) store.Job {
	t.Helper()
	jobs := s.accept(t, 1, typ)
	if len(jobs) != 1 {
		t.Fatalf("accept %s: got %d jobs, want 1", typ, len(jobs))
	}
	return jobs[0]
}

func (s *testServer) get(t *testing.T, id int64) store.Job {
	t.Helper()
	return want[wire.JobResponse](t, s, 200, "GET", fmt.Sprintf("/v1/jobs/%d", id), nil).Job
}

func (s *testServer) stats(t *testing.T) wire.StatsResponse {
	t.Helper()
	return want[wire.StatsResponse](t, s, 200, "GET", "/v1/stats", nil)
}

// snapshot is the store as the API shows it: the stats and every job.
func (s *testServer) snapshot(t *testing.T) string {
	t.Helper()
	stats := s.do(t, "GET", "/v1/stats", nil)
	list := s.do(t, "GET", "/v1/jobs?limit=1000", nil)
	if stats.Status != 200 || list.Status != 200 {
		t.Fatalf("snapshot: %s / %s", stats, list)
	}
	return string(stats.Body) + "\n" + string(list.Body)
}

// addResp and addBatchResp are httpapi.AddResponse and AddBatchResponse
// with the outcome as a string: store.Outcome cannot be decoded from JSON
// (see TestRemoteAdd).
type addResp struct {
	Job     store.Job `json:"job"`
	Outcome string    `json:"outcome"`
}

type addBatchResp struct {
	Results []addResp `json:"results"`
}

func ids(jobs []store.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func path(id int64, action string) string {
	p := "/v1/jobs/" + strconv.FormatInt(id, 10)
	if action != "" {
		p += "/" + action
	}
	return p
}

func jsonEq(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Errorf("%s: %v: %s", what, err, got)
		return
	}
	json.Unmarshal([]byte(want), &b)
	ga, _ := json.Marshal(a)
	gb, _ := json.Marshal(b)
	if !bytes.Equal(ga, gb) {
		t.Errorf("%s is %s, want %s", what, got, want)
	}
}

// ---- producer routes ----

func TestAddGetListCancelResubmitRemove(t *testing.T) {
	s := newServer(t, httpapi.Config{})

	// Add one: 201 inserted, all fields as given, no token shown.
	r := want[addResp](t, s, http.StatusCreated, "POST", "/v1/jobs", map[string]any{
		"type": "email.send", "key": "k1", "group": "g1", "priority": 5, "data": map[string]any{"to": "a@example.com"},
		"max_attempts": 3, "backoff_base": "2s", "backoff_max": "1m",
	})
	if r.Outcome != "inserted" {
		t.Errorf("outcome %v, want inserted", r.Outcome)
	}
	j := r.Job
	if j.ID <= 0 || j.Type != "email.send" || j.Key != "k1" || j.Group != "g1" || j.Priority != 5 || j.State != store.Pending ||
		j.MaxAttempts != 3 || j.BackoffBase != 2*time.Second || j.BackoffMax != time.Minute || j.Token != "" || j.Attempt != 0 {
		t.Errorf("added job is %+v", j)
	}
	jsonEq(t, "data", j.Data, `{"to":"a@example.com"}`)

	// Re-add by key (in the job's group: a key is unique within a type
	// and a group): 200 updated, same id, new data.
	r = want[addResp](t, s, http.StatusOK, "POST", "/v1/jobs", map[string]any{
		"type": "email.send", "key": "k1", "group": "g1", "data": map[string]any{"to": "b@example.com"},
	})
	if r.Outcome != "updated" || r.Job.ID != j.ID {
		t.Errorf("re-add: outcome %v id %d, want updated id %d", r.Outcome, r.Job.ID, j.ID)
	}
	jsonEq(t, "re-added data", r.Job.Data, `{"to":"b@example.com"}`)

	// Add a batch: 200, one result per job, in order.
	br := want[addBatchResp](t, s, http.StatusOK, "POST", "/v1/jobs", map[string]any{"jobs": []map[string]any{
		{"type": "email.send"},
		{"type": "report.build", "group": "g2", "run_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
		{"type": "email.send", "key": "k1", "group": "g1"},
	}})
	if len(br.Results) != 3 {
		t.Fatalf("batch: %d results, want 3", len(br.Results))
	}
	for i, want := range []string{"inserted", "inserted", "updated"} {
		if br.Results[i].Outcome != want || br.Results[i].Job.Token != "" {
			t.Errorf("batch result %d: outcome %v token %q, want %v and no token", i, br.Results[i].Outcome, br.Results[i].Job.Token, want)
		}
	}
	if br.Results[2].Job.ID != j.ID {
		t.Errorf("batch re-add of k1 got id %d, want %d", br.Results[2].Job.ID, j.ID)
	}
	other, report := br.Results[0].Job, br.Results[1].Job

	// Get.
	if g := s.get(t, report.ID); g.ID != report.ID || g.Type != "report.build" || g.Group != "g2" || !g.RunAt.After(time.Now()) {
		t.Errorf("get: %+v", g)
	}

	// List with filters.
	list := func(q string) []int64 {
		t.Helper()
		return ids(want[wire.ListResponse](t, s, 200, "GET", "/v1/jobs?"+q, nil).Jobs)
	}
	for _, c := range []struct {
		q    string
		want []int64
	}{
		{"", []int64{j.ID, other.ID, report.ID}},
		{"type=email.send", []int64{j.ID, other.ID}},
		{"type=email.send,report.build", []int64{j.ID, other.ID, report.ID}},
		{"type=email.send&type=report.build&order=desc", []int64{report.ID, other.ID, j.ID}},
		{"type=report.build&state=pending&group=g2", []int64{report.ID}},
		{"group=g1&group=g2", []int64{j.ID, report.ID}}, // k1 stays in its group
		{"group=", []int64{other.ID}},                   // the empty group
		{"group=g2&group=", []int64{other.ID, report.ID}},
		{"state=running", []int64{}},
		{"state=pending,running&order=asc&limit=2", []int64{j.ID, other.ID}},
		{"type=email.send&key=k1&group=g1", []int64{j.ID}},
		{"type=email.send&key=k1", []int64{}}, // the default group has no job of that key
		{"type=email.send&key=nope", []int64{}},
		{fmt.Sprintf("id=%d,%d&id=999999", report.ID, j.ID), []int64{report.ID, j.ID}},
	} {
		if got := list(c.q); !slices.Equal(got, c.want) {
			t.Errorf("list ?%s: ids %v, want %v", c.q, got, c.want)
		}
	}

	// Cursor pagination, both ways, until next_cursor is absent.
	var batch []map[string]any
	for i := range 25 {
		batch = append(batch, map[string]any{"type": "page", "priority": i})
	}
	added := want[addBatchResp](t, s, 200, "POST", "/v1/jobs", map[string]any{"jobs": batch})
	var wantIDs []int64
	for _, r := range added.Results {
		wantIDs = append(wantIDs, r.Job.ID)
	}
	for _, order := range []string{"asc", "desc"} {
		var got []int64
		cursor, pages := "", 0
		for {
			q := "/v1/jobs?type=page&limit=7&order=" + order
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			page := want[wire.ListResponse](t, s, 200, "GET", q, nil)
			got = append(got, ids(page.Jobs)...)
			if pages++; pages > 10 {
				t.Fatalf("%s: more than 10 pages for 25 jobs", order)
			}
			if page.NextCursor == "" {
				break
			}
			if len(page.Jobs) == 0 {
				t.Fatalf("%s: an empty page with a next_cursor", order)
			}
			cursor = page.NextCursor
		}
		w := slices.Clone(wantIDs)
		if order == "desc" {
			slices.Reverse(w)
		}
		if !slices.Equal(got, w) {
			t.Errorf("paging %s: ids %v, want %v", order, got, w)
		}
	}

	// Cancel: 200 with the cancelled job; again: still fine.
	c := want[wire.JobResponse](t, s, 200, "POST", path(other.ID, "cancel"), nil).Job
	if c.State != store.Cancelled || c.FinishedAt.IsZero() {
		t.Errorf("cancelled job: %+v", c)
	}
	if c := want[wire.JobResponse](t, s, 200, "POST", path(other.ID, "cancel"), nil).Job; c.State != store.Cancelled {
		t.Errorf("second cancel: state %v", c.State)
	}

	// Resubmit the cancelled job with new data: requeued, same id.
	rr := want[addResp](t, s, 200, "POST", path(other.ID, "resubmit"), map[string]any{"data": map[string]any{"again": true}})
	if rr.Outcome != "requeued" || rr.Job.ID != other.ID || rr.Job.State != store.Pending || !rr.Job.FinishedAt.IsZero() {
		t.Errorf("resubmit of a cancelled job: %v %+v", rr.Outcome, rr.Job)
	}
	jsonEq(t, "resubmitted data", rr.Job.Data, `{"again":true}`)

	// Resubmit of a pending job with a new run time, and without a body.
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	rr = want[addResp](t, s, 200, "POST", path(report.ID, "resubmit"), map[string]any{"run_at": at})
	if rr.Outcome != "updated" || !rr.Job.RunAt.Equal(at) {
		t.Errorf("resubmit of a pending job: %v run_at %v, want updated at %v", rr.Outcome, rr.Job.RunAt, at)
	}
	rr = want[addResp](t, s, 200, "POST", path(report.ID, "resubmit"), nil)
	if rr.Outcome != "updated" || !rr.Job.RunAt.Equal(at) {
		t.Errorf("body-less resubmit of a pending job: %v run_at %v, want updated, run_at kept at %v", rr.Outcome, rr.Job.RunAt, at)
	}

	// Remove: 204, then it is gone.
	want[struct{}](t, s, http.StatusNoContent, "DELETE", path(report.ID, ""), nil)
	wantError(t, s.do(t, "GET", path(report.ID, ""), nil), 404, "not_found", "not found")
	wantError(t, s.do(t, "DELETE", path(report.ID, ""), nil), 404, "not_found", "not found")

	// Stats: counts by type, group and state, and totals by state.
	st := s.stats(t)
	if st.ByState["pending"] != 27 || st.ByState["cancelled"] != 0 || len(st.ByState) != 7 {
		t.Errorf("by_state %v, want 27 pending and all seven states", st.ByState)
	}
	var total int64
	for _, c := range st.Counts {
		total += c.Jobs
	}
	if total != 27 {
		t.Errorf("counts %+v add up to %d, want 27", st.Counts, total)
	}
}

func TestTypes(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	if got := want[wire.TypesResponse](t, s, 200, "GET", "/v1/types", nil); len(got.Types) != 0 {
		t.Errorf("a new store knows types %+v", got.Types)
	}
	tc := want[wire.TypeConfig](t, s, 200, "PUT", "/v1/types/email.send", map[string]any{"lease_timeout": "45s"})
	if tc.Type != "email.send" || time.Duration(tc.LeaseTimeout) != 45*time.Second {
		t.Errorf("PUT answered %+v", tc)
	}
	want[wire.TypeConfig](t, s, 200, "PUT", "/v1/types/report.build", map[string]any{"type": "report.build", "lease_timeout": "2m", "failed_retention": "720h", "max_running": 12, "rate": "50/s", "burst": 80})
	got := want[wire.TypesResponse](t, s, 200, "GET", "/v1/types", nil)
	// email.send keeps its failed jobs until removed (no failed_retention).
	wantTypes := []wire.TypeConfig{
		{Type: "email.send", LeaseTimeout: wire.Duration(45 * time.Second), Retention: wire.Duration(store.DefaultRetention)},
		{Type: "report.build", LeaseTimeout: wire.Duration(2 * time.Minute), Retention: wire.Duration(store.DefaultRetention),
			FailedRetention: wire.Duration(720 * time.Hour), MaxRunning: 12, Rate: "50/s", Burst: 80},
	}
	if !slices.Equal(got.Types, wantTypes) {
		t.Errorf("types %+v, want %+v", got.Types, wantTypes)
	}
	// A group's rate, for one type and for all.
	want[wire.GroupConfig](t, s, 200, "PUT", "/v1/groups", map[string]any{"group": "acme", "type": "report.build", "rate": "3/m"})
	want[wire.GroupConfig](t, s, 200, "PUT", "/v1/groups", map[string]any{"group": "acme", "rate": "10/h", "burst": 2})
	groups := want[wire.GroupsResponse](t, s, 200, "GET", "/v1/groups", nil)
	wantGroups := []wire.GroupConfig{{Group: "acme", Rate: "10/h", Burst: 2}, {Group: "acme", Type: "report.build", Rate: "3/m"}}
	if !slices.Equal(groups.Groups, wantGroups) {
		t.Errorf("groups %+v, want %+v", groups.Groups, wantGroups)
	}
	// The lease timeout applies to accepted jobs.
	s.add(t, map[string]any{"type": "email.send"})
	j := s.acceptOne(t, "email.send")
	if d := time.Until(j.LeaseUntil); d < 30*time.Second || d > 46*time.Second {
		t.Errorf("lease_until is %v from now, want about 45s", d)
	}
}

// ---- worker routes ----

func TestAcceptHeartbeatFinish(t *testing.T) {
	s := newServer(t, httpapi.Config{})

	// Accept with a limit, in priority order, each with a token.
	for i := range 8 {
		s.add(t, map[string]any{"type": "acc", "priority": i, "data": map[string]any{"n": i}})
	}
	jobs := s.accept(t, 3, "acc")
	if len(jobs) != 3 {
		t.Fatalf("accept limit 3: got %d jobs", len(jobs))
	}
	for i, j := range jobs {
		if j.State != store.Running || j.Token == "" || j.Worker != "tester" || j.Attempt != 1 || j.Priority != 7-i || j.LeaseUntil.IsZero() {
			t.Errorf("accepted job %d: %+v", i, j)
		}
	}
	more := s.accept(t, 10, "a*") // a GLOB pattern
	if len(more) != 5 {
		t.Fatalf("second accept: got %d jobs, want the other 5", len(more))
	}
	if none := s.accept(t, 10, "acc"); len(none) != 0 {
		t.Errorf("third accept: got %d jobs, want none", len(none))
	}
	jobs = append(jobs, more...) // priorities 7..0
	hb, fin, failOnce, failPerm, snoozeD, snoozeAt, rel, resub := jobs[0], jobs[1], jobs[2], jobs[3], jobs[4], jobs[5], jobs[6], jobs[7]

	// Heartbeat with progress and data.
	h := want[wire.HeartbeatResponse](t, s, 200, "POST", path(hb.ID, "heartbeat"), map[string]any{"token": hb.Token, "progress": 42.5, "data": map[string]any{"step": 2}})
	if h.LeaseUntil.Before(hb.LeaseUntil) || h.Resubmit {
		t.Errorf("heartbeat: %+v (lease was until %v)", h, hb.LeaseUntil)
	}
	if g := s.get(t, hb.ID); g.Progress != 42.5 || g.State != store.Running || g.Token != "" {
		t.Errorf("after heartbeat: %+v", g)
	} else {
		jsonEq(t, "heartbeat data", g.Data, `{"step":2}`)
	}

	// Finish, and finish again with the same token.
	want[struct{}](t, s, 204, "POST", path(fin.ID, "finish"), map[string]any{"token": fin.Token, "result": map[string]any{"ok": true}})
	want[struct{}](t, s, 204, "POST", path(fin.ID, "finish"), map[string]any{"token": fin.Token, "result": map[string]any{"ok": true}})
	if g := s.get(t, fin.ID); g.State != store.Completed || g.FinishedAt.IsZero() {
		t.Errorf("after finish: %+v", g)
	} else {
		jsonEq(t, "result", g.Result, `{"ok":true}`)
	}

	// Fail: retried; fail permanently: failed.
	want[struct{}](t, s, 204, "POST", path(failOnce.ID, "fail"), map[string]any{"token": failOnce.Token, "error": "boom"})
	if g := s.get(t, failOnce.ID); g.State != store.Pending || g.LastError != "boom" || len(g.Errors) != 1 || g.Attempt != 1 || !g.RunAt.After(time.Now().Add(-time.Minute)) {
		t.Errorf("after fail: %+v", g)
	}
	want[struct{}](t, s, 204, "POST", path(failPerm.ID, "fail"), map[string]any{"token": failPerm.Token, "error": "fatal", "permanent": true})
	if g := s.get(t, failPerm.ID); g.State != store.Failed || g.LastError != "fatal" {
		t.Errorf("after permanent fail: %+v", g)
	}

	// Snooze by delay and to a time: pending, the attempt given back.
	want[struct{}](t, s, 204, "POST", path(snoozeD.ID, "snooze"), map[string]any{"token": snoozeD.Token, "delay": "1h"})
	if g := s.get(t, snoozeD.ID); g.State != store.Pending || g.Attempt != 0 || g.RunAt.Before(time.Now().Add(50*time.Minute)) || g.LastError != "" {
		t.Errorf("after snooze by delay: %+v", g)
	}
	at := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Millisecond)
	want[struct{}](t, s, 204, "POST", path(snoozeAt.ID, "snooze"), map[string]any{"token": snoozeAt.Token, "run_at": at})
	if g := s.get(t, snoozeAt.ID); g.State != store.Pending || !g.RunAt.Equal(at) {
		t.Errorf("after snooze to %v: %+v", at, g)
	}

	// Release: pending and due, the attempt given back.
	want[struct{}](t, s, 204, "POST", path(rel.ID, "release"), map[string]any{"token": rel.Token})
	if g := s.get(t, rel.ID); g.State != store.Pending || g.Attempt != 0 || g.RunAt.After(time.Now()) {
		t.Errorf("after release: %+v", g)
	}

	// Resubmit while running: the heartbeat tells the worker; finishing
	// puts the job back to pending.
	rr := want[addResp](t, s, 200, "POST", path(resub.ID, "resubmit"), "")
	if rr.Outcome != "resubmitted" || rr.Job.State != store.Running || !rr.Job.Resubmit {
		t.Errorf("resubmit of a running job: %v %+v", rr.Outcome, rr.Job)
	}
	if h := want[wire.HeartbeatResponse](t, s, 200, "POST", path(resub.ID, "heartbeat"), map[string]any{"token": resub.Token}); !h.Resubmit {
		t.Errorf("heartbeat after resubmit: resubmit is false")
	}
	want[struct{}](t, s, 204, "POST", path(resub.ID, "finish"), map[string]any{"token": resub.Token})
	if g := s.get(t, resub.ID); g.State != store.Pending || g.Attempt != 0 {
		t.Errorf("resubmitted job after finish: %+v", g)
	}
}

func TestBatchHeartbeatAndFinish(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	for range 8 {
		s.add(t, map[string]any{"type": "batch"})
	}
	jobs := s.accept(t, 8, "batch")
	if len(jobs) != 8 {
		t.Fatalf("accepted %d jobs, want 8", len(jobs))
	}
	const stale = "00000000000000000000000000000000"
	p := 10.0

	// Heartbeat: good, stale, cancelled, good.
	want[wire.JobResponse](t, s, 200, "POST", path(jobs[2].ID, "cancel"), nil)
	hb := want[wire.HeartbeatBatchResponse](t, s, 200, "POST", "/v1/heartbeat", wire.HeartbeatBatchRequest{Items: []wire.HeartbeatItem{
		{ID: jobs[0].ID, Token: jobs[0].Token, Progress: &p},
		{ID: jobs[1].ID, Token: stale},
		{ID: jobs[2].ID, Token: jobs[2].Token},
		{ID: jobs[3].ID, Token: jobs[3].Token, Data: json.RawMessage(`{"x":1}`)},
	}})
	if len(hb.Results) != 4 {
		t.Fatalf("heartbeat: %d results, want 4", len(hb.Results))
	}
	for i, want := range []string{"", "worker_conflict", "canceled", ""} {
		r := hb.Results[i]
		switch {
		case want == "" && (r.Error != nil || r.LeaseUntil.IsZero()):
			t.Errorf("heartbeat item %d: %+v, want a new lease", i, r)
		case want != "" && (r.Error == nil || r.Error.Code != want || r.Error.Message == "" || !r.LeaseUntil.IsZero()):
			t.Errorf("heartbeat item %d: %+v, want error %s", i, r, want)
		}
	}
	if g := s.get(t, jobs[0].ID); g.Progress != 10 {
		t.Errorf("progress after batch heartbeat: %v", g.Progress)
	}

	// Finish: each ending, plus a stale token, a cancelled and a removed job.
	want[struct{}](t, s, 204, "DELETE", path(jobs[7].ID, ""), nil)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	items := []wire.FinishItem{
		{ID: jobs[0].ID, Token: jobs[0].Token, As: "complete", Result: json.RawMessage(`"done"`)},
		{ID: jobs[1].ID, Token: stale, As: "complete"},
		{ID: jobs[2].ID, Token: jobs[2].Token, As: "complete"},
		{ID: jobs[3].ID, Token: jobs[3].Token, As: "fail", Error: "flaky"},
		{ID: jobs[4].ID, Token: jobs[4].Token, As: "snooze", RunAt: &at},
		{ID: jobs[5].ID, Token: jobs[5].Token, As: "release"},
		{ID: jobs[6].ID, Token: jobs[6].Token, As: "cancel", Error: "not wanted"},
		{ID: jobs[7].ID, Token: jobs[7].Token, As: "complete"},
	}
	fr := want[wire.FinishBatchResponse](t, s, 200, "POST", "/v1/finish", wire.FinishBatchRequest{Items: items})
	if len(fr.Results) != len(items) {
		t.Fatalf("finish: %d results, want %d", len(fr.Results), len(items))
	}
	for i, want := range []string{"", "worker_conflict", "canceled", "", "", "", "", "canceled"} {
		got := ""
		if fr.Results[i].Error != nil {
			got = fr.Results[i].Error.Code
		}
		if got != want {
			t.Errorf("finish item %d (%s): error %+v, want %q", i, items[i].As, fr.Results[i].Error, want)
		}
	}
	for i, want := range []store.State{store.Completed, store.Running, store.Cancelled, store.Pending, store.Pending, store.Pending, store.Cancelled} {
		if g := s.get(t, jobs[i].ID); g.State != want {
			t.Errorf("job %d after batch finish: %v, want %v", i, g.State, want)
		}
	}
	if g := s.get(t, jobs[4].ID); !g.RunAt.Equal(at) {
		t.Errorf("snoozed job runs at %v, want %v", g.RunAt, at)
	}
	if g := s.get(t, jobs[3].ID); g.LastError != "flaky" {
		t.Errorf("failed job's last_error %q", g.LastError)
	}
}

func TestAcceptLongPoll(t *testing.T) {
	s := newServer(t, httpapi.Config{})

	// Nothing comes: an empty list once the wait is over.
	r := want[wire.AcceptResponse](t, s, 200, "POST", "/v1/accept", map[string]any{"types": []string{"lp.none"}, "wait": "300ms"})
	if r.Jobs == nil || len(r.Jobs) != 0 {
		t.Errorf("accept with nothing due: %+v, want an empty list", r.Jobs)
	}

	// A job added during the wait wakes the accept, which returns it. The
	// wait (60s) is longer than the request may take (20s), so a poll that
	// does not wake fails the test instead of passing after the wait.
	type result struct {
		r   reply
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := s.send(ctx, "POST", "/v1/accept", map[string]any{"types": []string{"lp.*"}, "wait": "60s", "limit": 5})
		done <- result{r, err}
	}()
	time.Sleep(200 * time.Millisecond) // let the accept start waiting (if it has not, it finds the job at once)
	j := s.add(t, map[string]any{"type": "lp.one"})
	res := <-done
	if res.err != nil {
		t.Fatalf("the waiting accept did not return when a job was added: %v", res.err)
	}
	s.check(t, "POST", "/v1/accept", res.r)
	var ar wire.AcceptResponse
	if err := json.Unmarshal(res.r.Body, &ar); err != nil || res.r.Status != 200 {
		t.Fatalf("waiting accept: %s", res.r)
	}
	if len(ar.Jobs) != 1 || ar.Jobs[0].ID != j.ID || ar.Jobs[0].Token == "" {
		t.Errorf("waiting accept returned %+v, want job %d with a token", ar.Jobs, j.ID)
	}
}

// TestAcceptLongPollRate checks that a long poll held back by a type's
// rate returns the job when the next token comes, with a poll fallback of
// an hour: the server's wait sleeps until the time the store names.
func TestAcceptLongPollRate(t *testing.T) {
	s := newServerWith(t, httpapi.Config{}, rota.Config{PollInterval: time.Hour})
	want[wire.TypeConfig](t, s, 200, "PUT", "/v1/types/lp.rated", map[string]any{"rate": "4/s", "burst": 1})
	s.add(t, map[string]any{"type": "lp.rated"})
	s.add(t, map[string]any{"type": "lp.rated"})
	if r := want[wire.AcceptResponse](t, s, 200, "POST", "/v1/accept", map[string]any{"types": []string{"lp.rated"}, "limit": 5}); len(r.Jobs) != 1 {
		t.Fatalf("accept at 4/s, burst 1: %d jobs, want 1", len(r.Jobs))
	}
	start := time.Now()
	r := want[wire.AcceptResponse](t, s, 200, "POST", "/v1/accept", map[string]any{"types": []string{"lp.rated"}, "limit": 5, "wait": "2s"})
	if took := time.Since(start); len(r.Jobs) != 1 || took < 200*time.Millisecond || took > time.Second {
		t.Errorf("a long poll behind a rate of 4/s: %d jobs after %v, want the other job about 250ms later", len(r.Jobs), took)
	}
}

// ---- operations ----

func TestHealthMetricsOpenAPI(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	if h := want[map[string]string](t, s, 200, "GET", "/healthz", nil); h["status"] != "ok" {
		t.Errorf("healthz: %v", h)
	}
	s.add(t, map[string]any{"type": "metric.a"})
	s.add(t, map[string]any{"type": "metric.a"})
	s.add(t, map[string]any{"type": "metric.b"})
	j := s.acceptOne(t, "metric.b")
	want[struct{}](t, s, 204, "POST", path(j.ID, "finish"), map[string]any{"token": j.Token})

	r := s.do(t, "GET", "/metrics", nil)
	if r.Status != 200 {
		t.Fatalf("metrics: %s", r)
	}
	body := string(r.Body)
	for _, line := range []string{
		`rota_jobs_added_total{type="metric.a"} 2`,
		`rota_jobs_added_total{type="metric.b"} 1`,
		`rota_jobs_accepted_total{type="metric.b"} 1`,
		`rota_jobs{state="pending"} 2`,
		`rota_jobs{state="completed"} 1`,
		`rota_jobs{state="running"} 0`,
		`rota_finish_duration_seconds_count`,
		`rota_accept_duration_seconds_count`,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("metrics lack %q", line)
		}
	}

	r = s.do(t, "GET", "/v1/openapi.json", nil)
	if r.Status != 200 || !bytes.Equal(r.Body, httpapi.OpenAPI()) {
		t.Errorf("GET /v1/openapi.json: %d, %d bytes; want the document", r.Status, len(r.Body))
	}
}

// ---- bad input ----

// TestBadInput sends each kind of bad request and checks its status, code
// and message, that it is never a 500, and that the store is unchanged.
func TestBadInput(t *testing.T) {
	s := newServer(t, httpapi.Config{MaxBodyBytes: 2048, MaxWait: 2 * time.Second})

	// Jobs in each state the cases need; {id} and {token} in a case's
	// target and body are replaced by its job's.
	n := 0
	prep := map[string]func(t *testing.T) (int64, string){
		"pending": func(t *testing.T) (int64, string) {
			j := s.add(t, map[string]any{"type": "prep.pending"})
			return j.ID, ""
		},
		"running": func(t *testing.T) (int64, string) {
			n++
			typ := fmt.Sprintf("prep.running.%d", n)
			s.add(t, map[string]any{"type": typ})
			j := s.acceptOne(t, typ)
			return j.ID, j.Token
		},
		"cancelled while running": func(t *testing.T) (int64, string) {
			n++
			typ := fmt.Sprintf("prep.cancelled.%d", n)
			s.add(t, map[string]any{"type": typ})
			j := s.acceptOne(t, typ)
			want[wire.JobResponse](t, s, 200, "POST", path(j.ID, "cancel"), nil)
			return j.ID, j.Token
		},
		"completed": func(t *testing.T) (int64, string) {
			n++
			typ := fmt.Sprintf("prep.completed.%d", n)
			s.add(t, map[string]any{"type": typ})
			j := s.acceptOne(t, typ)
			want[struct{}](t, s, 204, "POST", path(j.ID, "finish"), map[string]any{"token": j.Token})
			return j.ID, j.Token
		},
	}
	big := `{"type":"big","data":{"x":"` + strings.Repeat("x", 3000) + `"}}`
	const stale = "00000000000000000000000000000000"

	cases := []struct {
		name           string
		job            string // a prep key, or ""
		method, target string
		body           string
		status         int
		code           string
		msg            string
		changes        bool // a success that changes the store
	}{
		// JSON syntax.
		{name: "malformed JSON", method: "POST", target: "/v1/jobs", body: `{"type": "a",`, status: 400, code: "invalid_input", msg: "malformed JSON"},
		{name: "malformed JSON, missing colon", method: "POST", target: "/v1/accept", body: `{"types" ["a"]}`, status: 400, code: "invalid_input", msg: "malformed JSON"},
		{name: "not JSON at all", method: "POST", target: "/v1/jobs", body: `type=a`, status: 400, code: "invalid_input", msg: "JSON"},
		{name: "trailing garbage", method: "POST", target: "/v1/jobs", body: `{"type":"a"} x`, status: 400, code: "invalid_input", msg: "more than one JSON value"},
		{name: "two JSON values", method: "POST", target: "/v1/accept", body: `{"types":["a"]} {"types":["b"]}`, status: 400, code: "invalid_input", msg: "more than one JSON value"},
		{name: "trailing close brace", method: "POST", target: "/v1/jobs", body: `{"type":"a"}}`, status: 400, code: "invalid_input", msg: "JSON"},
		{name: "trailing close bracket", method: "POST", target: "/v1/accept", body: `{"types":["a"]}]`, status: 400, code: "invalid_input", msg: "JSON"},
		{name: "empty body", method: "POST", target: "/v1/jobs", body: ``, status: 400, code: "invalid_input", msg: "empty"},
		{name: "blank body", method: "POST", target: "/v1/accept", body: " \n", status: 400, code: "invalid_input", msg: "empty"},
		{name: "empty body to finish", job: "running", method: "POST", target: "/v1/jobs/{id}/finish", body: ``, status: 400, code: "invalid_input", msg: "empty"},
		{name: "body is an array", method: "POST", target: "/v1/jobs", body: `[{"type":"a"}]`, status: 400, code: "invalid_input", msg: "JSON object"},

		// Unknown fields and wrong types.
		{name: "unknown field", method: "POST", target: "/v1/jobs", body: `{"type":"a","colour":"red"}`, status: 400, code: "invalid_input", msg: `"colour"`},
		{name: "unknown field in accept", method: "POST", target: "/v1/accept", body: `{"types":["a"],"limt":3}`, status: 400, code: "invalid_input", msg: `"limt"`},
		{name: "unknown field in a batch job", method: "POST", target: "/v1/jobs", body: `{"jobs":[{"type":"a","prio":1}]}`, status: 400, code: "invalid_input", msg: `"prio"`},
		{name: "unknown field next to jobs", method: "POST", target: "/v1/jobs", body: `{"jobs":[{"type":"a"}],"type":"b"}`, status: 400, code: "invalid_input", msg: `"type"`},
		{name: "unknown field in finish", job: "running", method: "POST", target: "/v1/jobs/{id}/finish", body: `{"token":"{token}","reslt":1}`, status: 400, code: "invalid_input", msg: `"reslt"`},
		{name: "priority as string", method: "POST", target: "/v1/jobs", body: `{"type":"a","priority":"high"}`, status: 400, code: "invalid_input", msg: `"priority"`},
		{name: "priority as fraction", method: "POST", target: "/v1/jobs", body: `{"type":"a","priority":1.5}`, status: 400, code: "invalid_input", msg: `"priority"`},
		{name: "data as array", method: "POST", target: "/v1/jobs", body: `{"type":"a","data":[1,2]}`, status: 400, code: "invalid_input", msg: "data must be a JSON object"},
		{name: "data as string", method: "POST", target: "/v1/jobs", body: `{"type":"a","data":"x"}`, status: 400, code: "invalid_input", msg: "data must be a JSON object"},
		{name: "data as null", method: "POST", target: "/v1/jobs", body: `{"type":"a","data":null}`, status: 400, code: "invalid_input", msg: "data must be a JSON object"},
		{name: "finish of an unknown id names it", method: "POST", target: "/v1/jobs/987654/finish", body: `{"token":"` + stale + `"}`, status: 409, code: "canceled", msg: "job 987654 was removed"},
		{name: "heartbeat of an unknown id names it", method: "POST", target: "/v1/jobs/987654/heartbeat", body: `{"token":"` + stale + `"}`, status: 409, code: "canceled", msg: "job 987654 was removed"},
		{name: "release of an unknown id names it", method: "POST", target: "/v1/jobs/987654/release", body: `{"token":"` + stale + `"}`, status: 409, code: "canceled", msg: "job 987654 was removed"},
		{name: "a lease shorter than 1ms", method: "POST", target: "/v1/accept", body: `{"types":["a"],"lease_timeout":"1ns"}`, status: 400, code: "invalid_input", msg: "shorter than 1ms"},
		{name: "data nested too deep", method: "POST", target: "/v1/jobs", body: `{"type":"a","data":` + strings.Repeat(`{"a":`, 65) + `1` + strings.Repeat(`}`, 65) + `}`, status: 400, code: "invalid_input", msg: "nests 65 levels deep, more than 64"},
		{name: "malformed repeat", method: "POST", target: "/v1/jobs", body: `{"type":"a","schedule":"FINISHED, +1 WEEK"}`, status: 400, code: "invalid_input", msg: `modifier "+1 WEEK"`},
		{name: "repeat without modifier", method: "POST", target: "/v1/jobs", body: `{"type":"a","schedule":"SCHEDULED"}`, status: 400, code: "invalid_input", msg: "at least one modifier"},
		{name: "malformed cron", method: "POST", target: "/v1/jobs", body: `{"type":"a","schedule":"61 * * * *"}`, status: 400, code: "invalid_input", msg: "cron"},
		{name: "unknown missed policy", method: "POST", target: "/v1/jobs", body: `{"type":"a","schedule":"@daily","missed":"twice"}`, status: 400, code: "invalid_input", msg: `"twice"`},
		{name: "data not UTF-8", method: "POST", target: "/v1/jobs", body: "{\"type\":\"a\",\"data\":{\"x\":\"\xff\"}}", status: 400, code: "invalid_input", msg: "data is not valid UTF-8"},
		{name: "result not UTF-8", job: "running", method: "POST", target: "/v1/jobs/{id}/finish", body: "{\"token\":\"{token}\",\"result\":\"\xfe\"}", status: 400, code: "invalid_input", msg: "result is not valid UTF-8"},
		{name: "heartbeat data not UTF-8", job: "running", method: "POST", target: "/v1/jobs/{id}/heartbeat", body: "{\"token\":\"{token}\",\"data\":{\"\xc3\":1}}", status: 400, code: "invalid_input", msg: "data is not valid UTF-8"},
		{name: "types as string", method: "POST", target: "/v1/accept", body: `{"types":"a"}`, status: 400, code: "invalid_input", msg: `"types"`},
		{name: "type as number", method: "POST", target: "/v1/jobs", body: `{"type":7}`, status: 400, code: "invalid_input", msg: `"type"`},
		{name: "permanent as string", job: "running", method: "POST", target: "/v1/jobs/{id}/fail", body: `{"token":"{token}","permanent":"yes"}`, status: 400, code: "invalid_input", msg: `"permanent"`},
		{name: "heartbeat data not an object", job: "running", method: "POST", target: "/v1/jobs/{id}/heartbeat", body: `{"token":"{token}","data":[1]}`, status: 400, code: "invalid_input", msg: "data must be a JSON object"},
		{name: "resubmit data not an object", job: "pending", method: "POST", target: "/v1/jobs/{id}/resubmit", body: `{"data":"x"}`, status: 400, code: "invalid_input", msg: "data must be a JSON object"},
		{name: "finish result not JSON-shaped", job: "running", method: "POST", target: "/v1/jobs/{id}/finish", body: `{"token":"{token}","result":}`, status: 400, code: "invalid_input", msg: "malformed JSON"},

		// Size.
		{name: "oversized body", method: "POST", target: "/v1/jobs", body: big, status: 413, code: "too_large", msg: "larger than 2048 bytes"},
		{name: "oversized finish", job: "running", method: "POST", target: "/v1/jobs/{id}/finish", body: `{"token":"{token}","result":"` + strings.Repeat("r", 3000) + `"}`, status: 413, code: "too_large", msg: "larger than"},

		// Names and patterns.
		{name: "missing type", method: "POST", target: "/v1/jobs", body: `{}`, status: 400, code: "invalid_input", msg: "type is required"},
		{name: "empty type", method: "POST", target: "/v1/jobs", body: `{"type":""}`, status: 400, code: "invalid_input", msg: "type is required"},
		{name: "type with a control character", method: "POST", target: "/v1/jobs", body: `{"type":"email\u0001"}`, status: 400, code: "invalid_input", msg: "control character"},
		{name: "type with control character", method: "POST", target: "/v1/jobs", body: `{"type":"a\u0001b"}`, status: 400, code: "invalid_input", msg: "control character"},
		{name: "type too long", method: "POST", target: "/v1/jobs", body: `{"type":"` + strings.Repeat("t", 256) + `"}`, status: 400, code: "invalid_input", msg: "more than 255"},
		{name: "empty jobs list", method: "POST", target: "/v1/jobs", body: `{"jobs":[]}`, status: 400, code: "invalid_input", msg: `"jobs" is empty`},
		{name: "batch with one bad job", method: "POST", target: "/v1/jobs", body: `{"jobs":[{"type":"good"},{"type":"also.good","key":"k"},{"type":"bad\t"}]}`, status: 400, code: "invalid_input", msg: "control character"},
		{name: "batch with bad data", method: "POST", target: "/v1/jobs", body: `{"jobs":[{"type":"good"},{"type":"good","data":[]}]}`, status: 400, code: "invalid_input", msg: "data must be a JSON object"},
		{name: "bad GLOB in accept", method: "POST", target: "/v1/accept", body: `{"types":["{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"]}`, status: 400, code: "invalid_input", msg: "alternatives"},
		{name: "bad GLOB in a waiting accept", method: "POST", target: "/v1/accept", body: `{"types":["a","a\u0001"],"wait":"1s"}`, status: 400, code: "invalid_input", msg: "control character"},
		{name: "accept without types", method: "POST", target: "/v1/accept", body: `{"limit":1}`, status: 400, code: "invalid_input", msg: "at least one type"},
		{name: "accept limit too high", method: "POST", target: "/v1/accept", body: `{"types":["a"],"limit":10001}`, status: 400, code: "invalid_input", msg: "out of range 1..10000"},
		{name: "accept limit negative", method: "POST", target: "/v1/accept", body: `{"types":["a"],"limit":-1}`, status: 400, code: "invalid_input", msg: "out of range"},
		{name: "wait above the max", method: "POST", target: "/v1/accept", body: `{"types":["a"],"wait":"3s"}`, status: 400, code: "invalid_input", msg: "out of range 0..2s"},
		{name: "negative wait", method: "POST", target: "/v1/accept", body: `{"types":["a"],"wait":"-1s"}`, status: 400, code: "invalid_input", msg: "out of range"},
		{name: "negative lease timeout", method: "POST", target: "/v1/accept", body: `{"types":["a"],"lease_timeout":"-5s"}`, status: 400, code: "invalid_input", msg: "must not be negative"},
		{name: "bad type in PUT", method: "PUT", target: "/v1/types/a%01", body: `{"lease_timeout":"1s"}`, status: 400, code: "invalid_input", msg: "control character"},
		{name: "PUT body names another type", method: "PUT", target: "/v1/types/a", body: `{"type":"b"}`, status: 400, code: "invalid_input", msg: `path names "a"`},
		{name: "negative lease timeout in PUT", method: "PUT", target: "/v1/types/a", body: `{"lease_timeout":"-1s"}`, status: 400, code: "invalid_input", msg: "must not be negative"},
		{name: "negative max_running in PUT", method: "PUT", target: "/v1/types/a", body: `{"max_running":-1}`, status: 400, code: "invalid_input", msg: "max running -1 must not be negative"},
		{name: "a rate per day in PUT", method: "PUT", target: "/v1/types/a", body: `{"rate":"5/d"}`, status: 400, code: "invalid_input", msg: `rate: want N/s, N/m or N/h, got "5/d"`},
		{name: "a burst without a rate in PUT", method: "PUT", target: "/v1/types/a", body: `{"burst":5}`, status: 400, code: "invalid_input", msg: "burst 5 needs a rate"},
		{name: "a zero rate on a group", method: "PUT", target: "/v1/groups", body: `{"group":"g","rate":"0/s"}`, status: 400, code: "invalid_input", msg: `rate: "0/s" starts 0 jobs per period`},
		{name: "failed retention under a second", method: "PUT", target: "/v1/types/a", body: `{"failed_retention":"10ms"}`, status: 400, code: "invalid_input", msg: "failed retention 10ms must be within"},

		// Times and durations.
		{name: "run_at year 10000", method: "POST", target: "/v1/jobs", body: `{"type":"a","run_at":"10000-01-01T00:00:00Z"}`, status: 400, code: "invalid_input", msg: "RFC 3339"},
		{name: "run_at not RFC 3339", method: "POST", target: "/v1/jobs", body: `{"type":"a","run_at":"tomorrow"}`, status: 400, code: "invalid_input", msg: "RFC 3339"},
		{name: "run_at without zone", method: "POST", target: "/v1/jobs", body: `{"type":"a","run_at":"2026-01-02T15:04:05"}`, status: 400, code: "invalid_input", msg: "RFC 3339"},
		{name: "run_at before 1970", method: "POST", target: "/v1/jobs", body: `{"type":"a","run_at":"1969-12-31T23:59:59Z"}`, status: 400, code: "invalid_input", msg: "out of range"},
		{name: "run_at after 9999", method: "POST", target: "/v1/jobs", body: `{"type":"a","run_at":"9999-12-31T23:59:59.5Z"}`, status: 400, code: "invalid_input", msg: "out of range"},
		{name: "resubmit run_at not RFC 3339", job: "pending", method: "POST", target: "/v1/jobs/{id}/resubmit", body: `{"run_at":"soon"}`, status: 400, code: "invalid_input", msg: "RFC 3339"},
		{name: "snooze to year 10000", job: "running", method: "POST", target: "/v1/jobs/{id}/snooze", body: `{"token":"{token}","run_at":"10000-01-01T00:00:00Z"}`, status: 400, code: "invalid_input", msg: "RFC 3339"},
		{name: "snooze to 1960", job: "running", method: "POST", target: "/v1/jobs/{id}/snooze", body: `{"token":"{token}","run_at":"1960-01-01T00:00:00Z"}`, status: 400, code: "invalid_input", msg: "out of range"},
		{name: "bad duration", method: "POST", target: "/v1/jobs", body: `{"type":"a","backoff_base":"5 minutes"}`, status: 400, code: "invalid_input", msg: `bad duration "5 minutes"`},
		{name: "duration as number", method: "POST", target: "/v1/accept", body: `{"types":["a"],"wait":5}`, status: 400, code: "invalid_input", msg: "duration string"},
		{name: "backoff_max below backoff_base", method: "POST", target: "/v1/jobs", body: `{"type":"a","backoff_base":"1m","backoff_max":"1s"}`, status: 400, code: "invalid_input", msg: "backoff_max"},
		{name: "negative max_attempts", method: "POST", target: "/v1/jobs", body: `{"type":"a","max_attempts":-1}`, status: 400, code: "invalid_input", msg: "max_attempts"},
		{name: "snooze with run_at and delay", job: "running", method: "POST", target: "/v1/jobs/{id}/snooze", body: `{"token":"{token}","run_at":"2030-01-01T00:00:00Z","delay":"1m"}`, status: 400, code: "invalid_input", msg: "not both"},
		{name: "snooze with negative delay", job: "running", method: "POST", target: "/v1/jobs/{id}/snooze", body: `{"token":"{token}","delay":"-1m"}`, status: 400, code: "invalid_input", msg: "must not be negative"},
		{name: "heartbeat progress above 100", job: "running", method: "POST", target: "/v1/jobs/{id}/heartbeat", body: `{"token":"{token}","progress":150}`, status: 400, code: "invalid_input", msg: "outside 0..100"},
		{name: "heartbeat without token", job: "running", method: "POST", target: "/v1/jobs/{id}/heartbeat", body: `{}`, status: 400, code: "invalid_input", msg: "token"},
		{name: "finish without token", job: "running", method: "POST", target: "/v1/jobs/{id}/finish", body: `{}`, status: 400, code: "invalid_input", msg: "token is required"},

		// Query parameters.
		{name: "unknown list parameter", method: "GET", target: "/v1/jobs?colour=red", status: 400, code: "invalid_input", msg: `unknown query parameter "colour"`},
		{name: "bad state", method: "GET", target: "/v1/jobs?state=done", status: 400, code: "invalid_input", msg: `unknown state "done"`},
		{name: "bad state among good ones", method: "GET", target: "/v1/jobs?state=pending,Running", status: 400, code: "invalid_input", msg: `unknown state "Running"`},
		{name: "bad cursor", method: "GET", target: "/v1/jobs?cursor=abc", status: 400, code: "invalid_input", msg: `cursor "abc"`},
		{name: "negative cursor", method: "GET", target: "/v1/jobs?cursor=-5", status: 400, code: "invalid_input", msg: `cursor "-5"`},
		{name: "limit zero", method: "GET", target: "/v1/jobs?limit=0", status: 400, code: "invalid_input", msg: `limit "0"`},
		{name: "limit not a number", method: "GET", target: "/v1/jobs?limit=ten", status: 400, code: "invalid_input", msg: `limit "ten"`},
		{name: "limit too high", method: "GET", target: "/v1/jobs?limit=1001", status: 400, code: "invalid_input", msg: "out of range"},
		{name: "bad order", method: "GET", target: "/v1/jobs?order=up", status: 400, code: "invalid_input", msg: `order "up"`},
		{name: "key without a type", method: "GET", target: "/v1/jobs?key=k", status: 400, code: "invalid_input", msg: "key needs exactly one type"},
		{name: "key with two types", method: "GET", target: "/v1/jobs?key=k&type=a,b", status: 400, code: "invalid_input", msg: "key needs exactly one type"},
		{name: "key with two groups", method: "GET", target: "/v1/jobs?key=k&type=a&group=g&group=h", status: 400, code: "invalid_input", msg: "at most one group"},
		{name: "bad id in list", method: "GET", target: "/v1/jobs?id=1,x", status: 400, code: "invalid_input", msg: `id "x"`},
		{name: "unknown events parameter", method: "GET", target: "/v1/events?colour=red", status: 400, code: "invalid_input", msg: `unknown query parameter "colour"`},
		{name: "events job not a number", method: "GET", target: "/v1/events?job=abc", status: 400, code: "invalid_input", msg: `job "abc"`},
		{name: "events job and type", method: "GET", target: "/v1/events?job=1&type=a", status: 400, code: "invalid_input", msg: "not both"},
		{name: "events bad pattern", method: "GET", target: "/v1/events?type=%01", status: 400, code: "invalid_input", msg: "control character"},
		{name: "events empty pattern", method: "GET", target: "/v1/events?type=", status: 400, code: "invalid_input", msg: "type pattern is required"},
		{name: "events for a missing job", method: "GET", target: "/v1/events?job=999999", status: 404, code: "not_found", msg: "not found"},

		// Paths.
		{name: "non-numeric job id", method: "GET", target: "/v1/jobs/abc", status: 400, code: "invalid_input", msg: `job id "abc"`},
		{name: "zero job id", method: "DELETE", target: "/v1/jobs/0", status: 400, code: "invalid_input", msg: `job id "0"`},
		{name: "non-numeric id in finish", method: "POST", target: "/v1/jobs/x1/finish", body: `{"token":"t"}`, status: 400, code: "invalid_input", msg: `job id "x1"`},
		{name: "non-numeric id in cancel", method: "POST", target: "/v1/jobs/1e3/cancel", status: 400, code: "invalid_input", msg: `job id "1e3"`},
		{name: "get a missing job", method: "GET", target: "/v1/jobs/999999", status: 404, code: "not_found", msg: "not found"},
		{name: "cancel a missing job", method: "POST", target: "/v1/jobs/999999/cancel", status: 404, code: "not_found", msg: "not found"},
		{name: "resubmit a missing job", method: "POST", target: "/v1/jobs/999999/resubmit", status: 404, code: "not_found", msg: "not found"},
		{name: "unknown endpoint", method: "GET", target: "/v1/nope", status: 404, code: "not_found", msg: "no such endpoint: GET /v1/nope"},
		{name: "unknown endpoint outside /v1", method: "POST", target: "/jobs", body: `{"type":"a"}`, status: 404, code: "not_found", msg: "no such endpoint"},
		{name: "unknown action", method: "POST", target: "/v1/jobs/1/explode", body: `{}`, status: 404, code: "not_found", msg: "no such endpoint"},
		{name: "wrong method", method: "DELETE", target: "/v1/stats", status: 405, code: "method_not_allowed", msg: "DELETE is not allowed on /v1/stats"},
		{name: "wrong method on a job", method: "PUT", target: "/v1/jobs/1", body: `{}`, status: 405, code: "method_not_allowed", msg: "not allowed"},
		{name: "GET of a POST route", method: "GET", target: "/v1/accept", status: 405, code: "method_not_allowed", msg: "not allowed"},

		// Batch worker calls.
		{name: "unknown finish as", job: "running", method: "POST", target: "/v1/finish", body: `{"items":[{"id":{id},"token":"{token}","as":"explode"}]}`, status: 400, code: "invalid_input", msg: `"as" is "explode"`},
		{name: "finish batch with a missing as", job: "running", method: "POST", target: "/v1/finish", body: `{"items":[{"id":{id},"token":"{token}","as":"complete"},{"id":{id},"token":"{token}"}]}`, status: 400, code: "invalid_input", msg: `"as" is ""`},
		{name: "finish batch item without id", method: "POST", target: "/v1/finish", body: `{"items":[{"token":"t","as":"complete"}]}`, status: 400, code: "invalid_input", msg: "not valid"},
		{name: "heartbeat batch item without token", job: "running", method: "POST", target: "/v1/heartbeat", body: `{"items":[{"id":{id},"token":"{token}"},{"id":{id}}]}`, status: 400, code: "invalid_input", msg: "token"},
		{name: "heartbeat batch progress out of range", job: "running", method: "POST", target: "/v1/heartbeat", body: `{"items":[{"id":{id},"token":"{token}","progress":-1}]}`, status: 400, code: "invalid_input", msg: "outside 0..100"},
		{name: "items as object", method: "POST", target: "/v1/finish", body: `{"items":{}}`, status: 400, code: "invalid_input", msg: `"items"`},

		// Conflicts.
		{name: "finish with a stale token", job: "running", method: "POST", target: "/v1/jobs/{id}/finish", body: `{"token":"` + stale + `"}`, status: 409, code: "worker_conflict", msg: "worker conflict"},
		{name: "fail with a stale token", job: "running", method: "POST", target: "/v1/jobs/{id}/fail", body: `{"token":"` + stale + `","error":"x"}`, status: 409, code: "worker_conflict", msg: "worker conflict"},
		{name: "heartbeat with a stale token", job: "running", method: "POST", target: "/v1/jobs/{id}/heartbeat", body: `{"token":"` + stale + `"}`, status: 409, code: "worker_conflict", msg: "worker conflict"},
		{name: "finish of a pending job", job: "pending", method: "POST", target: "/v1/jobs/{id}/finish", body: `{"token":"` + stale + `"}`, status: 409, code: "worker_conflict", msg: "worker conflict"},
		{name: "release of a completed job", job: "completed", method: "POST", target: "/v1/jobs/{id}/release", body: `{"token":"{token}"}`, status: 409, code: "worker_conflict", msg: "worker conflict"},
		{name: "heartbeat of a cancelled job", job: "cancelled while running", method: "POST", target: "/v1/jobs/{id}/heartbeat", body: `{"token":"{token}"}`, status: 409, code: "canceled", msg: "canceled"},
		{name: "finish of a cancelled job", job: "cancelled while running", method: "POST", target: "/v1/jobs/{id}/finish", body: `{"token":"{token}"}`, status: 409, code: "canceled", msg: "canceled"},
		{name: "heartbeat of a removed job", method: "POST", target: "/v1/jobs/999999/heartbeat", body: `{"token":"t"}`, status: 409, code: "canceled", msg: "canceled"},
		{name: "cancel of a completed job", job: "completed", method: "POST", target: "/v1/jobs/{id}/cancel", status: 409, code: "finished", msg: "has already ended (completed)"},

		// Successes that belong with the rules above.
		{name: "body-less resubmit", job: "completed", method: "POST", target: "/v1/jobs/{id}/resubmit", status: 200, changes: true},
		{name: "resubmit with an empty body", job: "pending", method: "POST", target: "/v1/jobs/{id}/resubmit", body: " ", status: 200, changes: true},
		{name: "cancel ignores a body", job: "pending", method: "POST", target: "/v1/jobs/{id}/cancel", body: `not even JSON`, status: 200, changes: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target, body := c.target, c.body
			if c.job != "" {
				id, token := prep[c.job](t)
				r := strings.NewReplacer("{id}", strconv.FormatInt(id, 10), "{token}", token)
				target, body = r.Replace(target), r.Replace(body)
			}
			before := s.snapshot(t)
			var b any
			if body != "" || c.method == "POST" || c.method == "PUT" {
				b = body
			}
			resp := s.do(t, c.method, target, b)
			if c.changes {
				if resp.Status != c.status {
					t.Errorf("got %s, want %d", resp, c.status)
				}
				return
			}
			wantError(t, resp, c.status, c.code, c.msg)
			if after := s.snapshot(t); after != before {
				t.Errorf("the store changed:\nbefore: %s\nafter:  %s", before, after)
			}
		})
	}
}

// TestBadInputChangesNothingInBatch checks that a rejected batch add leaves
// no job behind even though its good jobs came first.
func TestBadInputChangesNothingInBatch(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	r := s.do(t, "POST", "/v1/jobs", `{"jobs":[{"type":"ok.1"},{"type":"ok.2","key":"k"},{"type":""}]}`)
	wantError(t, r, 400, "invalid_input", "type is required")
	if st := s.stats(t); len(st.Counts) != 0 {
		t.Errorf("a rejected batch added jobs: %+v", st.Counts)
	}
	if l := want[wire.ListResponse](t, s, 200, "GET", "/v1/jobs?type=ok.2&key=k", nil); len(l.Jobs) != 0 {
		t.Errorf("a rejected batch left job %+v", l.Jobs)
	}
}

// ---- auth ----

func TestAuth(t *testing.T) {
	s := newServer(t, httpapi.Config{AuthToken: "sesame"})
	before := s.snapshot(t)

	r := s.do(t, "GET", "/v1/stats", nil, "Authorization", "")
	wantError(t, r, 401, "unauthorized", "Authorization: Bearer")
	if h := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
		t.Errorf("401 without WWW-Authenticate: Bearer (got %q)", h)
	}
	wantError(t, s.do(t, "GET", "/v1/stats", nil, "Authorization", "Bearer open-up"), 403, "forbidden", "not valid")
	wantError(t, s.do(t, "GET", "/v1/stats", nil, "Authorization", "Basic c2VzYW1lOg=="), 403, "forbidden", "not valid")
	wantError(t, s.do(t, "GET", "/v1/stats", nil, "Authorization", "Bearer "), 403, "forbidden", "not valid")
	wantError(t, s.do(t, "POST", "/v1/jobs", `{"type":"a"}`, "Authorization", ""), 401, "unauthorized", "Bearer")
	wantError(t, s.do(t, "POST", "/v1/jobs", `{"type":"a"}`, "Authorization", "Bearer sesame2"), 403, "forbidden", "")
	wantError(t, s.do(t, "GET", "/metrics", nil, "Authorization", ""), 401, "unauthorized", "")
	wantError(t, s.do(t, "GET", "/v1/openapi.json", nil, "Authorization", ""), 401, "unauthorized", "")
	wantError(t, s.do(t, "GET", "/v1/events", nil, "Authorization", ""), 401, "unauthorized", "")
	wantError(t, s.do(t, "GET", "/v1/nope", nil, "Authorization", ""), 401, "unauthorized", "")
	if after := s.snapshot(t); after != before {
		t.Errorf("rejected requests changed the store:\n%s\n%s", before, after)
	}

	// The right token works; /healthz needs none.
	want[wire.StatsResponse](t, s, 200, "GET", "/v1/stats", nil)
	want[addResp](t, s, 201, "POST", "/v1/jobs", map[string]any{"type": "a"})
	if r := s.do(t, "GET", "/healthz", nil, "Authorization", ""); r.Status != 200 {
		t.Errorf("healthz without a token: %s", r)
	}
	if r := s.do(t, "GET", "/healthz", nil, "Authorization", "Bearer wrong"); r.Status != 200 {
		t.Errorf("healthz with a wrong token: %s", r)
	}

	// The remote client sends its token, and reports a missing one.
	ok := remoteClient(t, s, remote.Config{Token: "sesame"})
	if _, err := ok.Stats(t.Context()); err != nil {
		t.Errorf("remote client with the token: %v", err)
	}
	bad := remoteClient(t, s, remote.Config{})
	if _, err := bad.Stats(t.Context()); err == nil || !strings.Contains(err.Error(), "Bearer") {
		t.Errorf("remote client without the token: err %v, want the server's message", err)
	}
}

// ---- events ----

type sseEvent struct {
	name string
	data []byte
	id   string
}

// openEvents opens GET /v1/events?query and delivers its events until the
// stream ends (the channel is then closed) or the test ends.
func openEvents(t *testing.T, s *testServer, query string) <-chan sseEvent {
	t.Helper()
	ch, _ := openEventsFrom(t, s, query, "")
	return ch
}

// openEventsFrom opens the stream with Last-Event-ID lastID (none when
// empty); cancel closes it.
func openEventsFrom(t *testing.T, s *testServer, query, lastID string) (_ <-chan sseEvent, cancel func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/events?"+query, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET /v1/events?%s: %d %s", query, resp.StatusCode, b)
	}
	s.check(t, "GET", "/v1/events", reply{Status: resp.StatusCode, Header: resp.Header})
	ch := make(chan sseEvent, 256)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		wire.ParseEventStreamIDs(func() (string, bool) {
			if !sc.Scan() {
				return "", false
			}
			return sc.Text(), true
		}, func(name, id string, data []byte) bool {
			select {
			case ch <- sseEvent{name, slices.Clone(data), id}:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return ch, cancel
}

// nextEvent returns the stream's next event; ok is false when it ended.
func nextEvent(t *testing.T, ch <-chan sseEvent) (wire.Event, string, bool) {
	t.Helper()
	for {
		e, ok := nextMessage(t, ch)
		if ok && e.name == "" && e.data == nil {
			continue // an id alone (see TestEventsMarkLeftOut)
		}
		if !ok {
			return wire.Event{}, "", false
		}
		var ev wire.Event
		if e.name == "job" {
			if err := json.Unmarshal(e.data, &ev); err != nil {
				t.Fatalf("event data %s: %v", e.data, err)
			}
			if err := validateAs(t, "Event", e.data); err != nil {
				t.Errorf("event data does not match the Event schema: %v: %s", err, e.data)
			}
		}
		return ev, e.name, true
	}
}

// nextMessage returns the next message of the stream, ids alone included.
func nextMessage(t *testing.T, ch <-chan sseEvent) (sseEvent, bool) {
	t.Helper()
	select {
	case e, ok := <-ch:
		return e, ok
	case <-time.After(15 * time.Second):
		t.Fatal("no event within 15s")
		return sseEvent{}, false
	}
}

// validateAs checks data against a component schema of the document.
func validateAs(t *testing.T, schema string, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return httpapi.LoadSpec(t).Validate(map[string]any{"$ref": "#/components/schemas/" + schema}, v)
}

func TestEventsJob(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	j := s.add(t, map[string]any{"type": "sse.job", "group": "g"})
	ch := openEvents(t, s, "job="+strconv.FormatInt(j.ID, 10))

	// The current state comes first; then the worker's calls.
	ev, name, _ := nextEvent(t, ch)
	if name != "job" || ev.ID != j.ID || ev.State != store.Pending || ev.Type != "sse.job" || ev.Group != "g" || ev.At.IsZero() {
		t.Fatalf("first event %s %+v, want job %d pending", name, ev, j.ID)
	}
	a := s.acceptOne(t, "sse.job")
	want[wire.HeartbeatResponse](t, s, 200, "POST", path(a.ID, "heartbeat"), map[string]any{"token": a.Token}) // no change: coalesced
	want[wire.HeartbeatResponse](t, s, 200, "POST", path(a.ID, "heartbeat"), map[string]any{"token": a.Token, "progress": 50})
	want[struct{}](t, s, 204, "POST", path(a.ID, "finish"), map[string]any{"token": a.Token})

	type step struct {
		state    store.State
		progress float64
	}
	var got []step
	for {
		ev, name, ok := nextEvent(t, ch)
		if !ok {
			t.Fatal("the stream ended without an end event")
		}
		if name == "end" {
			break
		}
		if name != "job" || ev.ID != j.ID {
			t.Fatalf("unexpected event %s %+v", name, ev)
		}
		got = append(got, step{ev.State, ev.Progress})
	}
	wantSteps := []step{{store.Running, 0}, {store.Running, 50}, {store.Completed, 50}}
	if len(got) != len(wantSteps) || got[0] != wantSteps[0] || got[1] != wantSteps[1] || got[2].state != store.Completed {
		t.Errorf("transitions %v, want %v", got, wantSteps)
	}
	if _, name, ok := nextEvent(t, ch); ok {
		t.Errorf("event %q after end; the stream should close", name)
	}

	// A terminal job's stream is its state and end; a removed job's ends too.
	ch = openEvents(t, s, "job="+strconv.FormatInt(j.ID, 10))
	if ev, name, _ := nextEvent(t, ch); name != "job" || ev.State != store.Completed {
		t.Errorf("stream of a completed job starts with %s %+v", name, ev)
	}
	if _, name, _ := nextEvent(t, ch); name != "end" {
		t.Errorf("stream of a completed job: %q, want end", name)
	}
	k := s.add(t, map[string]any{"type": "sse.job"})
	ch = openEvents(t, s, "job="+strconv.FormatInt(k.ID, 10))
	nextEvent(t, ch)
	want[struct{}](t, s, 204, "DELETE", path(k.ID, ""), nil)
	if ev, name, _ := nextEvent(t, ch); name != "job" || !ev.Removed {
		t.Errorf("after remove: %s %+v, want a removed event", name, ev)
	}
	if _, name, _ := nextEvent(t, ch); name != "end" {
		t.Errorf("after remove: %q, want end", name)
	}
}

func TestEventsTypes(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	ch := openEvents(t, s, "type=sse.a.*")
	both := openEvents(t, s, "type=sse.b.two&type=sse.c.*")
	all := openEvents(t, s, "")

	for _, typ := range []string{"sse.a.one", "sse.b.two", "sse.c.x", "sse.a.three", "other"} {
		s.add(t, map[string]any{"type": typ})
	}
	s.acceptOne(t, "sse.a.one")

	expect := func(ch <-chan sseEvent, what string, want ...string) {
		t.Helper()
		for _, w := range want {
			ev, name, ok := nextEvent(t, ch)
			if !ok || name != "job" || fmt.Sprintf("%s %s", ev.Type, ev.State) != w {
				t.Errorf("%s: got %s %+v, want %s", what, name, ev, w)
			}
		}
	}
	// Changes arrive in commit order, so a non-matching one would show up
	// before the later matching ones.
	expect(ch, "type=sse.a.*", "sse.a.one pending", "sse.a.three pending", "sse.a.one running")
	expect(both, "type=sse.b.two&type=sse.c.*", "sse.b.two pending", "sse.c.x pending")
	expect(all, "all types", "sse.a.one pending", "sse.b.two pending", "sse.c.x pending", "sse.a.three pending", "other pending", "sse.a.one running")
}

// TestEventsWithoutStarts: running=false leaves out jobs starting to run
// and their progress, and keeps every other change, including the end of
// the run.
func TestEventsWithoutStarts(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	ch := openEvents(t, s, "type=sse.s&running=false")
	j := s.add(t, map[string]any{"type": "sse.s"})
	run := s.acceptOne(t, "sse.s")
	if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/heartbeat", j.ID), map[string]any{"token": run.Token, "progress": 0.5}); r.Status != 200 {
		t.Fatalf("heartbeat: %s", r)
	}
	if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/finish", j.ID), map[string]any{"token": run.Token}); r.Status != 204 {
		t.Fatalf("finish: %s", r)
	}
	for _, w := range []string{"pending", "completed"} {
		if ev, name, ok := nextEvent(t, ch); !ok || name != "job" || ev.ID != j.ID || ev.State.String() != w {
			t.Errorf("got %s %+v, want job %d %s", name, ev, j.ID, w)
		}
	}
	for _, q := range []string{"running=maybe", "running=true&running=false", "job=1&running=false"} {
		r := s.do(t, "GET", "/v1/events?"+q, nil)
		if r.Status != 400 || !strings.Contains(r.String(), "running") {
			t.Errorf("GET /v1/events?%s: %s, want 400 naming running", q, r)
		}
	}
}

// TestEventsWithoutCompletions: running=false&completed=false, the remote
// worker's stream, leaves out starts, progress and completions, and keeps
// what a worker acts on: jobs pending again, cancelled, failed, and
// removals, a completed job's too.
func TestEventsWithoutCompletions(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	ch := openEvents(t, s, "type=sse.q&running=false&completed=false")
	j := s.add(t, map[string]any{"type": "sse.q"})
	run := s.acceptOne(t, "sse.q")
	if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/finish", j.ID), map[string]any{"token": run.Token}); r.Status != 204 {
		t.Fatalf("finish: %s", r)
	}
	if r := s.do(t, "DELETE", fmt.Sprintf("/v1/jobs/%d", j.ID), nil); r.Status != 204 {
		t.Fatalf("remove: %s", r)
	}
	k := s.add(t, map[string]any{"type": "sse.q"})
	run = s.acceptOne(t, "sse.q")
	if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/fail", k.ID), map[string]any{"token": run.Token, "error": "again"}); r.Status != 204 {
		t.Fatalf("fail: %s", r)
	}
	if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/cancel", k.ID), nil); r.Status != 200 {
		t.Fatalf("cancel: %s", r)
	}
	want := []struct {
		id      int64
		state   string
		removed bool
	}{{j.ID, "pending", false}, {j.ID, "completed", true}, {k.ID, "pending", false}, {k.ID, "pending", false}, {k.ID, "cancelled", false}}
	for _, w := range want {
		if ev, name, ok := nextEvent(t, ch); !ok || name != "job" || ev.ID != w.id || ev.State.String() != w.state || ev.Removed != w.removed {
			t.Errorf("got %s %+v, want job %d %s (removed %v)", name, ev, w.id, w.state, w.removed)
		}
	}
	for _, q := range []string{"completed=maybe", "completed=false&completed=true", "job=1&completed=false"} {
		r := s.do(t, "GET", "/v1/events?"+q, nil)
		if r.Status != 400 || !strings.Contains(r.String(), "completed") {
			t.Errorf("GET /v1/events?%s: %s, want 400 naming completed", q, r)
		}
	}
}

// TestEventsMarkLeftOut: a stream that leaves changes out still sends,
// with each batch it flushes, the id of the last change it left out,
// alone, so that a client reconnecting resumes from there rather than from
// its last event (which may be long ago, with more changes since than a
// replay sends).
func TestEventsMarkLeftOut(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	ch := openEvents(t, s, "type=sse.m&running=false&completed=false")
	j := s.add(t, map[string]any{"type": "sse.m"})
	e, _ := nextMessage(t, ch)
	if e.name != "job" {
		t.Fatalf("got %q, want the job's add", e.name)
	}
	last := micros(t, e.id)
	run := s.acceptOne(t, "sse.m")
	if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/finish", j.ID), map[string]any{"token": run.Token}); r.Status != 204 {
		t.Fatalf("finish: %s", r)
	}
	k := s.add(t, map[string]any{"type": "sse.m"})
	// The start and the completion, left out, come as ids alone, in
	// order, before the next job's add.
	marks := 0
	for {
		e, _ = nextMessage(t, ch)
		id := micros(t, e.id)
		if id < last {
			t.Errorf("id %d after %d", id, last)
		}
		last = id
		if e.name == "job" {
			if !strings.Contains(string(e.data), fmt.Sprintf(`"id":%d,`, k.ID)) {
				t.Errorf("got %s, want job %d's add", e.data, k.ID)
			}
			break
		}
		if e.name != "" || e.data != nil {
			t.Fatalf("got %q %q, want an id alone", e.name, e.data)
		}
		marks++
	}
	if marks == 0 {
		t.Error("no id alone for the changes left out")
	}
}

// micros reads an event id (Unix microseconds).
func micros(t *testing.T, id string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatalf("event id %q: %v", id, err)
	}
	return v
}

// TestEventsGlobAlternatives follows types with a {a,b} pattern, the GLOB
// syntax accept supports. The comma must not split the pattern.
func TestEventsGlobAlternatives(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	// The pattern works for accept...
	s.add(t, map[string]any{"type": "alt.a"})
	if jobs := s.accept(t, 5, "alt.{a,b}"); len(jobs) != 1 {
		t.Fatalf("accept alt.{a,b}: %d jobs, want 1", len(jobs))
	}
	// ...and must for events.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/events?type="+url.QueryEscape("alt.{a,b}"), nil)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /v1/events?type=alt.{a,b}: %d %s; want a stream (the server splits the pattern at its comma)", resp.StatusCode, bytes.TrimSpace(b))
	}
}

// ---- the remote client ----

func remoteClient(t *testing.T, s *testServer, cfg remote.Config) *rota.Client {
	t.Helper()
	rs, err := remote.New(s.URL, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rota.NewClient(rs, rota.Config{NoMaintenance: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		rs.Close()
	})
	return c
}

// delayedStreams delays every event stream request after the first, so
// that a test can act while a reconnection is under way.
type delayedStreams struct {
	n     atomic.Int32
	delay time.Duration
	first bool // delay the first too
}

func (d *delayedStreams) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/v1/events" && (d.n.Add(1) > 1 || d.first) {
		time.Sleep(d.delay)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// feedEvents watches rs's change feed for jobs of typ, and returns once the
// feed (which connects in the background) delivers: it adds jobs until one
// arrives.
func feedEvents(t *testing.T, s *testServer, rs *remote.Store, typ string) (next func(what string) store.Event) {
	t.Helper()
	evs := make(chan store.Event, 1000)
	stop := rs.Watch(func(cs []store.Event) {
		for _, c := range cs {
			if c.Type == typ {
				evs <- c
			}
		}
	})
	t.Cleanup(stop)
	next = func(what string) store.Event {
		t.Helper()
		select {
		case ev := <-evs:
			return ev
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: no event within 15s", what)
			return store.Event{}
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		s.add(t, map[string]any{"type": typ})
		select {
		case <-evs:
			for len(evs) > 0 {
				<-evs
			}
			return next
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("the remote feed delivered nothing in 15s")
	return nil
}

// TestRemoteFeedAll: a remote store's change feed leaves out job starts
// and completions (a worker does not act on them) until something asks for
// every change, as a subscription does; it then replaces its connection
// with one that has them, opened before the old one closes, so that
// nothing is lost between the two, not even a removal (which a resumed
// stream cannot replay).
func TestRemoteFeedAll(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	rs, err := remote.New(s.URL, remote.Config{HTTPClient: &http.Client{Transport: &delayedStreams{delay: 500 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	next := feedEvents(t, s, rs, "feed.s")
	for probes := s.accept(t, 100, "feed.s"); len(probes) > 0; probes = s.accept(t, 100, "feed.s") {
		for _, p := range probes { // their starts and completions are not sent
			if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/finish", p.ID), map[string]any{"token": p.Token}); r.Status != 204 {
				t.Fatalf("finish: %s", r)
			}
		}
	}
	j := s.add(t, map[string]any{"type": "feed.s"})
	run := s.acceptOne(t, "feed.s")
	if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/fail", j.ID), map[string]any{"token": run.Token, "error": "again"}); r.Status != 204 {
		t.Fatalf("fail: %s", r)
	}
	gone := s.add(t, map[string]any{"type": "feed.s"})
	for _, w := range []struct {
		id    int64
		state store.State
	}{{j.ID, store.Pending}, {j.ID, store.Pending}, {gone.ID, store.Pending}} {
		if ev := next("a worker's changes"); ev.ID != w.id || ev.State != w.state || ev.Removed {
			t.Errorf("a worker's changes: got %+v, want job %d %s", ev, w.id, w.state)
		}
	}

	// Asking for every change opens a new connection (delayed here); a job
	// removed meanwhile is not lost. A replacement may repeat a change.
	rs.WatchAll()
	if r := s.do(t, "DELETE", fmt.Sprintf("/v1/jobs/%d", gone.ID), nil); r.Status != 204 {
		t.Fatalf("remove: %s", r)
	}
	await := func(id int64, match func(store.Event) bool, what string) {
		t.Helper()
		for {
			if ev := next(what); ev.ID == id && match(ev) {
				return
			}
		}
	}
	await(gone.ID, func(ev store.Event) bool { return ev.Removed }, "the removal")
	s.add(t, map[string]any{"type": "feed.s"})
	k := s.acceptOne(t, "feed.s")
	await(k.ID, func(ev store.Event) bool { return ev.State == store.Running && !ev.Removed }, "a start")
	if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/finish", k.ID), map[string]any{"token": k.Token}); r.Status != 204 {
		t.Fatalf("finish: %s", r)
	}
	await(k.ID, func(ev store.Event) bool { return ev.State == store.Completed && !ev.Removed }, "a completion")
}

// TestRemoteFeedAllAfterManyLeftOut: a completion during the switch to
// every change is not lost after the worker's stream has left out more
// changes than a replay sends (a review's reproduction: the stream's ids
// alone keep the point it resumes from current).
func TestRemoteFeedAllAfterManyLeftOut(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	ctx := context.Background()
	rs, err := remote.New(s.URL, remote.Config{HTTPClient: &http.Client{Transport: &delayedStreams{delay: 700 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	var seen atomic.Int64
	stop := rs.Watch(func(cs []store.Event) { seen.Add(int64(len(cs))) })
	defer stop()
	// Wait for the stream.
	for seen.Load() == 0 {
		s.add(t, map[string]any{"type": "warm"})
		time.Sleep(100 * time.Millisecond)
	}
	x := s.add(t, map[string]any{"type": "x"})
	const n = httpapi.MaxReplay + 5
	var ps []rota.AddParams
	for i := 0; i < n; i++ {
		ps = append(ps, rota.AddParams{Type: "bulk"})
	}
	before := seen.Load()
	for i := 0; i < n; i += 5000 {
		if _, err := s.c.AddMany(ctx, ps[i:min(i+5000, n)]); err != nil {
			t.Fatal(err)
		}
	}
	for seen.Load() < before+n {
		time.Sleep(50 * time.Millisecond)
	}
	run := s.acceptOne(t, "x")
	for {
		js, err := s.c.Accept(ctx, rota.AcceptParams{Types: []string{"bulk"}, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(js) == 0 {
			break
		}
		var fs []rota.FinishParams
		for _, j := range js {
			fs = append(fs, rota.FinishParams{Lease: j.Lease(), As: rota.Complete})
		}
		if _, err := s.c.FinishMany(ctx, fs); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	c, err := rota.NewClient(rs, rota.Config{NoMaintenance: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.SubscribeTypes(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := s.c.Complete(ctx, run.Lease(), nil); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if ev.ID == x.ID && ev.State == store.Completed {
				return
			}
		case <-timeout:
			t.Fatalf("SubscribeTypes never saw job %d complete", x.ID)
		}
	}
}

// TestRemoteFeedAllWhileOpening: every change asked for while a worker's
// stream is still connecting is not forgotten once it connects.
func TestRemoteFeedAllWhileOpening(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	rs, err := remote.New(s.URL, remote.Config{HTTPClient: &http.Client{Transport: &delayedStreams{delay: 300 * time.Millisecond, first: true}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	starts := make(chan int64, 100)
	stop := rs.Watch(func(cs []store.Event) {
		for _, c := range cs {
			if c.Type == "feed.open" && c.State == store.Running && !c.Removed {
				starts <- c.ID
			}
		}
	})
	defer stop()
	time.Sleep(100 * time.Millisecond) // the feed is opening a worker's stream
	rs.WatchAll()
	time.Sleep(time.Second)
	s.add(t, map[string]any{"type": "feed.open"})
	run := s.acceptOne(t, "feed.open")
	select {
	case id := <-starts:
		if id != run.ID {
			t.Errorf("a start of job %d, want %d", id, run.ID)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no start within 15s: the stream opened before WatchAll was not replaced")
	}
}

// TestRemoteFeedOlderServer: a server that does not know ?running=false
// or ?completed=false (it refuses unknown parameters) still gets a remote
// store its events: a server before both, every change; a server that
// knows running=false only, the stream with starts left out, as before
// completed=false.
func TestRemoteFeedOlderServer(t *testing.T) {
	for _, older := range []struct {
		refuses, want, query string
	}{
		{"running", "job or type", ""},
		{"completed", "job, type or running", "running=false"},
	} {
		t.Run("without "+older.refuses, func(t *testing.T) {
			s := newServer(t, httpapi.Config{})
			target, _ := url.Parse(s.URL)
			proxy := httputil.NewSingleHostReverseProxy(target)
			var mu sync.Mutex
			var streamed []string // the queries of the streams it served
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/events" {
					if r.URL.Query().Has(older.refuses) {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(400)
						fmt.Fprintf(w, `{"error":{"code":"invalid_input","message":"unknown query parameter \"%s\" (want %s)"}}`, older.refuses, older.want)
						return
					}
					mu.Lock()
					streamed = append(streamed, r.URL.RawQuery)
					mu.Unlock()
				}
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(func() {
				srv.CloseClientConnections()
				srv.Close()
			})
			rs, err := remote.New(srv.URL, remote.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rs.Close() })
			next := feedEvents(t, s, rs, "feed.old")
			run := s.acceptOne(t, "feed.old")
			if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/finish", run.ID), map[string]any{"token": run.Token}); r.Status != 204 {
				t.Fatalf("finish: %s", r)
			}
			for {
				ev := next("the completion through the older server")
				if ev.ID == run.ID && ev.State == store.Running && older.query != "" {
					t.Errorf("a start through a server that knows running=false")
				}
				if ev.ID == run.ID && ev.State == store.Completed {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(streamed) == 0 || streamed[0] != older.query {
				t.Errorf("streams served with %q, want %q", streamed, older.query)
			}
		})
	}
}

// streamConnected subscribes to every job on c, a remote client, and
// returns once the client's event stream (which connects in the
// background) delivers: it adds probe jobs until one's event arrives.
func streamConnected(t *testing.T, s *testServer, c *rota.Client) *rota.Subscription {
	t.Helper()
	sub, err := c.SubscribeTypes(t.Context(), "probe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		s.add(t, map[string]any{"type": "probe"})
		select {
		case <-sub.C:
			sub.Close()
			all, err := c.SubscribeTypes(t.Context(), "*")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(all.Close)
			return all
		case <-time.After(500 * time.Millisecond):
		}
	}
	t.Fatal("the remote event stream delivered nothing in 15s")
	return nil
}

// awaitEvent reads sub until an event matches.
func awaitEvent(t *testing.T, sub *rota.Subscription, match func(rota.Event) bool) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if match(ev) {
				return
			}
		case <-timeout:
			t.Fatal("the expected event did not come within 15s")
		}
	}
}

// runWorker runs w until the test ends.
func runWorker(t *testing.T, w *rota.Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("the worker did not stop")
		}
	})
}

func TestRemoteWorkerRunsJobs(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	c := remoteClient(t, s, remote.Config{})
	ctx := t.Context()

	// The jobs are added over HTTP; TestRemoteAdd covers the remote add.
	const n = 200
	batch := make([]map[string]any, n)
	for i := range batch {
		batch[i] = map[string]any{"type": "remote.work", "data": map[string]any{"n": i}}
	}
	res := want[addBatchResp](t, s, 200, "POST", "/v1/jobs", map[string]any{"jobs": batch}).Results

	var ran sync.Map
	var calls atomic.Int64
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 16, Logger: quiet(), PollWait: 5 * time.Second})
	rota.Handle(w, "remote.work", func(ctx context.Context, job *rota.Job, args struct{ N int }) error {
		calls.Add(1)
		ran.Store(job.ID, args.N)
		if job.Token == "" {
			return errors.New("no token")
		}
		return nil
	})
	runWorker(t, w)

	deadline := time.Now().Add(25 * time.Second)
	for {
		st := s.stats(t)
		if st.ByState["completed"] == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 25s: %v (handler calls: %d)", st.ByState, calls.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range res {
		if _, ok := ran.Load(r.Job.ID); !ok {
			t.Errorf("job %d completed without its handler running", r.Job.ID)
		}
	}
	// The same numbers through the remote client.
	counts, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var completed int64
	for _, cnt := range counts {
		if cnt.State == rota.Completed {
			completed += cnt.Jobs
		}
	}
	if completed != n {
		t.Errorf("remote Stats: %d completed, want %d", completed, n)
	}
	jobs, err := c.List(ctx, rota.ListParams{Types: []string{"remote.work"}, States: []rota.State{rota.Completed}, Limit: 1000})
	if err != nil || len(jobs.Jobs) != n {
		t.Errorf("remote List: %d jobs, %v", len(jobs.Jobs), err)
	}
}

func TestRemoteCancelReachesHandler(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	c := remoteClient(t, s, remote.Config{})

	// Open the client's event stream and see it deliver, so that the
	// cancel below cannot race the stream's connection.
	sub := streamConnected(t, s, c)

	started := make(chan int64, 1)
	causes := make(chan error, 1)
	// An hour's lease: no heartbeat comes during the test, so only the
	// event stream can tell the handler about the cancel.
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 2, LeaseTimeout: time.Hour, Logger: quiet()})
	w.Handle("remote.slow", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		started <- job.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}))
	// The job is added, and its pending event seen on the stream, before
	// the worker starts: TestRemoteWorkerStaleEvent shows why.
	j := s.add(t, map[string]any{"type": "remote.slow"})
	awaitEvent(t, sub, func(ev rota.Event) bool { return ev.ID == j.ID && ev.State == rota.Pending })
	runWorker(t, w)
	select {
	case id := <-started:
		if id != j.ID {
			t.Fatalf("handler started job %d, want %d", id, j.ID)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the handler did not start")
	}
	if g := s.get(t, j.ID); g.State != store.Running {
		t.Fatalf("job is %v, want running", g.State)
	}
	want[wire.JobResponse](t, s, 200, "POST", path(j.ID, "cancel"), nil)
	select {
	case cause := <-causes:
		if !errors.Is(cause, rota.ErrCanceled) {
			t.Errorf("handler context cause %v, want rota.ErrCanceled", cause)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the cancel did not reach the handler")
	}
	if g := s.get(t, j.ID); g.State != store.Cancelled {
		t.Errorf("job is %v, want cancelled", g.State)
	}
}

// delayedEvents is a proxy in front of s that passes requests through but
// holds each Server-Sent Event back for delay, like a slow network path for
// the event stream.
func delayedEvents(t *testing.T, s *testServer, delay time.Duration) string {
	t.Helper()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, s.URL+r.URL.RequestURI(), r.Body)
		req.Header = r.Header.Clone()
		resp, err := s.http.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		if r.URL.Path != "/v1/events" {
			io.Copy(w, resp.Body)
			return
		}
		w.(http.Flusher).Flush()
		sc := bufio.NewScanner(resp.Body)
		var block []string
		for sc.Scan() {
			block = append(block, sc.Text())
			if sc.Text() != "" {
				continue
			}
			if slices.ContainsFunc(block, func(l string) bool { return strings.HasPrefix(l, "data:") }) {
				time.Sleep(delay)
			}
			fmt.Fprint(w, strings.Join(block, "\n")+"\n")
			w.(http.Flusher).Flush()
			block = block[:0]
		}
	}))
	t.Cleanup(func() {
		proxy.CloseClientConnections()
		proxy.Close()
	})
	return proxy.URL
}

// TestRemoteWorkerStaleEvent runs a remote worker whose event stream lags
// behind its requests, as it may over a network: the pending event of a
// job arrives after the worker has accepted the job. The worker must not
// take that old event for the loss of its lease.
func TestRemoteWorkerStaleEvent(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	rs, err := remote.New(delayedEvents(t, s, 300*time.Millisecond), remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rota.NewClient(rs, rota.Config{NoMaintenance: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		rs.Close()
	})

	// Connect the (slow) stream and see it deliver.
	streamConnected(t, s, c)

	causes := make(chan error, 1)
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 1, Logger: quiet()})
	w.Handle("remote.stale", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		// Work for longer than the stream lags.
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return ctx.Err()
		case <-time.After(1500 * time.Millisecond):
			causes <- nil
			return nil
		}
	}))
	runWorker(t, w)
	time.Sleep(100 * time.Millisecond) // let the worker's accept start waiting
	j := s.add(t, map[string]any{"type": "remote.stale"})
	select {
	case cause := <-causes:
		if cause != nil {
			t.Errorf("the handler of job %d was cancelled (cause: %v) though nobody cancelled the job or took it back; "+
				"the worker took the job's old pending event, which the stream delivered after the accept, for a lost lease", j.ID, cause)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the handler did not run")
	}
}

// TestRemoteWorkerJobCompletedElsewhere: a remote worker's stream leaves
// completions out, so a job completed under its lease by another party
// (here the server's own client; Bedrock's FinishJob does so) is learnt at
// the worker's next heartbeat, which finds the lease gone and cancels the
// handler with ErrLeaseLost.
func TestRemoteWorkerJobCompletedElsewhere(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	c := remoteClient(t, s, remote.Config{})
	leases := make(chan rota.Lease, 1)
	causes := make(chan error, 1)
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 1, LeaseTimeout: 900 * time.Millisecond, Logger: quiet()})
	w.Handle("remote.elsewhere", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		leases <- job.Lease()
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}))
	runWorker(t, w)
	s.add(t, map[string]any{"type": "remote.elsewhere"})
	var l rota.Lease
	select {
	case l = <-leases:
	case <-time.After(15 * time.Second):
		t.Fatal("the handler did not run")
	}
	if err := s.c.Complete(t.Context(), l, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, rota.ErrLeaseLost) {
			t.Errorf("handler cancelled with %v, want ErrLeaseLost", cause)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the handler of a job completed elsewhere was not cancelled")
	}
}

// TestRemoteAdd adds, re-adds and resubmits through the remote client,
// which decodes the server's AddResponse.
func TestRemoteAdd(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	c := remoteClient(t, s, remote.Config{})
	ctx := t.Context()
	r, err := c.Add(ctx, rota.AddParams{Type: "remote.add", Key: "k", Data: json.RawMessage(`{"a":1}`)})
	if err != nil {
		t.Fatalf("remote Add: %v", err)
	}
	if r.Outcome != rota.Inserted || r.Job.ID <= 0 || r.Job.Key != "k" {
		t.Errorf("remote Add: %v %+v", r.Outcome, r.Job)
	}
	rs, err := c.AddMany(ctx, []rota.AddParams{{Type: "remote.add", Key: "k"}, {Type: "remote.add"}})
	if err != nil {
		t.Fatalf("remote AddMany: %v", err)
	}
	if len(rs) != 2 || rs[0].Outcome != rota.Updated || rs[0].Job.ID != r.Job.ID || rs[1].Outcome != rota.Inserted {
		t.Errorf("remote AddMany: %+v", rs)
	}
	rr, err := c.Resubmit(ctx, rota.ResubmitParams{ID: r.Job.ID, Data: json.RawMessage(`{"b":2}`)})
	if err != nil || rr.Outcome != rota.Updated {
		t.Errorf("remote Resubmit: %v %v", rr.Outcome, err)
	}
	if _, err := c.Resubmit(ctx, rota.ResubmitParams{ID: 999999}); !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("remote Resubmit of a missing job: %v, want ErrNotFound", err)
	}
}

func TestRemoteErrors(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	c := remoteClient(t, s, remote.Config{})
	ctx := t.Context()

	s.add(t, map[string]any{"type": "remote.err"})
	jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"remote.err"}, Limit: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Accept: %d jobs, %v", len(jobs), err)
	}
	j := jobs[0]
	if j.Token == "" || j.State != rota.Running {
		t.Fatalf("accepted job %+v", j)
	}
	stale := rota.Lease{ID: j.ID, Token: "00000000000000000000000000000000"}

	// A stale finish (batched into POST /v1/finish) and heartbeat.
	if err := c.Complete(ctx, stale, nil); !errors.Is(err, rota.ErrWorkerConflict) {
		t.Errorf("remote stale Complete: %v, want ErrWorkerConflict", err)
	}
	if _, err := c.Heartbeat(ctx, rota.HeartbeatParams{Lease: stale}); !errors.Is(err, rota.ErrWorkerConflict) {
		t.Errorf("remote stale Heartbeat: %v, want ErrWorkerConflict", err)
	}
	// The right token still holds the job.
	if _, err := c.Heartbeat(ctx, rota.HeartbeatParams{Lease: j.Lease()}); err != nil {
		t.Errorf("Heartbeat with the token: %v", err)
	}
	// Cancelled: canceled; a completed job cannot be cancelled.
	if err := c.Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(ctx, j.Lease(), nil); !errors.Is(err, rota.ErrCanceled) {
		t.Errorf("Complete of a cancelled job: %v, want ErrCanceled", err)
	}
	s.add(t, map[string]any{"type": "remote.done"})
	d, _ := c.Accept(ctx, rota.AcceptParams{Types: []string{"remote.done"}})
	if len(d) != 1 {
		t.Fatal("no remote.done job")
	}
	if err := c.Complete(ctx, d[0].Lease(), json.RawMessage(`{"ok":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, d[0].ID); !errors.Is(err, rota.ErrFinished) {
		t.Errorf("Cancel of a completed job: %v, want ErrFinished", err)
	}
	if _, err := c.Get(ctx, 999999); !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("Get of a missing job: %v, want ErrNotFound", err)
	}
	if _, err := c.GetByKey(ctx, "remote.err", "", "nope"); !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("GetByKey of a missing job: %v, want ErrNotFound", err)
	}
	if _, err := c.Add(ctx, rota.AddParams{Type: "bad\x01"}); !errors.Is(err, rota.ErrInvalid) {
		t.Errorf("Add of a bad type: %v, want ErrInvalid", err)
	}
	if _, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"[\x01"}}); !errors.Is(err, rota.ErrInvalid) {
		t.Errorf("Accept of a bad pattern: %v, want ErrInvalid", err)
	}
	if err := c.Remove(ctx, 999999); !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("Remove of a missing job: %v, want ErrNotFound", err)
	}
}

// TestRemoteGroupsWithCommas lists by a group whose name has a comma, as the
// remote client sends it (one query value per group). Group names may
// contain commas, so the server must not split group values at them.
func TestRemoteGroupsWithCommas(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	c := remoteClient(t, s, remote.Config{})
	j := s.add(t, map[string]any{"type": "g.comma", "group": "eu,west"})
	s.add(t, map[string]any{"type": "g.comma", "group": "eu"})
	res, err := c.List(t.Context(), rota.ListParams{Groups: []string{"eu,west"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res.Jobs); !slices.Equal(got, []int64{j.ID}) {
		t.Errorf("List(groups [\"eu,west\"]) = jobs %v, want [%d]", got, j.ID)
	}
}

// TestAddBatchCap checks that a batch add over store.MaxAddBatch jobs is
// refused with 413 before any work, and that one at the cap is taken.
func TestAddBatchCap(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	batch := func(n int) string {
		return `{"jobs":[` + strings.TrimSuffix(strings.Repeat(`{"type":"cap"},`, n), ",") + `]}`
	}
	r := s.do(t, "POST", "/v1/jobs", batch(store.MaxAddBatch+1))
	wantError(t, r, http.StatusRequestEntityTooLarge, wire.CodeTooLarge, fmt.Sprintf("a batch of %d jobs is more than %d", store.MaxAddBatch+1, store.MaxAddBatch))
	if st := s.stats(t); len(st.Counts) != 0 {
		t.Fatalf("a refused batch added %v", st.Counts)
	}
	r = s.do(t, "POST", "/v1/jobs", batch(store.MaxAddBatch))
	if r.Status != http.StatusOK {
		t.Fatalf("a batch at the cap: %d %s", r.Status, r.Body)
	}
}

// TestMetricTypesCapped checks that job types past Config.MaxMetricTypes
// share the label "other", so that clients cannot grow the metrics.
func TestMetricTypesCapped(t *testing.T) {
	s := newServer(t, httpapi.Config{MaxMetricTypes: 2})
	for i := range 5 {
		s.add(t, map[string]any{"type": fmt.Sprintf("capped.%d", i)})
	}
	r := s.do(t, "GET", "/metrics", nil)
	body := string(r.Body)
	for _, line := range []string{`rota_jobs_added_total{type="capped.0"} 1`, `rota_jobs_added_total{type="capped.1"} 1`, `rota_jobs_added_total{type="other"} 3`} {
		if !strings.Contains(body, line) {
			t.Errorf("metrics lack %q", line)
		}
	}
	if strings.Contains(body, `type="capped.2"`) {
		t.Error("a type past the cap has a label of its own")
	}
}

// TestRecurringJob: a schedule goes in through the API, and the job comes
// back with it, its slot and its next run after each run.
func TestRecurringJob(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	slot := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	j := s.add(t, map[string]any{"type": "report", "schedule": "scheduled, +1 hour", "missed": "skip",
		"run_at": slot.Format(time.RFC3339), "data": map[string]any{"n": 1}})
	if j.Schedule != "SCHEDULED, +1 HOUR" || j.Missed != store.MissedSkip || !j.Slot.Equal(slot) {
		t.Fatalf("added: schedule %q missed %v slot %v, want the stored repeat, skip, %v", j.Schedule, j.Missed, j.Slot, slot)
	}
	run := s.acceptOne(t, "report")
	want[struct{}](t, s, 204, "POST", path(run.ID, "finish"), map[string]any{"token": run.Token, "result": "sent"})
	got := s.get(t, j.ID)
	if got.State != store.Pending || !got.RunAt.Equal(slot.Add(time.Hour)) || !got.Slot.Equal(slot.Add(time.Hour)) {
		t.Errorf("after the run: %v run_at %v slot %v, want pending at %v", got.State, got.RunAt, got.Slot, slot.Add(time.Hour))
	}
	jsonEq(t, "result of the last run", got.Result, `"sent"`)
	// The next run shows in listings too.
	list := want[wire.ListResponse](t, s, 200, "GET", "/v1/jobs?type=report", nil)
	if len(list.Jobs) != 1 || list.Jobs[0].Schedule != "SCHEDULED, +1 HOUR" || !list.Jobs[0].RunAt.Equal(slot.Add(time.Hour)) {
		t.Errorf("listed: %+v", list.Jobs)
	}
}

// TestUpdateJob: PATCH changes a job in place and answers with it.
func TestUpdateJob(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	j := s.add(t, map[string]any{"type": "t", "data": map[string]any{"a": 1}})
	got := want[wire.JobResponse](t, s, 200, "PATCH", path(j.ID, ""), map[string]any{"data": map[string]any{"b": 2}, "priority": 4,
		"schedule": "@hourly"}).Job
	if got.Priority != 4 || got.Schedule != "@hourly" || got.State != store.Pending {
		t.Errorf("after PATCH: %+v", got)
	}
	jsonEq(t, "data after PATCH", got.Data, `{"b":2}`)
	wantError(t, s.do(t, "PATCH", path(j.ID, ""), map[string]any{"schedule": "SCHEDULED"}), 400, "invalid_input", "modifier")
	wantError(t, s.do(t, "PATCH", path(987654, ""), map[string]any{"priority": 1}), 404, "not_found", "987654")
	run := s.acceptOne(t, "t")
	wantError(t, s.do(t, "PATCH", path(run.ID, ""), map[string]any{"run_at": time.Now().Add(time.Hour)}), 409, "finished", "running")
}

// TestEventsResume: a client that reconnects with Last-Event-ID gets the
// current state of every job that changed while it was away, then the
// live changes.
func TestEventsResume(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	ch, cancel := openEventsFrom(t, s, "type=r", "")
	a := s.add(t, map[string]any{"type": "r"})
	var last string
	for ev := range ch {
		if ev.name == "job" {
			e, err := wire.ParseEvent(ev.data)
			if err != nil {
				t.Fatal(err)
			}
			if us, err := strconv.ParseInt(ev.id, 10, 64); err != nil || us != e.At.UnixMicro() {
				t.Errorf("event id %q, want the change's time in microseconds (%d)", ev.id, e.At.UnixMicro())
			}
			last = ev.id
			break
		}
	}
	cancel()
	// Away: a new job, and a change to the one seen.
	b := s.add(t, map[string]any{"type": "r"})
	want[wire.JobResponse](t, s, 200, "POST", path(a.ID, "cancel"), nil)
	s.add(t, map[string]any{"type": "other"})

	ch, _ = openEventsFrom(t, s, "type=r", last)
	seen := map[int64]store.State{}
	timeout := time.After(15 * time.Second)
	for len(seen) < 2 || seen[a.ID] != store.Cancelled {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the resumed stream ended; saw %v", seen)
			}
			if ev.name != "job" {
				t.Fatalf("resumed stream: event %q %s", ev.name, ev.data)
			}
			e, _ := wire.ParseEvent(ev.data)
			if e.Type != "r" {
				t.Errorf("replayed a job of type %q", e.Type)
			}
			seen[e.ID] = e.State
		case <-timeout:
			t.Fatalf("the resumed stream replayed %v, want jobs %d (cancelled) and %d", seen, a.ID, b.ID)
		}
	}
	// Then live.
	c := s.add(t, map[string]any{"type": "r"})
	for ev := range ch {
		if e, _ := wire.ParseEvent(ev.data); e.ID == c.ID {
			break
		}
	}
	wantError(t, s.do(t, "GET", "/v1/events?type=r", nil, "Last-Event-ID", "yesterday"), 400, "invalid_input", "Last-Event-ID")
}

// TestEventsSlowClient: a client that stops reading does not make the
// server queue changes without bound: its stream ends with "resume".
func TestEventsSlowClient(t *testing.T) {
	s := newServerWith(t, httpapi.Config{}, rota.Config{SubscriberQueue: 50})
	req, _ := http.NewRequestWithContext(t.Context(), "GET", s.URL+"/v1/events?type=flood", nil)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Not reading: the socket's buffers fill, then the server's channels,
	// then its bounded queue.
	for range 40 {
		jobs := make([]map[string]any, 1000)
		for i := range jobs {
			jobs[i] = map[string]any{"type": "flood", "data": map[string]any{"pad": strings.Repeat("x", 64)}}
		}
		if r := s.do(t, "POST", "/v1/jobs", map[string]any{"jobs": jobs}); r.Status != 201 && r.Status != 200 {
			t.Fatalf("add: %s", r)
		}
	}
	sc := bufio.NewScanner(resp.Body)
	var events int
	var endedWith string
	wire.ParseEventStream(func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}, func(name string, data []byte) bool {
		if name == "job" {
			events++
			return true
		}
		endedWith = name + " " + string(data)
		return false
	})
	if !strings.HasPrefix(endedWith, "resume ") || !strings.Contains(endedWith, "Last-Event-ID") {
		t.Errorf("the stream of a client that fell behind ended with %q after %d events, want a resume event", endedWith, events)
	}
	if events >= 40000 {
		t.Errorf("the slow client got all %d events: nothing was bounded", events)
	}
}

// TestAcceptAnswersRetryAfterAsADuration: the accept's answer writes a
// job's retry_after as the document's Duration string, as every other
// answer does; it wrote nanoseconds, a number, which clients that follow
// the document (the Python client) could not read.
func TestAcceptAnswersRetryAfterAsADuration(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	s.add(t, map[string]any{"type": "fixed", "retry_after": "1.5s"})
	r := s.do(t, "POST", "/v1/accept", map[string]any{"types": []string{"fixed"}})
	if !bytes.Contains(r.Body, []byte(`"retry_after":"1.5s"`)) {
		t.Fatalf("accept: %s; want retry_after as \"1.5s\"", r)
	}
	var got wire.AcceptResponse
	if err := json.Unmarshal(r.Body, &got); err != nil || len(got.Jobs) != 1 || got.Jobs[0].RetryAfter != 1500*time.Millisecond {
		t.Fatalf("accept's answer read as %+v, %v; want one job with retry_after 1.5s", got, err)
	}
}

// TestWaitForStates: GET /v1/jobs/{id}?wait=…&state=… is couch_jobs'
// wait over HTTP: a long poll that answers the job, with its data, once
// it is in one of the states (terminal ones by default), or as it is when
// the wait passes; the remote client's Wait uses it.
func TestWaitForStates(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	ctx := t.Context()
	j, err := s.c.Add(ctx, rota.AddParams{Type: "wait.t", Data: json.RawMessage(`{"step":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(j.Job.ID, 10)
	got := make(chan reply, 1)
	go func() { got <- s.do(t, "GET", "/v1/jobs/"+id+"?wait=10s&state=running", nil) }()
	time.Sleep(100 * time.Millisecond)
	jobs, err := s.c.Accept(ctx, rota.AcceptParams{Types: []string{"wait.t"}})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("accept: %v %v", jobs, err)
	}
	r := <-got
	if r.Status != 200 || !strings.Contains(string(r.Body), `"state":"running"`) || !strings.Contains(string(r.Body), `"data":{"step":1}`) {
		t.Errorf("wait for running: %s", r)
	}
	// The wait passes: the job as it is.
	start := time.Now()
	r = s.do(t, "GET", "/v1/jobs/"+id+"?wait=200ms&state=paused,cancelled", nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"state":"running"`) || time.Since(start) < 200*time.Millisecond {
		t.Errorf("a wait that passes: %s after %v", r, time.Since(start))
	}
	for _, bad := range []string{"?wait=1s&state=sleeping", "?wait=2h", "?wait=-1s", "?state=running", "?other=1"} {
		if r := s.do(t, "GET", "/v1/jobs/"+id+bad, nil); r.Status != 400 || !strings.Contains(string(r.Body), "invalid_input") {
			t.Errorf("GET %s: %s, want 400", bad, r)
		}
	}

	c := remoteClient(t, s, remote.Config{})
	done := make(chan error, 1)
	var waited rota.Job
	go func() {
		var err error
		waited, err = c.Wait(ctx, j.Job.ID) // terminal
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := s.c.Heartbeat(ctx, rota.HeartbeatParams{Lease: jobs[0].Lease(), Data: json.RawMessage(`{"step":2}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Complete(ctx, jobs[0].Lease(), nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || waited.State != rota.Completed || string(waited.Data) != `{"step":2}` {
		t.Errorf("remote Wait: %s %s %v", waited.State, waited.Data, err)
	}
	if j, err := c.Wait(ctx, j.Job.ID, rota.Running); !errors.Is(err, rota.ErrFinished) || j.State != rota.Completed {
		t.Errorf("remote Wait for running of a completed job: %s %v, want ErrFinished", j.State, err)
	}
	if _, err := c.Wait(ctx, 999999, rota.Running); !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("remote Wait of a missing job: %v, want ErrNotFound", err)
	}
}
