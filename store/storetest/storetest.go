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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// ---- add ----

func testAdd(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Defaults", func(t *testing.T) {
		s := open(t)
		before := time.Now()
		j := addOne(t, s, store.AddParams{Type: "email.send"})
		after := time.Now()
		if j.ID <= 0 {
			t.Errorf("new job id %d, want a positive id", j.ID)
		}
		wantState(t, j, store.Pending)
		if j.Type != "email.send" || j.Key != "" || j.Group != "" || j.Priority != 0 {
			t.Errorf("new job type %q key %q group %q priority %d, want email.send, no key, no group, priority 0",
				j.Type, j.Key, j.Group, j.Priority)
		}
		wantAttempt(t, j, 0)
		if j.MaxAttempts != store.DefaultMaxAttempts {
			t.Errorf("max_attempts %d, want the default %d", j.MaxAttempts, store.DefaultMaxAttempts)
		}
		if j.BackoffBase != store.DefaultBackoffBase || j.BackoffMax != store.DefaultBackoffMax {
			t.Errorf("back-off %v..%v, want the defaults %v..%v", j.BackoffBase, j.BackoffMax,
				store.DefaultBackoffBase, store.DefaultBackoffMax)
		}
		wantJSON(t, "data of a job added without data", j.Data, `{}`)
		aboutNow(t, "run_at of a job added without run_at", j.RunAt, before, after)
		aboutNow(t, "created_at", j.CreatedAt, before, after)
		if j.Token != "" || !j.LeaseUntil.IsZero() || !j.FinishedAt.IsZero() || !j.StartedAt.IsZero() {
			t.Errorf("new job has token %q, lease_until %v, started_at %v, finished_at %v; want none of them",
				j.Token, j.LeaseUntil, j.StartedAt, j.FinishedAt)
		}
		if j.LastError != "" || len(j.Errors) != 0 || len(j.Result) != 0 || j.Progress != 0 {
			t.Errorf("new job has last_error %q, errors %v, result %s, progress %v; want none",
				j.LastError, j.Errors, j.Result, j.Progress)
		}
		unchanged(t, "reading back the added job (Add's result vs Get)", j, get(t, s, j.ID))
	})

	t.Run("AllFields", func(t *testing.T) {
		s := open(t)
		runAt := time.Now().Add(time.Hour)
		p := store.AddParams{
			Type: "email.send", Key: "welcome-42", Group: "tenant-1", Priority: 7, RunAt: runAt,
			Data: raw(`{ "to": "a@example.com", "n": [1, 2] }`), MaxAttempts: 3,
			BackoffBase: 2 * time.Second, BackoffMax: time.Minute,
		}
		j := addOne(t, s, p)
		got := get(t, s, j.ID)
		unchanged(t, "reading back the added job (Add's result vs Get)", j, got)
		if got.Key != p.Key || got.Group != p.Group || got.Priority != p.Priority {
			t.Errorf("key %q group %q priority %d, want %q %q %d", got.Key, got.Group, got.Priority, p.Key, p.Group, p.Priority)
		}
		sameTime(t, "run_at", got.RunAt, runAt)
		wantJSON(t, "data", got.Data, `{"to":"a@example.com","n":[1,2]}`)
		if got.MaxAttempts != 3 || got.BackoffBase != 2*time.Second || got.BackoffMax != time.Minute {
			t.Errorf("max_attempts %d back-off %v..%v, want 3 and 2s..1m", got.MaxAttempts, got.BackoffBase, got.BackoffMax)
		}
		if got.State != store.Pending {
			t.Errorf("a job scheduled for later is %v, want pending", got.State)
		}
	})

	t.Run("BatchInOrder", func(t *testing.T) {
		s := open(t)
		var ps []store.AddParams
		for i := range 5 {
			ps = append(ps, store.AddParams{Type: fmt.Sprintf("t%d", i%2), Data: raw(fmt.Sprintf(`{"i":%d}`, i))})
		}
		res := add(t, s, ps...)
		for i, r := range res {
			if r.Outcome != store.Inserted {
				t.Errorf("result %d: outcome %v, want inserted", i, r.Outcome)
			}
			if r.Job.Type != ps[i].Type {
				t.Errorf("result %d: type %q, want %q (results must be in the order of the batch)", i, r.Job.Type, ps[i].Type)
			}
			wantJSON(t, fmt.Sprintf("result %d data", i), r.Job.Data, string(ps[i].Data))
			if i > 0 && r.Job.ID <= res[i-1].Job.ID {
				t.Errorf("result %d: id %d, not greater than the previous id %d", i, r.Job.ID, res[i-1].Job.ID)
			}
		}
		jobs, err := s.Get(t.Context(), resultIDs(res))
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range jobs {
			wantJSON(t, fmt.Sprintf("stored job %d data", i), j.Data, string(ps[i].Data))
		}
	})

	t.Run("IDsIncreaseAndAreNotReused", func(t *testing.T) {
		s := open(t)
		a := addOne(t, s, store.AddParams{Type: "x"})
		b := addOne(t, s, store.AddParams{Type: "y"})
		if b.ID <= a.ID {
			t.Errorf("second job id %d, want greater than the first job's %d", b.ID, a.ID)
		}
		errs, err := s.Remove(t.Context(), []int64{b.ID})
		if err != nil || errs[0] != nil {
			t.Fatalf("Remove(%d) = %v, %v", b.ID, errs, err)
		}
		c := addOne(t, s, store.AddParams{Type: "x"})
		if c.ID <= b.ID {
			t.Errorf("job added after removing job %d got id %d, want a new, greater id", b.ID, c.ID)
		}
	})

	t.Run("InvalidRejectsWholeBatch", func(t *testing.T) {
		s := open(t)
		huge := `{"x":"` + strings.Repeat("a", store.MaxDataSize) + `"}`
		cases := []struct {
			name string
			p    store.AddParams
		}{
			{"empty type", store.AddParams{}},
			{"type with *", store.AddParams{Type: "email.*"}},
			{"type with [", store.AddParams{Type: "a[b]"}},
			{"type with control character", store.AddParams{Type: "a\nb"}},
			{"type longer than 255", store.AddParams{Type: strings.Repeat("t", store.MaxNameLen+1)}},
			{"data is an array", store.AddParams{Type: "ok", Data: raw(`[1,2]`)}},
			{"data is a string", store.AddParams{Type: "ok", Data: raw(`"x"`)}},
			{"data is invalid JSON", store.AddParams{Type: "ok", Data: raw(`{"a":`)}},
			{"data larger than MaxDataSize", store.AddParams{Type: "ok", Data: raw(huge)}},
			{"negative max_attempts", store.AddParams{Type: "ok", MaxAttempts: -1}},
			{"negative backoff", store.AddParams{Type: "ok", BackoffBase: -time.Second}},
			{"backoff_max < backoff_base", store.AddParams{Type: "ok", BackoffBase: time.Minute, BackoffMax: time.Second}},
			{"run_at in year 10000", store.AddParams{Type: "ok", RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
			{"run_at before 1970", store.AddParams{Type: "ok", RunAt: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)}},
			{"key longer than 255", store.AddParams{Type: "ok", Key: strings.Repeat("k", store.MaxNameLen+1)}},
			{"group longer than 255", store.AddParams{Type: "ok", Group: strings.Repeat("g", store.MaxNameLen+1)}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				batch := []store.AddParams{{Type: "ok", Key: "k1"}, c.p, {Type: "ok", Key: "k2"}}
				res, err := s.Add(t.Context(), batch)
				wantErr(t, "Add of a batch with "+c.name, err, store.ErrInvalid)
				if res != nil {
					t.Errorf("Add of a bad batch returned results %v, want none", res)
				}
				_, err = s.Add(t.Context(), []store.AddParams{c.p})
				wantErr(t, "Add of one job with "+c.name, err, store.ErrInvalid)
				if jobs := listAll(t, s, store.ListParams{}); len(jobs) != 0 {
					t.Errorf("after rejected adds the store holds %d jobs, want none", len(jobs))
				}
			})
		}
	})
}

// ---- keys ----

