// Package storetest is the conformance suite every rota store must pass.
//
// A store package runs it from a test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t) })
//	}
//
// The suite uses only the store.Store interface, so that every backend is
// held to the same rules: the transitions and errors of docs/concepts.md.
// Where time matters it works with real time and wide margins (run times an
// hour ahead, leases expired by asking ExpireLeases about a time an hour
// ahead); it never sleeps for long and never asserts on how long a call
// took.
package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// Run runs the conformance suite against the store that open returns.
// open must return a fresh, empty store each time it is called (the suite
// calls it once per subtest) and arrange for it to be closed when the
// subtest ends; closing a store that the suite already closed must not fail
// the test.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Add", func(t *testing.T) { testAdd(t, open) })
	t.Run("Keys", func(t *testing.T) { testKeys(t, open) })
	t.Run("Get", func(t *testing.T) { testGet(t, open) })
	t.Run("List", func(t *testing.T) { testList(t, open) })
	t.Run("Accept", func(t *testing.T) { testAccept(t, open) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, open) })
	t.Run("Heartbeat", func(t *testing.T) { testHeartbeat(t, open) })
	t.Run("Finish", func(t *testing.T) { testFinish(t, open) })
	t.Run("Fencing", func(t *testing.T) { testFencing(t, open) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, open) })
	t.Run("Resubmit", func(t *testing.T) { testResubmit(t, open) })
	t.Run("Remove", func(t *testing.T) { testRemove(t, open) })
	t.Run("ExpireLeases", func(t *testing.T) { testExpireLeases(t, open) })
	t.Run("Watch", func(t *testing.T) { testWatch(t, open) })
	t.Run("WatchLeases", func(t *testing.T) { testWatchLeases(t, open) })
	t.Run("TypeConfig", func(t *testing.T) { testTypeConfig(t, open) })
	t.Run("Stats", func(t *testing.T) { testStats(t, open) })
	t.Run("Fairness", func(t *testing.T) { testFairness(t, open) })
	t.Run("Rates", func(t *testing.T) { testRates(t, open) })
	t.Run("Recurring", func(t *testing.T) { testRecurring(t, open) })
	t.Run("ListRecurring", func(t *testing.T) { testListRecurring(t, open) })
	t.Run("Pause", func(t *testing.T) { testPause(t, open) })
	t.Run("RetryAfter", func(t *testing.T) { testRetryAfter(t, open) })
	t.Run("Timeout", func(t *testing.T) { testTimeout(t, open) })
	t.Run("Deadline", func(t *testing.T) { testDeadline(t, open) })
	t.Run("TypeTimeout", func(t *testing.T) { testTypeTimeout(t, open) })
	t.Run("Unique", func(t *testing.T) { testUnique(t, open) })
	t.Run("UniqueFor", func(t *testing.T) { testUniqueFor(t, open) })
	t.Run("Debounce", func(t *testing.T) { testDebounce(t, open) })
	t.Run("Tenants", func(t *testing.T) { testTenants(t, open) })
	t.Run("Family", func(t *testing.T) { testFamily(t, open) })
	t.Run("Deps", func(t *testing.T) { testDeps(t, open) })
	t.Run("Retention", func(t *testing.T) { testRetention(t, open) })
	t.Run("Update", func(t *testing.T) { testUpdate(t, open) })
	t.Run("BedrockIDs", func(t *testing.T) { testBedrockIDs(t, open) })
	t.Run("FinishCarries", func(t *testing.T) { testFinishCarries(t, open) })
	t.Run("OneCallParams", func(t *testing.T) { testOneCallParams(t, open) })
	t.Run("PrevStarted", func(t *testing.T) { testPrevStarted(t, open) })
	t.Run("AcceptPriority", func(t *testing.T) { testAcceptPriority(t, open) })
	t.Run("Rename", func(t *testing.T) { testRename(t, open) })
	t.Run("Tokens", func(t *testing.T) { testTokens(t, open) })
	t.Run("AcceptGroups", func(t *testing.T) { testAcceptGroups(t, open) })
	t.Run("Import", func(t *testing.T) { testImport(t, open) })
	t.Run("Batches", func(t *testing.T) { testBatches(t, open) })
	t.Run("JobBatches", func(t *testing.T) { testJobBatches(t, open) })
	t.Run("FastPath", func(t *testing.T) { testFastPath(t, open) })
	t.Run("Logs", func(t *testing.T) { testLogs(t, open) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, open) })
	t.Run("Close", func(t *testing.T) { testClose(t, open) })
}

