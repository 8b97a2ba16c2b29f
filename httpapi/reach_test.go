package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// The routes and fields of workflows (dependencies, batches and their
// callbacks) against another tenant's jobs: each names, joins or reads
// only what the token reaches, and what it does not reach is answered as
// what does not exist.

// betaDone is a job of beta's that completed with a result acme must never
// read.
func betaDone(t *testing.T, e *tokenEnv, typ string) store.Job {
	t.Helper()
	ctx := t.Context()
	res, err := e.c.Add(ctx, rota.AddParams{Type: typ, Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := e.c.Accept(ctx, rota.AcceptParams{Types: []string{typ}, Limit: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("accept beta's job: %v %v", jobs, err)
	}
	if err := e.c.Finish(ctx, rota.FinishParams{Lease: jobs[0].Lease(), As: rota.Complete, Result: json.RawMessage(`{"secret":"beta-result"}`)}); err != nil {
		t.Fatal(err)
	}
	return res.Job
}

// sameAsMissing fails unless got (naming id) reads as missing (naming
// 987654321) does, word for word.
func sameAsMissing(t *testing.T, what string, got, missing reply, id int64) {
	t.Helper()
	a := strings.ReplaceAll(string(got.Body), strconv.FormatInt(id, 10), "N")
	b := strings.ReplaceAll(string(missing.Body), "987654321", "N")
	if got.Status != missing.Status || a != b {
		t.Errorf("%s: another tenant's job is answered %s, a missing one %s", what, got, missing)
	}
}

// TestTokenCallbackNamesNoOtherJob: a batch's callback is added when the
// batch is done, by whichever worker ends its last member; the jobs it
// names (after) are those of the token that added the batch, and one out
// of its reach is refused when the batch is added, as a missing one.
// Before, acme's callback waited on beta's job and was given its result
// on accept. (A callback cannot name a parent at all.)
func TestTokenCallbackNamesNoOtherJob(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	done := betaDone(t, e, "mail.beta-done")
	for _, c := range []struct {
		name  string
		field string
		id    int64
		extra map[string]any
	}{
		{"after", "after", done.ID, map[string]any{"on_dep_failure": "run"}},
	} {
		for _, which := range []string{"on_complete", "on_success"} {
			for _, open := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/open=%v", c.name, which, open), func(t *testing.T) {
					typ := fmt.Sprintf("mail.cb-%s-%s-%v", c.name, which, open)
					body := func(id int64) map[string]any {
						cb := map[string]any{"type": typ, "group": "acme-1", c.field: id}
						if c.field == "after" {
							cb[c.field] = []int64{id}
						}
						for k, v := range c.extra {
							cb[k] = v
						}
						return map[string]any{which: cb, "open": open}
					}
					before, _ := e.c.Get(ctx, c.id)
					got := e.as(t, "acme", "POST", "/v1/batches", body(c.id))
					missing := e.as(t, "acme", "POST", "/v1/batches", body(987654321))
					if got.Status != http.StatusNotFound {
						t.Errorf("acme's batch whose %s callback names beta's job %d as %s: %s, want 404 as for a missing job", which, c.id, c.field, got)
					}
					sameAsMissing(t, "a callback's "+c.field, got, missing, c.id)
					if got.Status == http.StatusCreated && open {
						var b wire.BatchResponse
						json.Unmarshal(got.Body, &b)
						e.as(t, "acme", "POST", fmt.Sprintf("/v1/batches/%d/close", b.Batch.ID), nil)
					}
					// Nothing of beta's reaches acme's callback, and beta's
					// job has no child of acme's.
					acc := e.as(t, "acme", "POST", "/v1/accept", map[string]any{"types": []string{typ}, "limit": 10})
					if strings.Contains(string(acc.Body), "beta-") {
						t.Errorf("acme's callback was given beta's job: %s", acc)
					}
					if after, _ := e.c.Get(ctx, c.id); after.HasChildren != before.HasChildren || after.State != before.State {
						t.Errorf("beta's job changed: %+v, was %+v", after, before)
					}
				})
			}
		}
	}
	// The admin token, which reaches both, may still name any job.
	r := e.as(t, "admin", "POST", "/v1/batches", map[string]any{"on_complete": map[string]any{"type": "mail.cb-admin", "group": "acme-1", "after": []int64{done.ID}}})
	if r.Status != http.StatusCreated {
		t.Errorf("the admin's callback after beta's job: %s, want 201", r)
	}
	// A callback that names acme's own job is taken.
	mine, err := e.c.Add(ctx, rota.AddParams{Type: "mail.mine", Group: "acme-1"})
	if err != nil {
		t.Fatal(err)
	}
	r = e.as(t, "acme", "POST", "/v1/batches", map[string]any{"open": true, "on_complete": map[string]any{"type": "mail.cb-own", "group": "acme-1", "after": []int64{mine.Job.ID}}})
	if r.Status != http.StatusCreated {
		t.Errorf("acme's callback after its own job: %s, want 201", r)
	}
}