func testKeys(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("UniqueWithinType", func(t *testing.T) {
		s := open(t)
		res := add(t, s,
			store.AddParams{Type: "a", Key: "k", Data: raw(`{"v":"a"}`)},
			store.AddParams{Type: "b", Key: "k", Data: raw(`{"v":"b"}`)},
			store.AddParams{Type: "a", Data: raw(`{"v":"no key 1"}`)},
			store.AddParams{Type: "a", Data: raw(`{"v":"no key 2"}`)},
		)
		seen := map[int64]bool{}
		for i, r := range res {
			if r.Outcome != store.Inserted {
				t.Errorf("job %d: outcome %v, want inserted (the same key in another type, or no key, is a new job)", i, r.Outcome)
			}
			if seen[r.Job.ID] {
				t.Errorf("job %d: id %d was already returned for another job", i, r.Job.ID)
			}
			seen[r.Job.ID] = true
		}
		for i, typ := range []string{"a", "b"} {
			j, err := s.GetByKey(t.Context(), typ, "k")
			if err != nil {
				t.Fatalf("GetByKey(%q, k): %v", typ, err)
			}
			if j.ID != res[i].Job.ID {
				t.Errorf("GetByKey(%q, k) = job %d, want %d", typ, j.ID, res[i].Job.ID)
			}
			wantJSON(t, "data of "+typ+"/k", j.Data, fmt.Sprintf(`{"v":%q}`, typ))
		}
	})

	t.Run("ReaddPendingUpdates", func(t *testing.T) {
		s := open(t)
		first := addOne(t, s, store.AddParams{Type: "t", Key: "k", Group: "g1", Priority: 1,
			RunAt: time.Now().Add(time.Hour), Data: raw(`{"v":1}`)})
		runAt := time.Now().Add(2 * time.Hour)
		r := add(t, s, store.AddParams{Type: "t", Key: "k", Group: "g2", Priority: 5, RunAt: runAt, Data: raw(`{"v":2}`)})[0]
		if r.Outcome != store.Updated {
			t.Errorf("re-add of a pending job: outcome %v, want updated", r.Outcome)
		}
		if r.Job.ID != first.ID {
			t.Errorf("re-add of a pending job: id %d, want the same id %d", r.Job.ID, first.ID)
		}
		j := get(t, s, first.ID)
		unchanged(t, "reading back the re-added job (Add's result vs Get)", r.Job, j)
		wantState(t, j, store.Pending)
		wantAttempt(t, j, 0)
		wantJSON(t, "data after re-add", j.Data, `{"v":2}`)
		sameTime(t, "run_at after re-add", j.RunAt, runAt)
		if j.Priority != 5 || j.Group != "g2" {
			t.Errorf("after re-add priority %d group %q, want 5 and g2", j.Priority, j.Group)
		}
		if n := len(listAll(t, s, store.ListParams{Types: []string{"t"}})); n != 1 {
			t.Errorf("after re-add there are %d jobs of the type, want 1", n)
		}

		// Same run time, new data: the data is still replaced (couch_jobs
		// skipped this write).
		r = add(t, s, store.AddParams{Type: "t", Key: "k", Group: "g2", Priority: 5, RunAt: runAt, Data: raw(`{"v":3}`)})[0]
		if r.Outcome != store.Updated {
			t.Errorf("re-add with the same run_at: outcome %v, want updated", r.Outcome)
		}
		wantJSON(t, "data after re-add with the same run_at", get(t, s, first.ID).Data, `{"v":3}`)
	})

	t.Run("ReaddRunningResubmits", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":1}`)})
		runAt := time.Now().Add(time.Hour)
		r := add(t, s, store.AddParams{Type: "t", Key: "k", RunAt: runAt, Data: raw(`{"v":2}`)})[0]
		if r.Outcome != store.Resubmitted {
			t.Errorf("re-add of a running job: outcome %v, want resubmitted", r.Outcome)
		}
		if r.Job.ID != j.ID {
			t.Errorf("re-add of a running job: id %d, want the same id %d", r.Job.ID, j.ID)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Running)
		if got.Token != j.Token {
			t.Errorf("re-add of a running job changed its token; the worker's attempt must go on undisturbed")
		}
		if !got.Resubmit {
			t.Errorf("re-add of a running job: resubmit flag not set")
		}
		wantJSON(t, "data of the running attempt after re-add", got.Data, `{"v":1}`)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs while the resubmitted job still runs, want 0", n)
		}

		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		got = get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		wantJSON(t, "data after the resubmitted run ended", got.Data, `{"v":2}`)
		sameTime(t, "run_at after the resubmitted run ended", got.RunAt, runAt)
		if got.Resubmit {
			t.Errorf("resubmit flag still set after the run ended")
		}
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs before the requested run_at, want 0", n)
		}
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, DueBy: runAt.Add(time.Minute)})
		if len(res.Jobs) != 1 || res.Jobs[0].ID != j.ID {
			t.Fatalf("Accept due by the requested run_at = %v, want job %d", ids(res.Jobs), j.ID)
		}
		wantAttempt(t, res.Jobs[0], 1)
		if res.Jobs[0].Token == j.Token {
			t.Errorf("the new run got the old token, want a fresh one")
		}
	})

	t.Run("ReaddRunningDefaultsToNow", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Key: "k", RunAt: time.Now().Add(-time.Hour)})
		r := add(t, s, store.AddParams{Type: "t", Key: "k"})[0]
		if r.Outcome != store.Resubmitted {
			t.Errorf("re-add of a running job: outcome %v, want resubmitted", r.Outcome)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 || res.Jobs[0].ID != j.ID {
			t.Errorf("Accept after the resubmitted run ended = %v, want job %d due now", ids(res.Jobs), j.ID)
		}
	})

	for _, state := range []store.State{store.Completed, store.Failed, store.Cancelled} {
		t.Run("ReaddRequeues/"+state.String(), func(t *testing.T) {
			s := open(t)
			j := ended(t, s, store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":1}`)}, state)
			before := time.Now()
			r := add(t, s, store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":2}`)})[0]
			after := time.Now()
			if r.Outcome != store.Requeued {
				t.Errorf("re-add of a %v job: outcome %v, want requeued", state, r.Outcome)
			}
			if r.Job.ID != j.ID {
				t.Errorf("re-add of a %v job: id %d, want the same id %d", state, r.Job.ID, j.ID)
			}
			got := get(t, s, j.ID)
			unchanged(t, "reading back the requeued job (Add's result vs Get)", r.Job, got)
			wantState(t, got, store.Pending)
			wantAttempt(t, got, 0)
			wantJSON(t, "data after requeue", got.Data, `{"v":2}`)
			aboutNow(t, "run_at after requeue", got.RunAt, before, after)
			if got.LastError != "" || len(got.Errors) != 0 || len(got.Result) != 0 {
				t.Errorf("after requeue last_error %q errors %v result %s, want all cleared", got.LastError, got.Errors, got.Result)
			}
			if !got.FinishedAt.IsZero() || got.CancelRequested || got.Resubmit {
				t.Errorf("after requeue finished_at %v cancel_requested %v resubmit %v, want all cleared",
					got.FinishedAt, got.CancelRequested, got.Resubmit)
			}
			res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
			if len(res.Jobs) != 1 || res.Jobs[0].ID != j.ID {
				t.Fatalf("Accept after requeue = %v, want job %d", ids(res.Jobs), j.ID)
			}
			wantAttempt(t, res.Jobs[0], 1)
		})
	}

	t.Run("SameKeyTwiceInBatch", func(t *testing.T) {
		s := open(t)
		res := add(t, s,
			store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":1}`)},
			store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":2}`)},
		)
		if res[0].Outcome != store.Inserted || res[1].Outcome != store.Updated {
			t.Errorf("outcomes %v, %v; want inserted, updated", res[0].Outcome, res[1].Outcome)
		}
		if res[0].Job.ID != res[1].Job.ID {
			t.Errorf("ids %d and %d, want the same job", res[0].Job.ID, res[1].Job.ID)
		}
		wantJSON(t, "data", get(t, s, res[0].Job.ID).Data, `{"v":2}`)
	})
}

// ---- get, list ----

func testGet(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("OrderAndMissing", func(t *testing.T) {
		s := open(t)
		res := add(t, s, store.AddParams{Type: "a"}, store.AddParams{Type: "b"}, store.AddParams{Type: "c"})
		a, b, c := res[0].Job.ID, res[1].Job.ID, res[2].Job.ID
		missing := c + 1000
		jobs, err := s.Get(t.Context(), []int64{c, missing, a, b, a})
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{c, 0, a, b, a}
		if got := ids(jobs); !slices.Equal(got, want) {
			t.Errorf("Get(c, missing, a, b, a) returned ids %v, want %v (same order, 0 for missing)", got, want)
		}
		if jobs[0].Type != "c" || jobs[2].Type != "a" {
			t.Errorf("Get returned types %q and %q at positions 0 and 2, want c and a", jobs[0].Type, jobs[2].Type)
		}
		jobs, err = s.Get(t.Context(), nil)
		if err != nil || len(jobs) != 0 {
			t.Errorf("Get(no ids) = %v, %v; want no jobs and no error", jobs, err)
		}
	})

	t.Run("ByKey", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t", Key: "k"})
		got, err := s.GetByKey(t.Context(), "t", "k")
		if err != nil {
			t.Fatalf("GetByKey(t, k): %v", err)
		}
		unchanged(t, "GetByKey vs Add's result", j, got)
		_, err = s.GetByKey(t.Context(), "t", "other")
		wantErr(t, "GetByKey of a missing key", err, store.ErrNotFound)
		_, err = s.GetByKey(t.Context(), "u", "k")
		wantErr(t, "GetByKey of the key in another type", err, store.ErrNotFound)
	})
}

