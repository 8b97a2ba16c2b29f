package e2e_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestAddAfter: rota add --after makes a job wait for others; rota get
// shows its dependencies with their states and the jobs after it; a
// cancelled dependency cancels it (--on-dep-failure cancel, the default)
// or lets it run (run); an unknown job named is an error and adds nothing.
func TestAddAfter(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := s.add(t, "e2e.step")
	b := s.add(t, "e2e.step")
	ids := fmt.Sprintf("%d,%d", a, b)
	c := s.add(t, "e2e.step", "--after", ids)
	d := s.add(t, "e2e.step", "--after", strconv.FormatInt(a, 10), "--on-dep-failure", "run")
	if got := s.get(t, c); got.State != "waiting" {
		t.Errorf("job after two pending ones is %s, want waiting", got.State)
	}
	out := s.rota(t, "get", strconv.FormatInt(c, 10))
	for _, want := range []string{fmt.Sprintf("after:       %d pending e2e.step", a), fmt.Sprintf("%d pending e2e.step", b), "state:"} {
		if !strings.Contains(out, want) {
			t.Errorf("rota get %d does not show %q:\n%s", c, want, out)
		}
	}
	if out := s.rota(t, "get", strconv.FormatInt(a, 10)); !strings.Contains(out, fmt.Sprintf("dependants:  %d, %d", c, d)) {
		t.Errorf("rota get %d does not list its dependants:\n%s", a, out)
	}
	if out := s.rota(t, "stats"); !strings.Contains(out, "WAITING") {
		t.Errorf("rota stats has no waiting column:\n%s", out)
	}
	if out := s.rota(t, "ls", "--state", "waiting"); !strings.Contains(out, strconv.FormatInt(c, 10)) {
		t.Errorf("rota ls --state waiting does not list job %d:\n%s", c, out)
	}
	s.rota(t, "cancel", strconv.FormatInt(a, 10))
	if got := s.get(t, c); got.State != "cancelled" || !strings.Contains(got.LastError, fmt.Sprintf("dependency %d was cancelled", a)) {
		t.Errorf("after its dependency's cancel: %s %q, want cancelled naming it", got.State, got.LastError)
	}
	if got := s.get(t, d); got.State != "pending" {
		t.Errorf("run-policy job after the cancel: %s, want pending", got.State)
	}
	r := s.run(t, "", "add", "e2e.step", "--after", "999999")
	if r.code == 0 || !strings.Contains(r.stderr, "999999") {
		t.Errorf("add --after an unknown job: %v, want an error naming it", r)
	}
	r = s.run(t, "", "add", "e2e.step", "--on-dep-failure", "run")
	if r.code == 0 || !strings.Contains(r.stderr, "--on-dep-failure needs --after") {
		t.Errorf("--on-dep-failure without --after: %v", r)
	}
}

// TestWorkDeps: a program run by rota work for a job added after others
// reads their outcomes from the file ROTA_JOB_DEPS names; a job without
// dependencies gets none.
func TestWorkDeps(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.start(t, "work", "--type", "e2e.wfwork", "--", "sh", "-c", `if [ -n "$ROTA_JOB_DEPS" ]; then cat "$ROTA_JOB_DEPS"; else echo '{"first":true}'; fi`)
	a := s.add(t, "e2e.wfwork")
	b := s.add(t, "e2e.wfwork", "--after", id(a))
	if r := s.run(t, "", "wait", id(b)); r.code != 0 {
		t.Fatalf("wait for the job after another: %v", r)
	}
	var deps []struct {
		ID     int64
		State  string
		Result json.RawMessage
	}
	j := s.get(t, b)
	if err := json.Unmarshal(j.Result, &deps); err != nil || len(deps) != 1 || deps[0].ID != a || deps[0].State != "completed" || compact(deps[0].Result) != `{"first":true}` {
		t.Errorf("the program saw %s (%v), want job %d completed with its result", j.Result, err, a)
	}
}