// TestTokenEmptyBatchIsItsTenants: a batch added with neither jobs nor
// callbacks holds no job of anyone's yet; it is in the reach of the token
// that added it (and of tokens that reach all it reaches), not of another
// tenant's, which could otherwise read it, close it, or join it and so
// take it from its tenant. Before, it was in every token's reach.
func TestTokenEmptyBatchIsItsTenants(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	res := e.as(t, "acme", "POST", "/v1/batches", map[string]any{"open": true, "description": "acme's"})
	if res.Status != http.StatusCreated {
		t.Fatalf("acme's empty open batch: %s", res)
	}
	var b wire.BatchResponse
	json.Unmarshal(res.Body, &b)
	id := b.Batch.ID
	path := fmt.Sprintf("/v1/batches/%d", id)
	join := map[string]any{"jobs": []any{map[string]any{"type": "mail.send", "group": "beta"}}}
	for _, kind := range []string{"beta", "mail-only"} {
		for _, rq := range []struct {
			method, suffix string
			body           any
		}{{"GET", "", nil}, {"POST", "/jobs", join}, {"POST", "/close", nil}} {
			if kind == "mail-only" && rq.suffix == "/jobs" {
				continue // it reaches the groups acme does; its join is TestTokenEmptyBatchWide's
			}
			got := e.as(t, kind, rq.method, path+rq.suffix, rq.body)
			missing := e.as(t, kind, rq.method, "/v1/batches/987654321"+rq.suffix, rq.body)
			if got.Status != http.StatusNotFound {
				t.Errorf("%s %s%s as %s: %s, want 404 as for a missing batch", rq.method, path, rq.suffix, kind, got)
			}
			a := strings.ReplaceAll(string(got.Body), strconv.FormatInt(id, 10), "N")
			if m := strings.ReplaceAll(string(missing.Body), "987654321", "N"); got.Status != missing.Status || a != m {
				t.Errorf("%s as %s: acme's batch is answered %s, a missing one %s", rq.method+" "+rq.suffix, kind, got, missing)
			}
		}
		var page wire.BatchesResponse
		json.Unmarshal(e.as(t, kind, "GET", "/v1/batches", nil).Body, &page)
		for _, x := range page.Batches {
			if x.ID == id {
				t.Errorf("%s lists acme's empty batch", kind)
			}
		}
	}
	// Still acme's: open, empty, and its to read, join and close.
	got, err := e.c.GetBatch(ctx, id)
	if err != nil || !got.Open || got.Counts.Total != 0 {
		t.Fatalf("acme's batch after the others' tries: %+v %v, want it open and empty", got, err)
	}
	for _, kind := range []string{"acme", "acme-read-only", "admin"} {
		if r := e.as(t, kind, "GET", path, nil); r.Status != http.StatusOK {
			t.Errorf("GET %s as %s: %s, want 200", path, kind, r)
		}
	}
	if r := e.as(t, "acme", "POST", path+"/jobs", map[string]any{"jobs": []any{map[string]any{"type": "mail.send", "group": "acme-1"}}}); r.Status != http.StatusOK {
		t.Fatalf("acme joins its batch: %s", r)
	}
	if r := e.as(t, "acme", "POST", path+"/close", nil); r.Status != http.StatusOK {
		t.Fatalf("acme closes its batch: %s", r)
	}
	if r := e.as(t, "beta", "GET", path, nil); r.Status != http.StatusNotFound {
		t.Errorf("beta reads acme's batch with acme's job: %s", r)
	}
	// The admin's empty batch is anyone's, as before: it holds nothing.
	var ab wire.BatchResponse
	json.Unmarshal(e.as(t, "admin", "POST", "/v1/batches", map[string]any{"open": true}).Body, &ab)
	if r := e.as(t, "beta", "GET", fmt.Sprintf("/v1/batches/%d", ab.Batch.ID), nil); r.Status != http.StatusOK {
		t.Errorf("beta reads the admin's empty batch: %s, want 200", r)
	}
}