func testList(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Filters", func(t *testing.T) {
		s := open(t)
		j1 := addOne(t, s, store.AddParams{Type: "a", Group: "g1", RunAt: time.Now().Add(time.Hour)}) // not due
		j2 := start(t, s, store.AddParams{Type: "a", Group: "g2", Priority: 1})                       // running
		j3 := ended(t, s, store.AddParams{Type: "b", Group: "g1", Priority: 1}, store.Completed)
		j4 := addOne(t, s, store.AddParams{Type: "b", Group: "g2"})
		cases := []struct {
			name string
			p    store.ListParams
			want []int64
		}{
			{"all", store.ListParams{}, []int64{j1.ID, j2.ID, j3.ID, j4.ID}},
			{"type a", store.ListParams{Types: []string{"a"}}, []int64{j1.ID, j2.ID}},
			{"type c", store.ListParams{Types: []string{"c"}}, nil},
			{"running", store.ListParams{States: []store.State{store.Running}}, []int64{j2.ID}},
			{"pending or completed", store.ListParams{States: []store.State{store.Pending, store.Completed}}, []int64{j1.ID, j3.ID, j4.ID}},
			{"group g1", store.ListParams{Groups: []string{"g1"}}, []int64{j1.ID, j3.ID}},
			{"type b and group g2", store.ListParams{Types: []string{"b"}, Groups: []string{"g2"}}, []int64{j4.ID}},
			{"all three filters", store.ListParams{Types: []string{"a", "b"}, States: []store.State{store.Pending},
				Groups: []string{"g1", "g2"}}, []int64{j1.ID, j4.ID}},
			{"descending", store.ListParams{Descending: true}, []int64{j4.ID, j3.ID, j2.ID, j1.ID}},
			// Running and other states together, a page at a time, both
			// ways (a store may keep running jobs in an index of their own).
			{"running or pending, pages of 1", store.ListParams{States: []store.State{store.Pending, store.Running}, Limit: 1},
				[]int64{j1.ID, j2.ID, j4.ID}},
			{"running or completed, descending, pages of 1", store.ListParams{States: []store.State{store.Running, store.Completed},
				Descending: true, Limit: 1}, []int64{j3.ID, j2.ID}},
			{"running of type a, in group g2", store.ListParams{Types: []string{"a"}, Groups: []string{"g2"},
				States: []store.State{store.Running, store.Failed}}, []int64{j2.ID}},
		}
		for _, c := range cases {
			jobs := listAll(t, s, c.p)
			if got := ids(jobs); !slices.Equal(got, c.want) {
				t.Errorf("List %s = %v, want %v", c.name, got, c.want)
			}
		}
		for _, j := range listAll(t, s, store.ListParams{}) {
			unchanged(t, fmt.Sprintf("List vs Get of job %d", j.ID), get(t, s, j.ID), j)
		}
	})

	t.Run("Pagination", func(t *testing.T) {
		s := open(t)
		var ps []store.AddParams
		for i := range 23 {
			ps = append(ps, store.AddParams{Type: []string{"even", "odd"}[i%2]})
		}
		all := resultIDs(add(t, s, ps...))
		var odd []int64
		for i, id := range all {
			if i%2 == 1 {
				odd = append(odd, id)
			}
		}
		reversed := slices.Clone(all)
		slices.Reverse(reversed)
		cases := []struct {
			name string
			p    store.ListParams
			want []int64
		}{
			{"ascending, pages of 5", store.ListParams{Limit: 5}, all},
			{"descending, pages of 5", store.ListParams{Limit: 5, Descending: true}, reversed},
			{"pages of 1", store.ListParams{Limit: 1}, all},
			{"odd type, pages of 3", store.ListParams{Limit: 3, Types: []string{"odd"}}, odd},
			{"one page exactly", store.ListParams{Limit: 23}, all},
		}
		for _, c := range cases {
			got := ids(listAll(t, s, c.p))
			if !slices.Equal(got, c.want) {
				t.Errorf("List %s gave ids %v, want %v (each job once, in order)", c.name, got, c.want)
			}
		}

		// The cursor of one page starts the next.
		first, err := s.List(t.Context(), store.ListParams{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if first.Next != all[4] {
			t.Errorf("first page of 5: next cursor %d, want the last id on the page %d", first.Next, all[4])
		}
		second, err := s.List(t.Context(), store.ListParams{Limit: 5, After: first.Next})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(second.Jobs); !slices.Equal(got, all[5:10]) {
			t.Errorf("second page = %v, want %v", got, all[5:10])
		}
	})

	t.Run("DefaultLimit", func(t *testing.T) {
		s := open(t)
		ps := make([]store.AddParams, 105)
		for i := range ps {
			ps[i] = store.AddParams{Type: "t"}
		}
		add(t, s, ps...)
		res, err := s.List(t.Context(), store.ListParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 100 || res.Next == 0 {
			t.Errorf("List with limit 0 returned %d jobs and next %d, want 100 jobs and a next cursor", len(res.Jobs), res.Next)
		}
	})

	t.Run("InvalidLimit", func(t *testing.T) {
		s := open(t)
		for _, limit := range []int{-1, store.MaxListLimit + 1} {
			_, err := s.List(t.Context(), store.ListParams{Limit: limit})
			wantErr(t, fmt.Sprintf("List with limit %d", limit), err, store.ErrInvalid)
		}
		if _, err := s.List(t.Context(), store.ListParams{Limit: store.MaxListLimit}); err != nil {
			t.Errorf("List with limit %d: %v, want success", store.MaxListLimit, err)
		}
	})
}

// ---- accept ----

func testAccept(t *testing.T, open func(t *testing.T) store.Store) {
	// orderJobs returns jobs added so that id order differs from accept
	// order, and the ids in accept order.
	orderJobs := func(t *testing.T, s store.Store) []int64 {
		now := time.Now()
		hourAgo := now.Add(-time.Hour)
		res := add(t, s,
			store.AddParams{Type: "t", Priority: 0, RunAt: hourAgo},                  // 0
			store.AddParams{Type: "t", Priority: 5, RunAt: now.Add(-time.Minute)},    // 1
			store.AddParams{Type: "t", Priority: 5, RunAt: now.Add(-2 * time.Hour)},  // 2
			store.AddParams{Type: "t", Priority: 0, RunAt: hourAgo},                  // 3: ties with 0, higher id
			store.AddParams{Type: "t", Priority: -3, RunAt: now.Add(-3 * time.Hour)}, // 4
			store.AddParams{Type: "t", Priority: 10, RunAt: now.Add(time.Hour)},      // 5: not due
		)
		id := resultIDs(res)
		return []int64{id[2], id[1], id[0], id[3], id[4]}
	}

	t.Run("OrderOneByOne", func(t *testing.T) {
		s := open(t)
		want := orderJobs(t, s)
		var got []int64
		for range len(want) + 1 {
			res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
			if len(res.Jobs) > 1 {
				t.Fatalf("Accept with limit 0 returned %d jobs, want at most 1", len(res.Jobs))
			}
			got = append(got, ids(res.Jobs)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("accepted ids %v, want %v (priority desc, then run_at, then id; the job not due never)", got, want)
		}
	})

	t.Run("OrderInBatch", func(t *testing.T) {
		s := open(t)
		want := orderJobs(t, s)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 100})
		if got := ids(res.Jobs); !slices.Equal(got, want) {
			t.Errorf("accepted ids %v, want %v (in accept order)", got, want)
		}
	})

	t.Run("NotDue", func(t *testing.T) {
		s := open(t)
		runAt := time.Now().Add(time.Hour)
		j := addOne(t, s, store.AddParams{Type: "t", RunAt: runAt})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10})
		if len(res.Jobs) != 0 {
			t.Errorf("Accept took %v, a job due in an hour; want none", ids(res.Jobs))
		}
		sameTime(t, "NextRunAt", res.NextRunAt, runAt)
		unchanged(t, "Accept with nothing due", j, get(t, s, j.ID))
	})

	t.Run("DueBy", func(t *testing.T) {
		s := open(t)
		now := time.Now()
		soon := addOne(t, s, store.AddParams{Type: "t", RunAt: now.Add(time.Hour)})
		later := addOne(t, s, store.AddParams{Type: "t", RunAt: now.Add(3 * time.Hour)})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10, DueBy: now.Add(2 * time.Hour)})
		if got := ids(res.Jobs); !slices.Equal(got, []int64{soon.ID}) {
			t.Errorf("Accept due by +2h = %v, want just the job due at +1h (%d)", got, soon.ID)
		}
		sameTime(t, "NextRunAt", res.NextRunAt, later.RunAt)
	})

	t.Run("NextRunAt", func(t *testing.T) {
		s := open(t)
		now := time.Now()
		add(t, s,
			store.AddParams{Type: "t", RunAt: now.Add(time.Hour)},
			store.AddParams{Type: "t", RunAt: now.Add(30 * time.Minute)},
			store.AddParams{Type: "u", RunAt: now.Add(10 * time.Minute)},
			store.AddParams{Type: "t"},
		)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10})
		if len(res.Jobs) != 1 {
			t.Errorf("Accept took %d jobs, want the 1 due job", len(res.Jobs))
		}
		sameTime(t, "NextRunAt (earliest not-due run_at of the requested types only)", res.NextRunAt, now.Add(30*time.Minute))
		res = accept(t, s, store.AcceptParams{Types: []string{"none"}})
		if !res.NextRunAt.IsZero() {
			t.Errorf("NextRunAt with no pending jobs = %v, want zero", res.NextRunAt)
		}
	})

	t.Run("Patterns", func(t *testing.T) {
		s := open(t)
		byType := map[string]int64{}
		for _, typ := range []string{"email.send", "email.receive", "sms.send", "a.x", "b.x", "c.x", "email"} {
			byType[typ] = addOne(t, s, store.AddParams{Type: typ}).ID
		}
		steps := []struct {
			patterns []string
			want     []string
		}{
			{[]string{"email.*"}, []string{"email.send", "email.receive"}},
			{[]string{"[ab].x"}, []string{"a.x", "b.x"}},
			{[]string{"*.send"}, []string{"sms.send"}},
			{[]string{"?.x", "{email,sms}"}, []string{"c.x", "email"}},
		}
		for _, st := range steps {
			res := accept(t, s, store.AcceptParams{Types: st.patterns, Limit: 100})
			var want []int64
			for _, typ := range st.want {
				want = append(want, byType[typ])
			}
			got := ids(res.Jobs)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				var types []string
				for _, j := range res.Jobs {
					types = append(types, j.Type)
				}
				t.Errorf("Accept(%q) took types %q, want %q", st.patterns, types, st.want)
			}
		}
	})

	t.Run("PatternMatchesTypeAddedLater", func(t *testing.T) {
		s := open(t)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"late.*"}}).Jobs); n != 0 {
			t.Fatalf("Accept on an empty store took %d jobs", n)
		}
		j := addOne(t, s, store.AddParams{Type: "late.one"})
		res := accept(t, s, store.AcceptParams{Types: []string{"late.*"}})
		if got := ids(res.Jobs); !slices.Equal(got, []int64{j.ID}) {
			t.Errorf("Accept(late.*) = %v, want the job of the new type late.one (%d)", got, j.ID)
		}
	})

	t.Run("MultipleTypes", func(t *testing.T) {
		s := open(t)
		now := time.Now()
		res := add(t, s,
			store.AddParams{Type: "a", Priority: 1, RunAt: now.Add(-time.Hour)},     // a1
			store.AddParams{Type: "b", Priority: 3, RunAt: now.Add(-time.Hour)},     // b1
			store.AddParams{Type: "a", Priority: 3, RunAt: now.Add(-2 * time.Hour)}, // a2
			store.AddParams{Type: "b", Priority: 0, RunAt: now.Add(-3 * time.Hour)}, // b2
			store.AddParams{Type: "c", Priority: 9},                                 // not requested
		)
		id := resultIDs(res)
		got := ids(accept(t, s, store.AcceptParams{Types: []string{"a", "b"}, Limit: 3}).Jobs)
		if want := []int64{id[2], id[1], id[0]}; !slices.Equal(got, want) {
			t.Errorf("Accept(a, b, limit 3) = %v, want %v (one order across the types)", got, want)
		}
		// Overlapping patterns must not hand out a job twice.
		got = ids(accept(t, s, store.AcceptParams{Types: []string{"[ab]", "b", "*"}, Limit: 10}).Jobs)
		if want := []int64{id[4], id[3]}; !slices.Equal(got, want) {
			t.Errorf("Accept([ab], b, *) = %v, want %v, each job once", got, want)
		}
	})

	t.Run("Limit", func(t *testing.T) {
		s := open(t)
		ps := make([]store.AddParams, 5)
		for i := range ps {
			ps[i] = store.AddParams{Type: "t"}
		}
		add(t, s, ps...)
		for _, c := range []struct{ limit, want int }{{3, 3}, {0, 1}, {10, 1}, {10, 0}} {
			if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: c.limit}).Jobs); n != c.want {
				t.Errorf("Accept with limit %d took %d jobs, want %d", c.limit, n, c.want)
			}
		}
	})

	t.Run("AcceptedJob", func(t *testing.T) {
		s := open(t)
		add(t, s, store.AddParams{Type: "t", Data: raw(`{"x":1}`)}, store.AddParams{Type: "t"})
		before := time.Now()
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 2, Worker: "worker-7"})
		after := time.Now()
		if len(res.Jobs) != 2 {
			t.Fatalf("Accept took %d jobs, want 2", len(res.Jobs))
		}
		for _, j := range res.Jobs {
			wantState(t, j, store.Running)
			wantAttempt(t, j, 1)
			if j.Token == "" {
				t.Errorf("accepted job %d has no token", j.ID)
			}
			if j.Worker != "worker-7" {
				t.Errorf("accepted job %d: worker %q, want worker-7", j.ID, j.Worker)
			}
			if !j.LeaseUntil.After(after) {
				t.Errorf("accepted job %d: lease_until %v, want in the future", j.ID, j.LeaseUntil)
			}
			within(t, "lease_until with the default lease timeout", j.LeaseUntil,
				before.Add(store.DefaultLeaseTimeout-slack), after.Add(store.DefaultLeaseTimeout+slack))
			aboutNow(t, "started_at", j.StartedAt, before, after)
			unchanged(t, "reading back the accepted job (Accept's result vs Get)", j, get(t, s, j.ID))
		}
		wantJSON(t, "data of the accepted job", res.Jobs[0].Data, `{"x":1}`)
		if res.Jobs[0].Token == res.Jobs[1].Token {
			t.Errorf("two accepted jobs share the token %q, want each its own", res.Jobs[0].Token)
		}
	})

	t.Run("RunningNotAcceptedAgain", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		res := accept(t, s, store.AcceptParams{Types: []string{"t", "*"}, Limit: 10})
		if len(res.Jobs) != 0 {
			t.Errorf("Accept took %v again while job %d runs, want nothing", ids(res.Jobs), j.ID)
		}
		if !res.NextRunAt.IsZero() {
			t.Errorf("NextRunAt = %v with no pending jobs, want zero", res.NextRunAt)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		cases := []struct {
			name string
			p    store.AcceptParams
		}{
			{"no types", store.AcceptParams{}},
			{"empty type", store.AcceptParams{Types: []string{""}}},
			{"bad pattern [", store.AcceptParams{Types: []string{"t", "["}}},
			{"negative limit", store.AcceptParams{Types: []string{"t"}, Limit: -1}},
			{"limit above max", store.AcceptParams{Types: []string{"t"}, Limit: store.MaxAcceptLimit + 1}},
			{"negative lease timeout", store.AcceptParams{Types: []string{"t"}, LeaseTimeout: -time.Second}},
		}
		for _, c := range cases {
			_, err := s.Accept(t.Context(), c.p)
			wantErr(t, "Accept with "+c.name, err, store.ErrInvalid)
		}
		unchanged(t, "rejected accepts", j, get(t, s, j.ID))
	})
}