// slack is the tolerance for "about now": the store may use its own clock
// (a database server's), and a slow machine may take a while between the
// test reading the clock and the store doing so.
const slack = 5 * time.Second

// ---- helpers ----

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func add(t *testing.T, s store.Store, ps ...store.AddParams) []store.AddResult {
	t.Helper()
	res, err := s.Add(t.Context(), ps)
	if err != nil {
		t.Fatalf("Add(%d jobs): unexpected error: %v", len(ps), err)
	}
	if len(res) != len(ps) {
		t.Fatalf("Add(%d jobs) returned %d results, want one per job", len(ps), len(res))
	}
	return res
}

func addOne(t *testing.T, s store.Store, p store.AddParams) store.Job {
	t.Helper()
	r := add(t, s, p)[0]
	if r.Outcome != store.Inserted {
		t.Fatalf("Add(type %q key %q): outcome %v, want inserted", p.Type, p.Key, r.Outcome)
	}
	return r.Job
}

func get(t *testing.T, s store.Store, id int64) store.Job {
	t.Helper()
	jobs, err := s.Get(t.Context(), []int64{id})
	if err != nil {
		t.Fatalf("Get(%d): unexpected error: %v", id, err)
	}
	if len(jobs) != 1 {
		t.Fatalf("Get(%d) returned %d jobs, want 1", id, len(jobs))
	}
	if jobs[0].ID != id {
		t.Fatalf("Get(%d): the job does not exist (got id %d), want it to", id, jobs[0].ID)
	}
	return jobs[0]
}

func gone(t *testing.T, s store.Store, id int64) {
	t.Helper()
	jobs, err := s.Get(t.Context(), []int64{id})
	if err != nil {
		t.Fatalf("Get(%d): unexpected error: %v", id, err)
	}
	if len(jobs) != 1 || jobs[0].ID != 0 {
		t.Errorf("Get(%d) = %+v, want a zero Job because the job should not exist", id, jobs)
	}
}

func accept(t *testing.T, s store.Store, p store.AcceptParams) store.AcceptResult {
	t.Helper()
	res, err := s.Accept(t.Context(), p)
	if err != nil {
		t.Fatalf("Accept(%v): unexpected error: %v", p.Types, err)
	}
	return res
}

func ids(jobs []store.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func resultIDs(res []store.AddResult) []int64 {
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.Job.ID
	}
	return out
}

// start adds a job and accepts it. No other due job of p.Type may come
// before it in accept order.
func start(t *testing.T, s store.Store, p store.AddParams) store.Job {
	t.Helper()
	j := addOne(t, s, p)
	res := accept(t, s, store.AcceptParams{Types: []string{p.Type}, Worker: "worker-1"})
	if len(res.Jobs) != 1 || res.Jobs[0].ID != j.ID {
		t.Fatalf("Accept(%q) = jobs %v, want just the job %d that was added", p.Type, ids(res.Jobs), j.ID)
	}
	return res.Jobs[0]
}

// ended returns a job, added with p, that reached state through a run.
func ended(t *testing.T, s store.Store, p store.AddParams, state store.State) store.Job {
	t.Helper()
	j := start(t, s, p)
	switch state {
	case store.Completed:
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(`{"r":1}`)})
	case store.Failed:
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "broken", Permanent: true})
	case store.Cancelled:
		mustCancel(t, s, j.ID)
	default:
		t.Fatalf("ended: %v is not a terminal state", state)
	}
	got := get(t, s, j.ID)
	if got.State != state {
		t.Fatalf("job %d is %v, want %v", j.ID, got.State, state)
	}
	return got
}

func lease(j store.Job) store.Lease { return store.Lease{ID: j.ID, Token: j.Token} }

func finish(t *testing.T, s store.Store, p store.FinishParams) error {
	t.Helper()
	errs, err := s.Finish(t.Context(), []store.FinishParams{p})
	if err != nil {
		t.Fatalf("Finish(job %d as %v): the call failed: %v", p.ID, p.As, err)
	}
	if len(errs) != 1 {
		t.Fatalf("Finish(1 item) returned %d errors, want one per item", len(errs))
	}
	return errs[0]
}