// TestTokenEmptyBatchWide: a token of some types in every group (mail-only)
// does not reach the empty batch of a token of some groups in every type
// (acme), nor the other way round: each could join the other's with a job
// the other does not reach.
func TestTokenEmptyBatchWide(t *testing.T) {
	e := newTokenEnv(t)
	for _, c := range []struct{ owner, other, typ, group string }{
		{"acme", "mail-only", "mail.send", "other-group"},
		{"mail-only", "acme", "report", "acme-1"},
	} {
		var b wire.BatchResponse
		json.Unmarshal(e.as(t, c.owner, "POST", "/v1/batches", map[string]any{"open": true}).Body, &b)
		path := fmt.Sprintf("/v1/batches/%d/jobs", b.Batch.ID)
		r := e.as(t, c.other, "POST", path, map[string]any{"jobs": []any{map[string]any{"type": c.typ, "group": c.group}}})
		if r.Status != http.StatusNotFound {
			t.Errorf("%s joins %s's empty batch: %s, want 404", c.other, c.owner, r)
		}
		if r := e.as(t, c.owner, "GET", fmt.Sprintf("/v1/batches/%d", b.Batch.ID), nil); r.Status != http.StatusOK {
			t.Errorf("%s reads its own batch: %s", c.owner, r)
		}
	}
}