// ---- concurrency ----

func testConcurrency(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("AcceptExactlyOnce", func(t *testing.T) {
		s := open(t)
		const jobs, workers = 500, 16
		ps := make([]store.AddParams, jobs)
		for i := range ps {
			ps[i] = store.AddParams{Type: "conc", Data: raw(fmt.Sprintf(`{"i":%d}`, i))}
		}
		added := resultIDs(add(t, s, ps...))
		var mu sync.Mutex
		count := map[int64]int{}
		tokens := map[string]bool{}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for iter := 0; ; iter++ {
					limit := 1 + (w+iter)%10
					res, err := s.Accept(t.Context(), store.AcceptParams{Types: []string{"conc"}, Limit: limit,
						Worker: fmt.Sprintf("w%d", w)})
					if err != nil {
						t.Errorf("worker %d: Accept: %v", w, err)
						return
					}
					if len(res.Jobs) > limit {
						t.Errorf("worker %d: Accept with limit %d took %d jobs", w, limit, len(res.Jobs))
					}
					if len(res.Jobs) == 0 {
						return
					}
					mu.Lock()
					for _, j := range res.Jobs {
						count[j.ID]++
						if tokens[j.Token] {
							t.Errorf("token %q handed out twice", j.Token)
						}
						tokens[j.Token] = true
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for _, id := range added {
			if count[id] != 1 {
				t.Errorf("job %d was accepted %d times, want exactly once", id, count[id])
			}
		}
		if len(count) != jobs {
			t.Errorf("%d distinct jobs accepted, want %d", len(count), jobs)
		}
		running := listAll(t, s, store.ListParams{States: []store.State{store.Running}, Limit: store.MaxListLimit})
		if len(running) != jobs {
			t.Errorf("%d jobs are running after accepting all, want %d", len(running), jobs)
		}
	})

	t.Run("AddAcceptFinish", func(t *testing.T) {
		s := open(t)
		const producers, batches, batchSize, workers = 4, 25, 4, 8
		const total = producers * batches * batchSize
		var completed atomic.Int64
		var stop atomic.Bool
		deadline := time.Now().Add(60 * time.Second)
		var mu sync.Mutex
		accepted := map[int64]int{}
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				for b := range batches {
					ps := make([]store.AddParams, batchSize)
					for i := range ps {
						ps[i] = store.AddParams{Type: fmt.Sprintf("mix.%d", p%2),
							Data: raw(fmt.Sprintf(`{"p":%d,"n":%d}`, p, b*batchSize+i))}
					}
					res, err := s.Add(t.Context(), ps)
					if err != nil || len(res) != batchSize {
						t.Errorf("producer %d: Add = %d results, %v", p, len(res), err)
						stop.Store(true)
						return
					}
				}
			})
		}
		for w := range workers {
			wg.Go(func() {
				progress := 50.0
				for !stop.Load() && completed.Load() < total {
					if time.Now().After(deadline) {
						t.Errorf("worker %d: only %d of %d jobs completed after 60s", w, completed.Load(), total)
						stop.Store(true)
						return
					}
					res, err := s.Accept(t.Context(), store.AcceptParams{Types: []string{"mix.*"}, Limit: 1 + w%4,
						Worker: fmt.Sprintf("w%d", w)})
					if err != nil {
						t.Errorf("worker %d: Accept: %v", w, err)
						stop.Store(true)
						return
					}
					if len(res.Jobs) == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					hbs := make([]store.HeartbeatParams, len(res.Jobs))
					fps := make([]store.FinishParams, len(res.Jobs))
					mu.Lock()
					for i, j := range res.Jobs {
						accepted[j.ID]++
						hbs[i] = store.HeartbeatParams{Lease: lease(j), Progress: &progress}
						fps[i] = store.FinishParams{Lease: lease(j), As: store.Complete, Result: j.Data}
					}
					mu.Unlock()
					hres, err := s.Heartbeat(t.Context(), hbs)
					if err != nil {
						t.Errorf("worker %d: Heartbeat: %v", w, err)
						stop.Store(true)
						return
					}
					for i, r := range hres {
						if r.Err != nil {
							t.Errorf("worker %d: Heartbeat of job %d: %v", w, hbs[i].ID, r.Err)
						}
					}
					errs, err := s.Finish(t.Context(), fps)
					if err != nil {
						t.Errorf("worker %d: Finish: %v", w, err)
						stop.Store(true)
						return
					}
					for i, e := range errs {
						if e != nil {
							t.Errorf("worker %d: Finish of job %d: %v", w, fps[i].ID, e)
						}
					}
					completed.Add(int64(len(fps)))
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		all := listAll(t, s, store.ListParams{Limit: store.MaxListLimit})
		if len(all) != total {
			t.Errorf("the store holds %d jobs, want %d", len(all), total)
		}
		for _, j := range all {
			if j.State != store.Completed || j.Attempt != 1 || j.Progress != 50 || !jsonEqual(j.Result, j.Data) {
				t.Errorf("job %d: state %v attempt %d progress %v result %s data %s; want completed on attempt 1 with progress 50 and result = data",
					j.ID, j.State, j.Attempt, j.Progress, j.Result, j.Data)
			}
			if accepted[j.ID] != 1 {
				t.Errorf("job %d was accepted %d times, want once", j.ID, accepted[j.ID])
			}
		}
	})
}

// ---- heartbeat ----

func testHeartbeat(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("ExtendsAndUpdates", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Data: raw(`{"step":1}`)})
		p := 42.5
		before := time.Now()
		hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j), Data: raw(`{"step":2}`), Progress: &p})
		after := time.Now()
		if hb.Err != nil {
			t.Fatalf("Heartbeat: %v, want success", hb.Err)
		}
		if hb.Resubmit {
			t.Errorf("Heartbeat reports a resubmit nobody asked for")
		}
		if hb.LeaseUntil.Before(j.LeaseUntil) {
			t.Errorf("Heartbeat moved lease_until back from %v to %v", j.LeaseUntil, hb.LeaseUntil)
		}
		within(t, "lease_until after a heartbeat", hb.LeaseUntil,
			before.Add(store.DefaultLeaseTimeout-slack), after.Add(store.DefaultLeaseTimeout+slack))
		got := get(t, s, j.ID)
		sameTime(t, "stored lease_until", got.LeaseUntil, hb.LeaseUntil)
		wantJSON(t, "data after heartbeat", got.Data, `{"step":2}`)
		if got.Progress != 42.5 {
			t.Errorf("progress %v, want 42.5", got.Progress)
		}
		wantState(t, got, store.Running)
		wantAttempt(t, got, 1)
		if got.Token != j.Token {
			t.Errorf("heartbeat changed the token")
		}

		hb = heartbeat(t, s, store.HeartbeatParams{Lease: lease(j)})
		if hb.Err != nil {
			t.Fatalf("Heartbeat without data: %v", hb.Err)
		}
		got = get(t, s, j.ID)
		wantJSON(t, "data after a heartbeat without data", got.Data, `{"step":2}`)
		if got.Progress != 42.5 {
			t.Errorf("progress after a heartbeat without progress = %v, want it kept at 42.5", got.Progress)
		}
	})

	t.Run("ReportsResubmit", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Key: "k"})
		if r := add(t, s, store.AddParams{Type: "t", Key: "k"})[0]; r.Outcome != store.Resubmitted {
			t.Fatalf("re-add of a running job: outcome %v, want resubmitted", r.Outcome)
		}
		hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j)})
		if hb.Err != nil || !hb.Resubmit {
			t.Errorf("Heartbeat after a re-add = resubmit %v err %v, want resubmit true and no error", hb.Resubmit, hb.Err)
		}
	})

	t.Run("StaleToken", func(t *testing.T) {
		s := open(t)
		a := start(t, s, store.AddParams{Type: "a"})
		b := start(t, s, store.AddParams{Type: "b"})
		beforeB := get(t, s, b.ID)
		p := 99.0
		res, err := s.Heartbeat(t.Context(), []store.HeartbeatParams{
			{Lease: lease(a), Data: raw(`{"ok":true}`)},
			{Lease: store.Lease{ID: b.ID, Token: "not-the-token"}, Data: raw(`{"stale":true}`), Progress: &p},
		})
		if err != nil {
			t.Fatalf("Heartbeat: the call failed: %v", err)
		}
		if len(res) != 2 {
			t.Fatalf("Heartbeat(2 items) returned %d results", len(res))
		}
		if res[0].Err != nil {
			t.Errorf("Heartbeat of the current lease: %v, want success", res[0].Err)
		}
		wantErr(t, "Heartbeat with a stale token", res[1].Err, store.ErrWorkerConflict)
		wantJSON(t, "data of the job with the current lease", get(t, s, a.ID).Data, `{"ok":true}`)
		unchanged(t, "Heartbeat with a stale token", beforeB, get(t, s, b.ID))
		fenced(t, s, store.Lease{ID: a.ID, Token: b.Token}, store.ErrWorkerConflict)
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		before := get(t, s, j.ID)
		for _, c := range []struct {
			name string
			p    store.HeartbeatParams
		}{
			{"progress 101", store.HeartbeatParams{Lease: lease(j), Progress: ptr(101.0)}},
			{"progress -1", store.HeartbeatParams{Lease: lease(j), Progress: ptr(-1.0)}},
			{"data not an object", store.HeartbeatParams{Lease: lease(j), Data: raw(`[1]`)}},
			{"no token", store.HeartbeatParams{Lease: store.Lease{ID: j.ID}}},
		} {
			_, err := s.Heartbeat(t.Context(), []store.HeartbeatParams{{Lease: lease(j), Progress: ptr(10.0)}, c.p})
			wantErr(t, "Heartbeat with "+c.name, err, store.ErrInvalid)
		}
		unchanged(t, "rejected heartbeats", before, get(t, s, j.ID))
	})
}