func mustFinish(t *testing.T, s store.Store, p store.FinishParams) {
	t.Helper()
	if err := finish(t, s, p); err != nil {
		t.Fatalf("Finish(job %d as %v): %v, want success", p.ID, p.As, err)
	}
}

func heartbeat(t *testing.T, s store.Store, p store.HeartbeatParams) store.HeartbeatResult {
	t.Helper()
	res, err := s.Heartbeat(t.Context(), []store.HeartbeatParams{p})
	if err != nil {
		t.Fatalf("Heartbeat(job %d): the call failed: %v", p.ID, err)
	}
	if len(res) != 1 {
		t.Fatalf("Heartbeat(1 item) returned %d results, want one per item", len(res))
	}
	return res[0]
}

func mustCancel(t *testing.T, s store.Store, id int64) {
	t.Helper()
	errs, err := s.Cancel(t.Context(), []int64{id})
	if err != nil {
		t.Fatalf("Cancel(%d): the call failed: %v", id, err)
	}
	if len(errs) != 1 || errs[0] != nil {
		t.Fatalf("Cancel(%d) = %v, want [nil]", id, errs)
	}
}

func resubmit(t *testing.T, s store.Store, p store.ResubmitParams) store.AddResult {
	t.Helper()
	res, errs, err := s.Resubmit(t.Context(), []store.ResubmitParams{p})
	if err != nil {
		t.Fatalf("Resubmit(%d): the call failed: %v", p.ID, err)
	}
	if len(res) != 1 || len(errs) != 1 {
		t.Fatalf("Resubmit(1 item) returned %d results and %d errors, want one of each", len(res), len(errs))
	}
	if errs[0] != nil {
		t.Fatalf("Resubmit(%d): %v, want success", p.ID, errs[0])
	}
	return res[0]
}

func expire(t *testing.T, s store.Store, now time.Time) (int, time.Time) {
	t.Helper()
	n, next, err := s.ExpireLeases(t.Context(), now)
	if err != nil {
		t.Fatalf("ExpireLeases: unexpected error: %v", err)
	}
	return n, next
}

// listAll pages through a listing and checks the paging on the way.
func listAll(t *testing.T, s store.Store, p store.ListParams) []store.Job {
	t.Helper()
	var all []store.Job
	p.After = 0
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatalf("List: more than 10000 pages; the cursor does not advance")
		}
		res, err := s.List(t.Context(), p)
		if err != nil {
			t.Fatalf("List(%+v): unexpected error: %v", p, err)
		}
		limit := p.Limit
		if limit == 0 {
			limit = 100
		}
		if len(res.Jobs) > limit {
			t.Fatalf("List: page of %d jobs, more than the limit %d", len(res.Jobs), limit)
		}
		all = append(all, res.Jobs...)
		if res.Next == 0 {
			return all
		}
		if len(res.Jobs) == 0 {
			t.Fatalf("List: an empty page with a next cursor %d", res.Next)
		}
		p.After = res.Next
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want one matching %q", what, err, target)
	}
}

func jsonEqual(a, b []byte) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

func wantJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if !jsonEqual(got, []byte(want)) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

// aboutNow checks that got lies between the clock readings before and after
// the operation, give or take slack.
func aboutNow(t *testing.T, what string, got, before, after time.Time) {
	t.Helper()
	within(t, what, got, before.Add(-slack), after.Add(slack))
}

func within(t *testing.T, what string, got, lo, hi time.Time) {
	t.Helper()
	if got.Before(lo) || got.After(hi) {
		t.Errorf("%s = %v, want between %v and %v", what, got.UTC(), lo.UTC(), hi.UTC())
	}
}

// sameTime checks two times equal to the store's precision (stores keep at
// least microseconds).
func sameTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d < -time.Millisecond || d > time.Millisecond || got.IsZero() != want.IsZero() {
		t.Errorf("%s = %v, want %v", what, got.UTC(), want.UTC())
	}
}

