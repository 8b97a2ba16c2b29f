package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// TestDeps adds a workflow in one batch over HTTP (after_keys), runs it,
// and reads a job's dependencies and dependants; an add after an unknown
// job is 404 naming it and adds nothing.
func TestDeps(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	res := want[wire.AddBatchResponse](t, s, 200, "POST", "/v1/jobs", map[string]any{"jobs": []map[string]any{
		{"type": "etl", "key": "extract"},
		{"type": "etl", "key": "load", "after_keys": []string{"extract"}, "on_dep_failure": "run"},
	}})
	extract, load := res.Results[0].Job, res.Results[1].Job
	if load.State != store.Waiting || !load.HasDeps || load.DepPolicy != store.DepRun {
		t.Fatalf("the dependant: state %s, has_deps %v, policy %s; want waiting, true, run", load.State, load.HasDeps, load.DepPolicy)
	}
	if st := s.stats(t); st.ByState["waiting"] != 1 {
		t.Errorf("by_state %v, want one waiting", st.ByState)
	}
	run := s.acceptOne(t, "etl")
	want[struct{}](t, s, 204, "POST", fmt.Sprintf("/v1/jobs/%d/finish", run.ID), map[string]any{"token": run.Token, "result": map[string]any{"rows": 3}})
	got := s.acceptOne(t, "etl")
	if got.ID != load.ID || len(got.Deps) != 1 || got.Deps[0].ID != extract.ID || string(got.Deps[0].Result) != `{"rows":3}` {
		t.Fatalf("accepted %d with deps %+v, want job %d with extract's result", got.ID, got.Deps, load.ID)
	}
	d := want[wire.DepsResponse](t, s, 200, "GET", fmt.Sprintf("/v1/jobs/%d/deps", extract.ID), nil)
	if len(d.Deps) != 0 || len(d.Dependants) != 1 || d.Dependants[0] != load.ID {
		t.Errorf("extract's deps %+v, want no deps and load as its dependant", d)
	}
	d = want[wire.DepsResponse](t, s, 200, "GET", fmt.Sprintf("/v1/jobs/%d/deps?limit=5", load.ID), nil)
	if len(d.Deps) != 1 || d.Deps[0].State != store.Completed || d.Deps[0].Key != "extract" {
		t.Errorf("load's deps %+v, want extract, completed", d)
	}
	wantError(t, s.do(t, "GET", fmt.Sprintf("/v1/jobs/%d/deps?limit=0", load.ID), nil), 400, "invalid_input", "limit")

	before := s.jobCount(t)
	missing := load.ID + 100
	wantError(t, s.do(t, "POST", "/v1/jobs", map[string]any{"jobs": []map[string]any{
		{"type": "etl"}, {"type": "etl", "after": []int64{extract.ID, missing}}}}), 404, "not_found", fmt.Sprint(missing))
	wantError(t, s.do(t, "POST", "/v1/jobs", map[string]any{"type": "etl", "after_keys": []string{"nope"}}), 400, "invalid_input", `"nope"`)
	wantError(t, s.do(t, "POST", "/v1/jobs", map[string]any{"type": "etl", "after": []int64{extract.ID}, "on_dep_failure": "maybe"}), 400, "invalid_input", "maybe")
	if n := s.jobCount(t); n != before {
		t.Errorf("%d jobs after the refused adds, want %d", n, before)
	}
}