func ptr[T any](v T) *T { return &v }

// ---- finish ----

func testFinish(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Complete", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		before := time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(`{"ok": true}`)})
		after := time.Now()
		got := get(t, s, j.ID)
		wantState(t, got, store.Completed)
		wantJSON(t, "result", got.Result, `{"ok":true}`)
		aboutNow(t, "finished_at", got.FinishedAt, before, after)
		wantAttempt(t, got, 1)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs after the only job completed", n)
		}

		// A result can be any JSON value, or none.
		for _, result := range []string{`[1,2]`, `"done"`, `42`, ``} {
			j := start(t, s, store.AddParams{Type: "t"})
			mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(result)})
			wantJSON(t, "result", get(t, s, j.ID).Result, result)
		}
	})

	t.Run("CompleteTwice", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(`{"n":1}`)})
		done := get(t, s, j.ID)
		if err := finish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(`{"n":2}`)}); err != nil {
			t.Errorf("the same Complete again with the same token: %v, want success (finish is idempotent)", err)
		}
		unchanged(t, "a repeated Complete", done, get(t, s, j.ID))
		err := finish(t, s, store.FinishParams{Lease: store.Lease{ID: j.ID, Token: "other"}, As: store.Complete})
		wantErr(t, "Complete of a completed job with another token", err, store.ErrWorkerConflict)
		err = finish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "late"})
		wantErr(t, "Fail of a completed job with its token", err, store.ErrWorkerConflict)
		unchanged(t, "finishes after completion", done, get(t, s, j.ID))
	})

	t.Run("FailRetryable", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 3, BackoffBase: time.Hour, BackoffMax: 2 * time.Hour})
		before := time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "boom 1"})
		after := time.Now()
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 1)
		// Back-off for attempt 1 is the base, 1h, ±10%.
		within(t, "run_at after the first failure", got.RunAt, before.Add(54*time.Minute-slack), after.Add(66*time.Minute+slack))
		if got.LastError != "boom 1" {
			t.Errorf("last_error %q, want %q", got.LastError, "boom 1")
		}
		if len(got.Errors) != 1 || got.Errors[0].Attempt != 1 || got.Errors[0].Error != "boom 1" {
			t.Errorf("errors %+v, want one entry for attempt 1 with %q", got.Errors, "boom 1")
		} else {
			aboutNow(t, "errors[0].at", got.Errors[0].At, before, after)
		}
		if !got.FinishedAt.IsZero() {
			t.Errorf("a job waiting for a retry has finished_at %v, want none", got.FinishedAt)
		}
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs during the back-off, want 0", n)
		}

		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, DueBy: time.Now().Add(2 * time.Hour)})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after the back-off took %d jobs, want 1", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 2)
		before = time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Fail, Error: "boom 2"})
		after = time.Now()
		got = get(t, s, j.ID)
		wantState(t, got, store.Pending)
		// Attempt 2: base·2 = 2h, which is also the cap, ±10%.
		within(t, "run_at after the second failure", got.RunAt, before.Add(108*time.Minute-slack), after.Add(132*time.Minute+slack))
		if len(got.Errors) != 2 || got.Errors[1].Attempt != 2 || got.LastError != "boom 2" {
			t.Errorf("errors %+v last_error %q, want two entries, the last for attempt 2 with %q", got.Errors, got.LastError, "boom 2")
		}

		res = accept(t, s, store.AcceptParams{Types: []string{"t"}, DueBy: time.Now().Add(3 * time.Hour)})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after the second back-off took %d jobs, want 1", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 3)
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Fail, Error: "boom 3"})
		got = get(t, s, j.ID)
		wantState(t, got, store.Failed)
		if len(got.Errors) != 3 || got.LastError != "boom 3" || got.FinishedAt.IsZero() {
			t.Errorf("after the last attempt failed: errors %+v last_error %q finished_at %v; want 3 errors, boom 3, a finish time",
				got.Errors, got.LastError, got.FinishedAt)
		}
	})

	t.Run("FailOnLastAttempt", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 1})
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "boom"})
		got := get(t, s, j.ID)
		wantState(t, got, store.Failed)
		if got.LastError != "boom" || len(got.Errors) != 1 || got.FinishedAt.IsZero() {
			t.Errorf("last_error %q errors %+v finished_at %v; want boom, one error, a finish time", got.LastError, got.Errors, got.FinishedAt)
		}
	})

	t.Run("FailPermanent", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 5})
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "bad input", Permanent: true})
		got := get(t, s, j.ID)
		wantState(t, got, store.Failed)
		wantAttempt(t, got, 1)
		if got.LastError != "bad input" || len(got.Errors) != 1 || got.FinishedAt.IsZero() {
			t.Errorf("last_error %q errors %+v finished_at %v; want bad input, one error, a finish time", got.LastError, got.Errors, got.FinishedAt)
		}
	})

	t.Run("Snooze", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		runAt := time.Now().Add(time.Hour)
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Snooze, RunAt: runAt})
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		sameTime(t, "run_at after snooze", got.RunAt, runAt)
		if got.LastError != "" || len(got.Errors) != 0 {
			t.Errorf("snooze recorded an error (%q, %v), want none", got.LastError, got.Errors)
		}
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs before the snooze ended, want 0", n)
		}
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, DueBy: runAt.Add(time.Minute)})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after the snooze took %d jobs, want 1", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 1)
	})

	t.Run("Release", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Release})
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after release took %d jobs, want the released job, due now", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 1)

		// A job accepted ahead of its run time is due at once after release.
		later := addOne(t, s, store.AddParams{Type: "u", RunAt: time.Now().Add(time.Hour)})
		res = accept(t, s, store.AcceptParams{Types: []string{"u"}, DueBy: time.Now().Add(2 * time.Hour)})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept due by +2h took %d jobs, want 1", len(res.Jobs))
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Release})
		res = accept(t, s, store.AcceptParams{Types: []string{"u"}})
		if got := ids(res.Jobs); !slices.Equal(got, []int64{later.ID}) {
			t.Errorf("Accept after releasing a job accepted early = %v, want job %d (a released job is due now)", got, later.ID)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		before := time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Cancel, Error: "not wanted"})
		after := time.Now()
		got := get(t, s, j.ID)
		wantState(t, got, store.Cancelled)
		aboutNow(t, "finished_at", got.FinishedAt, before, after)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs after the worker cancelled the only one", n)
		}
		fenced(t, s, lease(j), store.ErrCanceled)
	})

	t.Run("AfterResubmit", func(t *testing.T) {
		// Every ending except cancel starts the run that was asked for.
		for _, fp := range []store.FinishParams{
			{As: store.Complete, Result: raw(`{"r":1}`)},
			{As: store.Fail, Error: "retry"},
			{As: store.Fail, Error: "fatal", Permanent: true},
			{As: store.Snooze, RunAt: time.Now().Add(3 * time.Hour)},
			{As: store.Release},
		} {
			t.Run(fmt.Sprintf("%v/permanent=%v", fp.As, fp.Permanent), func(t *testing.T) {
				s := open(t)
				j := start(t, s, store.AddParams{Type: "t", Key: "k", MaxAttempts: 1, Data: raw(`{"v":1}`)})
				runAt := time.Now().Add(time.Hour)
				if r := add(t, s, store.AddParams{Type: "t", Key: "k", RunAt: runAt, Data: raw(`{"v":2}`)})[0]; r.Outcome != store.Resubmitted {
					t.Fatalf("re-add: outcome %v, want resubmitted", r.Outcome)
				}
				fp.Lease = lease(j)
				mustFinish(t, s, fp)
				got := get(t, s, j.ID)
				wantState(t, got, store.Pending)
				wantAttempt(t, got, 0)
				wantJSON(t, "data", got.Data, `{"v":2}`)
				sameTime(t, "run_at", got.RunAt, runAt)
				if got.Resubmit {
					t.Errorf("resubmit flag still set")
				}
			})
		}
		t.Run("cancel", func(t *testing.T) {
			s := open(t)
			j := start(t, s, store.AddParams{Type: "t", Key: "k"})
			add(t, s, store.AddParams{Type: "t", Key: "k"})
			mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Cancel, Error: "stop"})
			got := get(t, s, j.ID)
			wantState(t, got, store.Cancelled)
			if got.Resubmit {
				t.Errorf("a cancelled job still has the resubmit flag")
			}
		})
	})

	t.Run("PerItemErrors", func(t *testing.T) {
		s := open(t)
		a := start(t, s, store.AddParams{Type: "a"})
		b := start(t, s, store.AddParams{Type: "b"})
		beforeB := get(t, s, b.ID)
		errs, err := s.Finish(t.Context(), []store.FinishParams{
			{Lease: lease(a), As: store.Complete},
			{Lease: store.Lease{ID: b.ID, Token: a.Token}, As: store.Complete},
			{Lease: store.Lease{ID: b.ID + 1000, Token: "x"}, As: store.Complete},
		})
		if err != nil {
			t.Fatalf("Finish: the call failed: %v", err)
		}
		if len(errs) != 3 {
			t.Fatalf("Finish(3 items) returned %d errors", len(errs))
		}
		if errs[0] != nil {
			t.Errorf("Finish of the current lease: %v, want success", errs[0])
		}
		wantErr(t, "Finish with another job's token", errs[1], store.ErrWorkerConflict)
		wantErr(t, "Finish of a job that does not exist", errs[2], store.ErrCanceled)
		wantState(t, get(t, s, a.ID), store.Completed)
		unchanged(t, "Finish with another job's token", beforeB, get(t, s, b.ID))
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		before := get(t, s, j.ID)
		for _, c := range []struct {
			name string
			p    store.FinishParams
		}{
			{"no token", store.FinishParams{Lease: store.Lease{ID: j.ID}, As: store.Complete}},
			{"no id", store.FinishParams{Lease: store.Lease{Token: j.Token}, As: store.Complete}},
			{"no ending", store.FinishParams{Lease: lease(j)}},
			{"unknown ending", store.FinishParams{Lease: lease(j), As: 99}},
			{"invalid result JSON", store.FinishParams{Lease: lease(j), As: store.Complete, Result: raw(`{"a":`)}},
			{"snooze to year 10000", store.FinishParams{Lease: lease(j), As: store.Snooze, RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		} {
			// A valid item first: the bad one must stop the whole batch.
			_, err := s.Finish(t.Context(), []store.FinishParams{{Lease: lease(j), As: store.Complete}, c.p})
			wantErr(t, "Finish with "+c.name, err, store.ErrInvalid)
		}
		unchanged(t, "rejected finishes", before, get(t, s, j.ID))
	})
}

// ---- fencing ----

func testFencing(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("LeaseLost", func(t *testing.T) {
		s := open(t)
		first := start(t, s, store.AddParams{Type: "t"})
		if n, _ := expire(t, s, time.Now().Add(time.Hour)); n != 1 {
			t.Fatalf("ExpireLeases took back %d jobs, want 1", n)
		}
		// While the job waits to run again, the old lease is dead.
		fenced(t, s, lease(first), store.ErrWorkerConflict)

		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Worker: "worker-2"})
		if len(res.Jobs) != 1 || res.Jobs[0].ID != first.ID {
			t.Fatalf("second Accept = %v, want job %d again", ids(res.Jobs), first.ID)
		}
		second := res.Jobs[0]
		if second.Token == first.Token {
			t.Fatalf("the second worker got the first worker's token")
		}
		wantAttempt(t, second, 2)
		fenced(t, s, lease(first), store.ErrWorkerConflict)

		if hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(second)}); hb.Err != nil {
			t.Errorf("Heartbeat of the second worker: %v, want success", hb.Err)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(second), As: store.Complete})
		wantState(t, get(t, s, first.ID), store.Completed)
	})

	t.Run("CancelledByProducer", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		mustCancel(t, s, j.ID)
		fenced(t, s, lease(j), store.ErrCanceled)
	})

	t.Run("Removed", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		errs, err := s.Remove(t.Context(), []int64{j.ID})
		if err != nil || errs[0] != nil {
			t.Fatalf("Remove = %v, %v", errs, err)
		}
		fenced(t, s, lease(j), store.ErrCanceled)
		gone(t, s, j.ID)
	})

	t.Run("PendingJob", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		fenced(t, s, store.Lease{ID: j.ID, Token: "any-token"}, store.ErrWorkerConflict)

		// A released job is pending; its last token no longer works.
		r := start(t, s, store.AddParams{Type: "u"})
		mustFinish(t, s, store.FinishParams{Lease: lease(r), As: store.Release})
		fenced(t, s, lease(r), store.ErrWorkerConflict)
	})

	t.Run("EndedJob", func(t *testing.T) {
		s := open(t)
		j := ended(t, s, store.AddParams{Type: "t"}, store.Failed)
		fenced(t, s, store.Lease{ID: j.ID, Token: j.Token}, store.ErrWorkerConflict)
	})
}