// jobDiff lists the fields in which two versions of a job differ.
func jobDiff(a, b store.Job) []string {
	var d []string
	f := func(name string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			d = append(d, fmt.Sprintf("%s %v → %v", name, x, y))
		}
	}
	ft := func(name string, x, y time.Time) {
		if !x.Equal(y) {
			d = append(d, fmt.Sprintf("%s %v → %v", name, x.UTC(), y.UTC()))
		}
	}
	fj := func(name string, x, y []byte) {
		if !jsonEqual(x, y) {
			d = append(d, fmt.Sprintf("%s %s → %s", name, x, y))
		}
	}
	f("id", a.ID, b.ID)
	f("type", a.Type, b.Type)
	f("key", a.Key, b.Key)
	f("group", a.Group, b.Group)
	f("priority", a.Priority, b.Priority)
	f("state", a.State, b.State)
	ft("run_at", a.RunAt, b.RunAt)
	fj("data", a.Data, b.Data)
	f("attempt", a.Attempt, b.Attempt)
	f("max_attempts", a.MaxAttempts, b.MaxAttempts)
	f("backoff_base", a.BackoffBase, b.BackoffBase)
	f("backoff_max", a.BackoffMax, b.BackoffMax)
	f("token", a.Token, b.Token)
	f("worker", a.Worker, b.Worker)
	ft("lease_until", a.LeaseUntil, b.LeaseUntil)
	f("cancel_requested", a.CancelRequested, b.CancelRequested)
	f("resubmit", a.Resubmit, b.Resubmit)
	f("progress", a.Progress, b.Progress)
	f("last_error", a.LastError, b.LastError)
	if len(a.Errors) != len(b.Errors) {
		d = append(d, fmt.Sprintf("errors %v → %v", a.Errors, b.Errors))
	} else {
		for i := range a.Errors {
			x, y := a.Errors[i], b.Errors[i]
			if x.Attempt != y.Attempt || x.Error != y.Error || !x.At.Equal(y.At) {
				d = append(d, fmt.Sprintf("errors[%d] %v → %v", i, x, y))
			}
		}
	}
	fj("result", a.Result, b.Result)
	ft("created_at", a.CreatedAt, b.CreatedAt)
	ft("started_at", a.StartedAt, b.StartedAt)
	ft("finished_at", a.FinishedAt, b.FinishedAt)
	ft("updated_at", a.UpdatedAt, b.UpdatedAt)
	return d
}

func unchanged(t *testing.T, what string, before, after store.Job) {
	t.Helper()
	if d := jobDiff(before, after); len(d) > 0 {
		t.Errorf("%s changed the job, want no change: %s", what, strings.Join(d, "; "))
	}
}

func wantState(t *testing.T, j store.Job, want store.State) {
	t.Helper()
	if j.State != want {
		t.Errorf("job %d is %v, want %v", j.ID, j.State, want)
	}
}

func wantAttempt(t *testing.T, j store.Job, want int) {
	t.Helper()
	if j.Attempt != want {
		t.Errorf("job %d: attempt %d, want %d", j.ID, j.Attempt, want)
	}
}

// endings are all the ways a worker can end its hold, for fencing checks.
func endings(l store.Lease) []store.FinishParams {
	return []store.FinishParams{
		{Lease: l, As: store.Complete, Result: raw(`{"stale":true}`)},
		{Lease: l, As: store.Fail, Error: "stale"},
		{Lease: l, As: store.Fail, Error: "stale", Permanent: true},
		{Lease: l, As: store.Snooze, RunAt: time.Now().Add(time.Hour)},
		{Lease: l, As: store.Release},
		{Lease: l, As: store.Cancel, Error: "stale"},
	}
}

// fenced checks that every worker call with l fails with want and leaves
// the job (or its absence) as it was.
func fenced(t *testing.T, s store.Store, l store.Lease, want error) {
	t.Helper()
	jobs, err := s.Get(t.Context(), []int64{l.ID})
	if err != nil {
		t.Fatalf("Get(%d): %v", l.ID, err)
	}
	before := jobs[0]
	p := 50.0
	hb := heartbeat(t, s, store.HeartbeatParams{Lease: l, Data: raw(`{"stale":true}`), Progress: &p})
	wantErr(t, "Heartbeat with a stale token", hb.Err, want)
	for _, fp := range endings(l) {
		wantErr(t, fmt.Sprintf("Finish as %v (permanent=%v) with a stale token", fp.As, fp.Permanent), finish(t, s, fp), want)
	}
	jobs, err = s.Get(t.Context(), []int64{l.ID})
	if err != nil {
		t.Fatalf("Get(%d): %v", l.ID, err)
	}
	unchanged(t, "worker calls with a stale token", before, jobs[0])
}