// TestTokenDepsOutOfReach: dependencies across tenants are the admin's to
// make (a scoped token's after names only jobs it reaches); across them, a
// tenant learns nothing of the other's job but its id and state, on every
// route that reads dependencies: the deps route, the Go API with a reach,
// and the outcomes an accepted job is given. Before, the deps route listed
// the other tenant's dependants and an accept gave the other tenant's
// result.
func TestTokenDepsOutOfReach(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	a, err := e.c.Add(ctx, rota.AddParams{Type: "mail.a", Group: "acme-1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.c.Add(ctx, rota.AddParams{Type: "mail.b", Group: "beta", Key: "beta-key", After: []int64{a.Job.ID}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.c.Add(ctx, rota.AddParams{Type: "mail.c", Group: "acme-1", After: []int64{b.Job.ID}, OnDepFailure: rota.DepRun})
	if err != nil {
		t.Fatal(err)
	}
	// A scoped token names only jobs it reaches.
	r := e.as(t, "acme", "POST", "/v1/jobs", map[string]any{"type": "mail.x", "group": "acme-1", "after": []int64{b.Job.ID}})
	sameAsMissing(t, "after", r, e.as(t, "acme", "POST", "/v1/jobs", map[string]any{"type": "mail.x", "group": "acme-1", "after": []int64{987654321}}), b.Job.ID)

	var d wire.DepsResponse
	json.Unmarshal(e.as(t, "acme", "GET", fmt.Sprintf("/v1/jobs/%d/deps", a.Job.ID), nil).Body, &d)
	if len(d.Dependants) != 0 {
		t.Errorf("acme reads job %d's dependants %v: beta's job %d is among them", a.Job.ID, d.Dependants, b.Job.ID)
	}
	acme := rota.WithReach(ctx, mustReach(t, []string{"acme-*"}, nil))
	if _, after, err := e.c.Deps(acme, a.Job.ID, 10); err != nil || len(after) != 0 {
		t.Errorf("the Go API with acme's reach: dependants %v, %v; want none", after, err)
	}

	// a runs; b runs and completes with a result; c is due.
	for _, typ := range []string{"mail.a", "mail.b"} {
		jobs, err := e.c.Accept(ctx, rota.AcceptParams{Types: []string{typ}, Limit: 1})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("accept %s: %v %v", typ, jobs, err)
		}
		if err := e.c.Finish(ctx, rota.FinishParams{Lease: jobs[0].Lease(), As: rota.Complete, Result: json.RawMessage(`{"secret":"beta-result"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	wantDep := func(what string, deps []store.Dep) {
		t.Helper()
		if len(deps) != 1 || !reflect.DeepEqual(deps[0], store.Dep{ID: b.Job.ID, State: store.Completed}) {
			t.Errorf("%s: deps %+v, want beta's job by its id and state alone", what, deps)
		}
	}
	json.Unmarshal(e.as(t, "acme", "GET", fmt.Sprintf("/v1/jobs/%d/deps", c.Job.ID), nil).Body, &d)
	wantDep("GET deps as acme", d.Deps)
	deps, _, err := e.c.Deps(acme, c.Job.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	wantDep("the Go API's Deps with acme's reach", deps)
	acc := e.as(t, "acme", "POST", "/v1/accept", map[string]any{"types": []string{"mail.c"}, "limit": 1})
	var res wire.AcceptResponse
	json.Unmarshal(acc.Body, &res)
	if len(res.Jobs) != 1 || res.Jobs[0].ID != c.Job.ID {
		t.Fatalf("acme accepts its dependant: %s", acc)
	}
	wantDep("acme's accept", res.Jobs[0].Deps)
	if strings.Contains(string(acc.Body), "beta") {
		t.Errorf("acme's accept carries beta's job: %s", acc)
	}
	e.c.Finish(ctx, rota.FinishParams{Lease: res.Jobs[0].Lease(), As: rota.Release})
	// The Go API's accept with acme's reach gives the same.
	jobs, err := e.c.Accept(acme, rota.AcceptParams{Types: []string{"mail.c"}, Limit: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("accept with acme's reach: %v %v", jobs, err)
	}
	wantDep("the Go API's accept with acme's reach", jobs[0].Deps)
	// The admin token reads everything.
	json.Unmarshal(e.as(t, "admin", "GET", fmt.Sprintf("/v1/jobs/%d/deps", c.Job.ID), nil).Body, &d)
	if len(d.Deps) != 1 || string(d.Deps[0].Result) != `{"secret":"beta-result"}` || d.Deps[0].Group != "beta" {
		t.Errorf("the admin's deps %+v, want beta's job in full", d.Deps)
	}
}

func mustReach(t *testing.T, groups, types []string) *store.Reach {
	t.Helper()
	r, err := store.NewReach(groups, types)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTokenAddFieldsFindOnlyOwnJobs: the add fields that find an existing
// job (a unique window by key or by data, a debounce by key) or name a
// batch find only what the token reaches: beta holds a job of the same
// type with the same key or data, and acme's add, one by one, in a batch
// of jobs or in a new batch, inserts a job of its own and learns nothing
// of beta's; beta's batch is a missing batch to an add that names it.
func TestTokenAddFieldsFindOnlyOwnJobs(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	betaBatch, _, err := e.c.AddBatch(ctx, rota.NewBatch{Open: true, Jobs: []rota.AddParams{{Type: "mail.send", Group: "beta"}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range []struct {
		name   string
		theirs rota.AddParams
		mine   map[string]any
	}{
		{"unique_for by key", rota.AddParams{Key: "inv-1", UniqueFor: 3600e9}, map[string]any{"key": "inv-1", "unique_for": "1h"}},
		{"unique_for by data", rota.AddParams{UniqueFor: 3600e9, Data: json.RawMessage(`{"n":7}`)}, map[string]any{"unique_for": "1h", "data": map[string]any{"n": 7}}},
		{"debounce by key", rota.AddParams{Key: "inv-2", Debounce: 60e9}, map[string]any{"key": "inv-2", "debounce": "1m"}},
		{"a re-add by key", rota.AddParams{Key: "inv-3"}, map[string]any{"key": "inv-3", "priority": 9, "data": map[string]any{"acme": 1}}},
	} {
		for _, how := range []string{"one", "jobs", "batch"} {
			n++
			typ := fmt.Sprintf("mail.find%d", n)
			p := c.theirs
			p.Type, p.Group = typ, "beta"
			if p.Data == nil {
				p.Data = json.RawMessage(`{"secret":"beta-only"}`)
			}
			theirs, err := e.c.Add(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := e.c.Get(ctx, theirs.Job.ID)
			m := map[string]any{"type": typ, "group": "acme-1"}
			for k, v := range c.mine {
				m[k] = v
			}
			var r reply
			var got store.Job
			switch how {
			case "one":
				r = e.as(t, "acme", "POST", "/v1/jobs", m)
				var res wire.AddResponse
				json.Unmarshal(r.Body, &res)
				got = res.Job
			case "jobs":
				r = e.as(t, "acme", "POST", "/v1/jobs", map[string]any{"jobs": []any{m}})
				var res wire.AddBatchResponse
				json.Unmarshal(r.Body, &res)
				if len(res.Results) == 1 {
					got = res.Results[0].Job
				}
			case "batch":
				r = e.as(t, "acme", "POST", "/v1/batches", map[string]any{"jobs": []any{m}})
				var res wire.BatchResponse
				json.Unmarshal(r.Body, &res)
				if len(res.Results) == 1 {
					got = res.Results[0].Job
				}
			}
			if r.Status >= 300 || got.ID == 0 || got.ID == theirs.Job.ID || got.Group != "acme-1" {
				t.Errorf("%s (%s): acme's add answered %s; want a new job of its own", c.name, how, r)
			}
			if strings.Contains(string(r.Body), "beta") {
				t.Errorf("%s (%s): acme's add answered with beta's job: %s", c.name, how, r)
			}
			if after, _ := e.c.Get(ctx, theirs.Job.ID); !reflect.DeepEqual(before, after) {
				t.Errorf("%s (%s): acme's add changed beta's job:\nbefore %+v\nafter  %+v", c.name, how, before, after)
			}
		}
	}
	// An add that names beta's batch: a missing batch, one by one or in
	// a batch of jobs.
	for _, body := range []func(batch int64) any{
		func(b int64) any { return map[string]any{"type": "mail.send", "group": "acme-1", "batch": b} },
		func(b int64) any {
			return map[string]any{"jobs": []any{map[string]any{"type": "mail.send", "group": "acme-1", "batch": b}}}
		},
	} {
		got := e.as(t, "acme", "POST", "/v1/jobs", body(betaBatch.ID))
		missing := e.as(t, "acme", "POST", "/v1/jobs", body(987654321))
		a := strings.ReplaceAll(string(got.Body), strconv.FormatInt(betaBatch.ID, 10), "N")
		if m := strings.ReplaceAll(string(missing.Body), "987654321", "N"); got.Status != http.StatusNotFound || got.Status != missing.Status || a != m {
			t.Errorf("acme's add naming beta's batch: %s; a missing batch: %s", got, missing)
		}
	}
	if b, _ := e.c.GetBatch(ctx, betaBatch.ID); b.Counts.Total != 1 {
		t.Errorf("beta's batch has %d jobs, want its own 1", b.Counts.Total)
	}
}

// TestTokenFamilyAcrossTenants: a family that the admin token builds
// across tenants (a child in beta's group under acme's parent) runs as
// any, but each tenant's worker is given nothing of the other's job: the
// child's worker no parent data, the parent's worker only the children it
// reaches (as a listing of its children shows), over HTTP and through the
// Go API with a reach. Before, the
// child's worker was given acme's data and acme's parent beta's result.
func TestTokenFamilyAcrossTenants(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	if _, err := e.c.Add(ctx, rota.AddParams{Type: "mail.parent", Group: "acme-1", Data: json.RawMessage(`{"secret":"acme-only"}`)}); err != nil {
		t.Fatal(err)
	}
	ps, err := e.c.Accept(ctx, rota.AcceptParams{Types: []string{"mail.parent"}, Limit: 1})
	if err != nil || len(ps) != 1 {
		t.Fatalf("accept the parent: %v %v", ps, err)
	}
	parent := ps[0]
	theirs, err := e.c.Add(ctx, rota.AddParams{Type: "mail.child", Group: "beta", Parent: parent.ID, Data: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := e.c.Add(ctx, rota.AddParams{Type: "mail.child", Group: "acme-2", Parent: parent.ID, Data: json.RawMessage(`{"n":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.Finish(ctx, rota.FinishParams{Lease: parent.Lease(), As: rota.Complete}); err != nil {
		t.Fatal(err)
	}
	acceptAs := func(kind, typ string) store.Job {
		t.Helper()
		r := e.as(t, kind, "POST", "/v1/accept", map[string]any{"types": []string{typ}, "limit": 1})
		var res wire.AcceptResponse
		json.Unmarshal(r.Body, &res)
		if len(res.Jobs) != 1 {
			t.Fatalf("%s accepts %s: %s", kind, typ, r)
		}
		return res.Jobs[0]
	}
	// beta's worker runs its child: no parent data of acme's.
	child := acceptAs("beta", "mail.child")
	if child.ID != theirs.Job.ID || child.ParentData != nil {
		t.Errorf("beta's child %d accepted with parent data %s; want none", child.ID, child.ParentData)
	}
	e.c.Finish(ctx, rota.FinishParams{Lease: child.Lease(), As: rota.Complete, Result: json.RawMessage(`{"secret":"beta-result"}`)})
	// acme's worker runs its own child: its parent's data.
	own := acceptAs("acme", "mail.child")
	if own.ID != mine.Job.ID || string(own.ParentData) != `{"secret":"acme-only"}` {
		t.Errorf("acme's child %d accepted with parent data %s; want its parent's", own.ID, own.ParentData)
	}
	e.c.Finish(ctx, rota.FinishParams{Lease: own.Lease(), As: rota.Complete, Result: json.RawMessage(`{"ok":2}`)})
	// acme's parent runs again: beta's child by its id and state alone.
	wantChildren := func(what string, j store.Job) {
		t.Helper()
		byID := map[int64]store.Child{}
		for _, c := range j.Children {
			byID[c.ID] = c
		}
		if len(j.Children) != 1 || string(byID[mine.Job.ID].Result) != `{"ok":2}` {
			t.Errorf("%s: children %+v; want acme's alone, whole", what, j.Children)
		}
	}
	again := acceptAs("acme", "mail.parent")
	wantChildren("acme's parent over HTTP", again)
	e.c.Finish(ctx, rota.FinishParams{Lease: again.Lease(), As: rota.Release})
	jobs, err := e.c.Accept(rota.WithReach(ctx, mustReach(t, []string{"acme-*"}, nil)), rota.AcceptParams{Types: []string{"mail.parent"}, Limit: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("accept with acme's reach: %v %v", jobs, err)
	}
	wantChildren("acme's parent through the Go API with its reach", jobs[0])
}