// ---- cancel ----

func testCancel(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Pending", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		before := time.Now()
		mustCancel(t, s, j.ID)
		after := time.Now()
		got := get(t, s, j.ID)
		wantState(t, got, store.Cancelled)
		aboutNow(t, "finished_at", got.FinishedAt, before, after)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs after the only one was cancelled", n)
		}
	})

	t.Run("Running", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		mustCancel(t, s, j.ID)
		got := get(t, s, j.ID)
		wantState(t, got, store.Cancelled)
		if !got.CancelRequested {
			t.Errorf("cancel of a running job: cancel_requested not set")
		}
		hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j)})
		wantErr(t, "the worker's heartbeat after cancel", hb.Err, store.ErrCanceled)
		wantErr(t, "the worker's finish after cancel", finish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete}), store.ErrCanceled)
		unchanged(t, "the worker's calls after cancel", got, get(t, s, j.ID))
	})

	t.Run("AlreadyCancelled", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		mustCancel(t, s, j.ID)
		before := get(t, s, j.ID)
		mustCancel(t, s, j.ID)
		unchanged(t, "a second cancel", before, get(t, s, j.ID))
	})

	for _, state := range []store.State{store.Completed, store.Failed} {
		t.Run(state.String(), func(t *testing.T) {
			s := open(t)
			j := ended(t, s, store.AddParams{Type: "t"}, state)
			errs, err := s.Cancel(t.Context(), []int64{j.ID})
			if err != nil {
				t.Fatalf("Cancel: the call failed: %v", err)
			}
			wantErr(t, "Cancel of a "+state.String()+" job", errs[0], store.ErrFinished)
			unchanged(t, "a refused cancel", j, get(t, s, j.ID))
		})
	}

	t.Run("Missing", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		errs, err := s.Cancel(t.Context(), []int64{j.ID + 1000, j.ID})
		if err != nil {
			t.Fatalf("Cancel: the call failed: %v", err)
		}
		if len(errs) != 2 {
			t.Fatalf("Cancel(2 ids) returned %d errors", len(errs))
		}
		wantErr(t, "Cancel of a missing job", errs[0], store.ErrNotFound)
		if errs[1] != nil {
			t.Errorf("Cancel of an existing job in the same batch: %v, want success", errs[1])
		}
		wantState(t, get(t, s, j.ID), store.Cancelled)
	})
}

// ---- resubmit ----

func testResubmit(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Pending", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t", RunAt: time.Now().Add(time.Hour), Priority: 3, Data: raw(`{"v":1}`)})
		runAt := time.Now().Add(2 * time.Hour)
		r := resubmit(t, s, store.ResubmitParams{ID: j.ID, RunAt: runAt})
		if r.Outcome != store.Updated || r.Job.ID != j.ID {
			t.Errorf("Resubmit of a pending job: outcome %v id %d, want updated, id %d", r.Outcome, r.Job.ID, j.ID)
		}
		got := get(t, s, j.ID)
		sameTime(t, "run_at after resubmit", got.RunAt, runAt)
		wantJSON(t, "data after resubmit without data", got.Data, `{"v":1}`)
		if got.Priority != 3 {
			t.Errorf("resubmit changed the priority to %d, want it kept at 3", got.Priority)
		}

		// No run time keeps a pending job's run time.
		resubmit(t, s, store.ResubmitParams{ID: j.ID})
		sameTime(t, "run_at after resubmit without run_at", get(t, s, j.ID).RunAt, runAt)

		// Data replaces the data.
		resubmit(t, s, store.ResubmitParams{ID: j.ID, RunAt: time.Now().Add(-time.Minute), Data: raw(`{"v":2}`)})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after resubmitting to a past time took %d jobs, want 1", len(res.Jobs))
		}
		wantJSON(t, "data after resubmit with data", res.Jobs[0].Data, `{"v":2}`)
	})

	t.Run("Running", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Data: raw(`{"v":1}`)})
		r := resubmit(t, s, store.ResubmitParams{ID: j.ID, Data: raw(`{"v":2}`)})
		if r.Outcome != store.Resubmitted {
			t.Errorf("Resubmit of a running job: outcome %v, want resubmitted", r.Outcome)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Running)
		if !got.Resubmit || got.Token != j.Token {
			t.Errorf("after resubmit: resubmit %v, token changed %v; want the flag set and the token kept", got.Resubmit, got.Token != j.Token)
		}
		if hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j)}); hb.Err != nil || !hb.Resubmit {
			t.Errorf("Heartbeat after resubmit = resubmit %v err %v, want true and no error", hb.Resubmit, hb.Err)
		}
		before := time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		after := time.Now()
		got = get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		wantJSON(t, "data", got.Data, `{"v":2}`)
		aboutNow(t, "run_at after a resubmit without run_at", got.RunAt, before, after)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 || res.Jobs[0].Resubmit {
			t.Errorf("Accept after the resubmitted run = %v (resubmit flag %v), want the job, without the flag",
				ids(res.Jobs), len(res.Jobs) == 1 && res.Jobs[0].Resubmit)
		}
	})

	t.Run("RunningKeepsWorkerData", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Data: raw(`{"v":1}`)})
		runAt := time.Now().Add(time.Hour)
		resubmit(t, s, store.ResubmitParams{ID: j.ID, RunAt: runAt})
		if hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j), Data: raw(`{"v":"worker"}`)}); hb.Err != nil {
			t.Fatalf("Heartbeat: %v", hb.Err)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantJSON(t, "data after a resubmit without data", got.Data, `{"v":"worker"}`)
		sameTime(t, "run_at", got.RunAt, runAt)
	})

	for _, state := range []store.State{store.Completed, store.Failed, store.Cancelled} {
		t.Run(state.String(), func(t *testing.T) {
			s := open(t)
			j := ended(t, s, store.AddParams{Type: "t", Data: raw(`{"v":1}`)}, state)
			before := time.Now()
			r := resubmit(t, s, store.ResubmitParams{ID: j.ID})
			after := time.Now()
			if r.Outcome != store.Requeued || r.Job.ID != j.ID {
				t.Errorf("Resubmit of a %v job: outcome %v id %d, want requeued, id %d", state, r.Outcome, r.Job.ID, j.ID)
			}
			got := get(t, s, j.ID)
			wantState(t, got, store.Pending)
			wantAttempt(t, got, 0)
			wantJSON(t, "data after resubmit without data", got.Data, `{"v":1}`)
			aboutNow(t, "run_at after resubmit without run_at", got.RunAt, before, after)
			if got.LastError != "" || len(got.Errors) != 0 || len(got.Result) != 0 || !got.FinishedAt.IsZero() {
				t.Errorf("after resubmit last_error %q errors %v result %s finished_at %v, want all cleared",
					got.LastError, got.Errors, got.Result, got.FinishedAt)
			}
		})
	}

	t.Run("Missing", func(t *testing.T) {
		s := open(t)
		j := ended(t, s, store.AddParams{Type: "t"}, store.Completed)
		res, errs, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: j.ID + 1000}, {ID: j.ID}})
		if err != nil {
			t.Fatalf("Resubmit: the call failed: %v", err)
		}
		if len(res) != 2 || len(errs) != 2 {
			t.Fatalf("Resubmit(2 items) returned %d results and %d errors", len(res), len(errs))
		}
		wantErr(t, "Resubmit of a missing job", errs[0], store.ErrNotFound)
		if errs[1] != nil || res[1].Outcome != store.Requeued {
			t.Errorf("Resubmit of an existing job in the same batch: %v, outcome %v; want success, requeued", errs[1], res[1].Outcome)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		for _, c := range []struct {
			name string
			p    store.ResubmitParams
		}{
			{"id 0", store.ResubmitParams{}},
			{"data not an object", store.ResubmitParams{ID: j.ID, Data: raw(`[1]`)}},
			{"run_at in year 10000", store.ResubmitParams{ID: j.ID, RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		} {
			_, _, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: j.ID, RunAt: time.Now().Add(time.Hour)}, c.p})
			wantErr(t, "Resubmit with "+c.name, err, store.ErrInvalid)
		}
		unchanged(t, "rejected resubmits", j, get(t, s, j.ID))
	})
}

// ---- remove ----

func testRemove(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("AnyState", func(t *testing.T) {
		s := open(t)
		del := []int64{
			addOne(t, s, store.AddParams{Type: "p", Key: "k"}).ID,
			start(t, s, store.AddParams{Type: "r"}).ID,
			ended(t, s, store.AddParams{Type: "c"}, store.Completed).ID,
			ended(t, s, store.AddParams{Type: "f"}, store.Failed).ID,
			ended(t, s, store.AddParams{Type: "x"}, store.Cancelled).ID,
		}
		errs, err := s.Remove(t.Context(), del)
		if err != nil {
			t.Fatalf("Remove: the call failed: %v", err)
		}
		for i, e := range errs {
			if e != nil {
				t.Errorf("Remove of job %d: %v, want success", del[i], e)
			}
		}
		for _, id := range del {
			gone(t, s, id)
		}
		if jobs := listAll(t, s, store.ListParams{}); len(jobs) != 0 {
			t.Errorf("List after removing every job = %v, want none", ids(jobs))
		}
		_, err = s.GetByKey(t.Context(), "p", "k")
		wantErr(t, "GetByKey of a removed job", err, store.ErrNotFound)
		r := add(t, s, store.AddParams{Type: "p", Key: "k"})[0]
		if r.Outcome != store.Inserted || r.Job.ID == del[0] {
			t.Errorf("add with a removed job's key: outcome %v id %d, want a new job", r.Outcome, r.Job.ID)
		}
	})

	t.Run("Missing", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		errs, err := s.Remove(t.Context(), []int64{j.ID + 1000, j.ID})
		if err != nil {
			t.Fatalf("Remove: the call failed: %v", err)
		}
		wantErr(t, "Remove of a missing job", errs[0], store.ErrNotFound)
		if errs[1] != nil {
			t.Errorf("Remove of an existing job in the same batch: %v, want success", errs[1])
		}
		errs, err = s.Remove(t.Context(), []int64{j.ID})
		if err != nil {
			t.Fatalf("Remove: the call failed: %v", err)
		}
		wantErr(t, "Remove of a job removed before", errs[0], store.ErrNotFound)
	})
}

// ---- lease expiry ----

func testExpireLeases(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("BackToPending", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 3})
		if n, next := expire(t, s, time.Now()); n != 0 {
			t.Errorf("ExpireLeases(now) took back %d jobs whose lease has not ended, want 0", n)
		} else {
			sameTime(t, "earliest lease still running", next, j.LeaseUntil)
		}
		before := time.Now()
		n, next := expire(t, s, time.Now().Add(time.Hour))
		after := time.Now()
		if n != 1 || !next.IsZero() {
			t.Errorf("ExpireLeases(+1h) = %d, next %v; want 1 and no lease left", n, next)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 1)
		if !strings.Contains(strings.ToLower(got.LastError), "lease") {
			t.Errorf("last_error %q, want it to say the lease expired", got.LastError)
		}
		if len(got.Errors) != 1 || got.Errors[0].Attempt != 1 {
			t.Errorf("errors %+v, want one entry for attempt 1", got.Errors)
		}
		if got.Token == j.Token {
			t.Errorf("the expired lease's token is still on the job, want it cleared")
		}
		aboutNow(t, "run_at after lease expiry", got.RunAt, before, after)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after lease expiry took %d jobs, want the job, due now", len(res.Jobs))
		}
		wantAttempt(t, res.Jobs[0], 2)
	})

	t.Run("OutOfAttempts", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", MaxAttempts: 1})
		if n, _ := expire(t, s, time.Now().Add(time.Hour)); n != 1 {
			t.Errorf("ExpireLeases took back %d jobs, want 1", n)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Failed)
		if !strings.Contains(strings.ToLower(got.LastError), "lease") || got.FinishedAt.IsZero() {
			t.Errorf("last_error %q finished_at %v, want a lease error and a finish time", got.LastError, got.FinishedAt)
		}
		fenced(t, s, lease(j), store.ErrWorkerConflict)
	})

	t.Run("CountAndNext", func(t *testing.T) {
		s := open(t)
		ps := make([]store.AddParams, 3)
		for i := range ps {
			ps[i] = store.AddParams{Type: "short"}
		}
		add(t, s, ps...)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"short"}, Limit: 3}).Jobs); n != 3 {
			t.Fatalf("Accept took %d jobs, want 3", n)
		}
		addOne(t, s, store.AddParams{Type: "long"})
		long := accept(t, s, store.AcceptParams{Types: []string{"long"}, LeaseTimeout: 2 * time.Hour}).Jobs
		if len(long) != 1 {
			t.Fatalf("Accept took %d jobs, want 1", len(long))
		}
		pending := addOne(t, s, store.AddParams{Type: "idle"})

		n, next := expire(t, s, time.Now().Add(time.Hour))
		if n != 3 {
			t.Errorf("ExpireLeases(+1h) took back %d jobs, want the 3 with short leases", n)
		}
		sameTime(t, "the earliest lease still running", next, long[0].LeaseUntil)
		unchanged(t, "ExpireLeases, for a job whose lease runs on", long[0], get(t, s, long[0].ID))
		unchanged(t, "ExpireLeases, for a pending job", pending, get(t, s, pending.ID))
		n, next = expire(t, s, time.Now().Add(time.Hour))
		if n != 0 {
			t.Errorf("a second ExpireLeases(+1h) took back %d jobs, want 0", n)
		}
		sameTime(t, "the earliest lease still running", next, long[0].LeaseUntil)
	})

	t.Run("Resubmitted", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Key: "k", MaxAttempts: 1})
		add(t, s, store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":2}`)})
		if n, _ := expire(t, s, time.Now().Add(time.Hour)); n != 1 {
			t.Errorf("ExpireLeases took back %d jobs, want 1", n)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		wantJSON(t, "data", got.Data, `{"v":2}`)
		fenced(t, s, lease(j), store.ErrWorkerConflict)
	})
}

// ---- watch ----

type recorder struct {
	mu      sync.Mutex
	changes []store.Event
	signal  chan struct{}
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{}, 1)} }

func (r *recorder) fn(cs []store.Event) {
	r.mu.Lock()
	r.changes = append(r.changes, cs...)
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

func (r *recorder) forJob(id int64) []store.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []store.Event
	for _, c := range r.changes {
		if c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

// waitFor waits until n changes of job id arrived and returns them.
func (r *recorder) waitFor(t *testing.T, id int64, n int) []store.Event {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		if cs := r.forJob(id); len(cs) >= n {
			return cs
		}
		select {
		case <-r.signal:
		case <-timeout:
			t.Fatalf("Watch: %d changes of job %d within 5s, want %d; got %+v", len(r.forJob(id)), id, n, r.forJob(id))
		}
	}
}

func describe(cs []store.Event) []string {
	var out []string
	for _, c := range cs {
		s := c.State.String()
		if c.Removed {
			s = "removed(" + s + ")"
		}
		out = append(out, s)
	}
	return out
}

func testWatch(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Lifecycle", func(t *testing.T) {
		s := open(t)
		rec := newRecorder()
		stop := s.Watch(rec.fn)
		defer stop()
		j := addOne(t, s, store.AddParams{Type: "t", Group: "g", RunAt: time.Now().Add(-time.Minute)})
		cs := rec.waitFor(t, j.ID, 1)
		if c := cs[0]; c.State != store.Pending || c.Type != "t" || c.Group != "g" || c.Removed {
			t.Errorf("change for add = %+v, want pending, type t, group g", c)
		} else {
			sameTime(t, "run_at of the add change", c.RunAt, j.RunAt)
		}
		r := start(t, s, store.AddParams{Type: "other"}) // unrelated changes interleave
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept took %d jobs, want 1", len(res.Jobs))
		}
		rec.waitFor(t, j.ID, 2)
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Complete})
		rec.waitFor(t, j.ID, 3)
		if errs, err := s.Remove(t.Context(), []int64{j.ID}); err != nil || errs[0] != nil {
			t.Fatalf("Remove = %v, %v", errs, err)
		}
		cs = rec.waitFor(t, j.ID, 4)
		want := []string{"pending", "running", "completed", "removed(completed)"}
		if got := describe(cs); !slices.Equal(got, want) {
			t.Errorf("changes of job %d = %v, want %v", j.ID, got, want)
		}
		if got := describe(rec.waitFor(t, r.ID, 2)); !slices.Equal(got[:2], []string{"pending", "running"}) {
			t.Errorf("changes of job %d = %v, want pending, running", r.ID, got)
		}
	})

	t.Run("CommitOrder", func(t *testing.T) {
		s := open(t)
		rec := newRecorder()
		stop := s.Watch(rec.fn)
		defer stop()
		res := add(t, s, store.AddParams{Type: "t"}, store.AddParams{Type: "t"})
		a, b := res[0].Job.ID, res[1].Job.ID
		mustCancel(t, s, a)
		rec.waitFor(t, a, 2)
		rec.mu.Lock()
		var got []string
		for _, c := range rec.changes {
			if c.ID == a || c.ID == b {
				got = append(got, fmt.Sprintf("%d:%v", c.ID, c.State))
			}
		}
		rec.mu.Unlock()
		want := []string{fmt.Sprintf("%d:pending", a), fmt.Sprintf("%d:pending", b), fmt.Sprintf("%d:cancelled", a)}
		if !slices.Equal(got, want) {
			t.Errorf("changes %v, want %v (commit order)", got, want)
		}
	})

	t.Run("Stop", func(t *testing.T) {
		s := open(t)
		stopped, still := newRecorder(), newRecorder()
		stop := s.Watch(stopped.fn)
		stop2 := s.Watch(still.fn)
		defer stop2()
		first := addOne(t, s, store.AddParams{Type: "t"})
		stopped.waitFor(t, first.ID, 1)
		stop()
		j := addOne(t, s, store.AddParams{Type: "t"})
		still.waitFor(t, j.ID, 1)         // the change was published...
		time.Sleep(20 * time.Millisecond) // ...give a late delivery a moment
		if cs := stopped.forJob(j.ID); len(cs) != 0 {
			t.Errorf("a stopped watcher received %v, want nothing after stop", cs)
		}
	})
}

// ---- type configuration ----

func testTypeConfig(t *testing.T, open func(t *testing.T) store.Store) {
	leaseOf := func(t *testing.T, s store.Store, p store.AcceptParams, want time.Duration) {
		t.Helper()
		before := time.Now()
		res := accept(t, s, p)
		after := time.Now()
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept(%v) took %d jobs, want 1", p.Types, len(res.Jobs))
		}
		within(t, fmt.Sprintf("lease_until of a %v job (lease %v)", p.Types, want), res.Jobs[0].LeaseUntil,
			before.Add(want-slack), after.Add(want+slack))
		if want > time.Minute {
			before = time.Now()
			hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(res.Jobs[0])})
			after = time.Now()
			within(t, fmt.Sprintf("lease_until of a %v job after a heartbeat (lease %v)", p.Types, want), hb.LeaseUntil,
				before.Add(want-slack), after.Add(want+slack))
		}
	}

	t.Run("LeaseTimeout", func(t *testing.T) {
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "slow", LeaseTimeout: 10 * time.Minute}); err != nil {
			t.Fatalf("SetTypeConfig: %v", err)
		}
		add(t, s, store.AddParams{Type: "slow"}, store.AddParams{Type: "fast"}, store.AddParams{Type: "fast"},
			store.AddParams{Type: "slow"})
		leaseOf(t, s, store.AcceptParams{Types: []string{"slow"}}, 10*time.Minute)
		leaseOf(t, s, store.AcceptParams{Types: []string{"fast"}}, store.DefaultLeaseTimeout)
		leaseOf(t, s, store.AcceptParams{Types: []string{"fast"}, LeaseTimeout: 2 * time.Hour}, 2*time.Hour)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "slow", LeaseTimeout: 3 * time.Minute}); err != nil {
			t.Fatalf("SetTypeConfig: %v", err)
		}
		leaseOf(t, s, store.AcceptParams{Types: []string{"slow"}}, 3*time.Minute)
	})

	t.Run("List", func(t *testing.T) {
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "slow", LeaseTimeout: 10 * time.Minute}); err != nil {
			t.Fatalf("SetTypeConfig: %v", err)
		}
		addOne(t, s, store.AddParams{Type: "fast"})
		cfgs, err := s.TypeConfigs(t.Context())
		if err != nil {
			t.Fatalf("TypeConfigs: %v", err)
		}
		got := map[string]time.Duration{}
		for _, c := range cfgs {
			got[c.Type] = c.LeaseTimeout
		}
		if d, ok := got["slow"]; !ok || d != 10*time.Minute {
			t.Errorf("TypeConfigs = %+v, want slow with a 10m lease timeout", cfgs)
		}
		if d, ok := got["fast"]; !ok || d != store.DefaultLeaseTimeout {
			t.Errorf("TypeConfigs = %+v, want the added type fast with the default lease timeout", cfgs)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		for _, c := range []store.TypeConfig{
			{Type: ""},
			{Type: "a*"},
			{Type: "ok", LeaseTimeout: -time.Second},
		} {
			err := s.SetTypeConfig(t.Context(), c)
			wantErr(t, fmt.Sprintf("SetTypeConfig(%+v)", c), err, store.ErrInvalid)
		}
		cfgs, err := s.TypeConfigs(t.Context())
		if err != nil {
			t.Fatalf("TypeConfigs: %v", err)
		}
		if len(cfgs) != 0 {
			t.Errorf("TypeConfigs after rejected configs = %+v, want none", cfgs)
		}
	})
}

// ---- close ----

func testClose(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	j := start(t, s, store.AddParams{Type: "t", Key: "k"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	l := lease(j)
	calls := []struct {
		name string
		fn   func() error
	}{
		{"Add", func() error { _, err := s.Add(ctx, []store.AddParams{{Type: "t"}}); return err }},
		{"Get", func() error { _, err := s.Get(ctx, []int64{j.ID}); return err }},
		{"GetByKey", func() error { _, err := s.GetByKey(ctx, "t", "k"); return err }},
		{"List", func() error { _, err := s.List(ctx, store.ListParams{}); return err }},
		{"Resubmit", func() error { _, _, err := s.Resubmit(ctx, []store.ResubmitParams{{ID: j.ID}}); return err }},
		{"Cancel", func() error { _, err := s.Cancel(ctx, []int64{j.ID}); return err }},
		{"Remove", func() error { _, err := s.Remove(ctx, []int64{j.ID}); return err }},
		{"Accept", func() error { _, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t"}}); return err }},
		{"Heartbeat", func() error { _, err := s.Heartbeat(ctx, []store.HeartbeatParams{{Lease: l}}); return err }},
		{"Finish", func() error {
			_, err := s.Finish(ctx, []store.FinishParams{{Lease: l, As: store.Complete}})
			return err
		}},
		{"ExpireLeases", func() error { _, _, err := s.ExpireLeases(ctx, time.Now()); return err }},
		{"SetTypeConfig", func() error { return s.SetTypeConfig(ctx, store.TypeConfig{Type: "t"}) }},
		{"TypeConfigs", func() error { _, err := s.TypeConfigs(ctx); return err }},
		{"Stats", func() error { _, err := s.Stats(ctx); return err }},
		{"SetGroupConfig", func() error { return s.SetGroupConfig(ctx, store.GroupConfig{Group: "g", Weight: 2}) }},
		{"GroupConfigs", func() error { _, err := s.GroupConfigs(ctx); return err }},
	}
	for _, c := range calls {
		// Each call several times: a store must refuse every call after
		// Close, not just most of them.
		for range 5 {
			done := make(chan error, 1)
			go func() { done <- c.fn() }()
			select {
			case err := <-done:
				wantErr(t, c.name+" after Close", err, store.ErrClosed)
			case <-time.After(5 * time.Second):
				t.Errorf("%s after Close did not return within 5s, want ErrClosed at once", c.name)
			}
		}
	}
}

func testStats(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	if got, err := s.Stats(t.Context()); err != nil || len(got) != 0 {
		t.Fatalf("Stats on an empty store: %v %v, want nothing", got, err)
	}
	add(t, s, store.AddParams{Type: "a", Group: "g1"}, store.AddParams{Type: "a", Group: "g1"},
		store.AddParams{Type: "a", Group: "g2"}, store.AddParams{Type: "b"})
	j := start(t, s, store.AddParams{Type: "d"})
	mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
	start(t, s, store.AddParams{Type: "c", Group: "g1"})
	got, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Count{
		{Type: "a", Group: "g1", State: store.Pending, Jobs: 2},
		{Type: "a", Group: "g2", State: store.Pending, Jobs: 1},
		{Type: "b", Group: "", State: store.Pending, Jobs: 1},
		{Type: "c", Group: "g1", State: store.Running, Jobs: 1},
		{Type: "d", Group: "", State: store.Completed, Jobs: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stats = %+v\nwant    %+v", got, want)
	}
}
