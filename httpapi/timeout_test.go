package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// TestRunTimeoutWhileHeartbeating runs a worker against a real server that
// keeps heartbeating past its job's timeout: the heartbeat that comes
// after the run's end is refused (worker_conflict), and the server's
// lease monitor takes the job back as a failed attempt, "timed out after
// 1.2s", although the worker never stopped heartbeating.
func TestRunTimeoutWhileHeartbeating(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	j := s.add(t, map[string]any{"type": "slow", "timeout": "1.2s", "max_attempts": 3, "backoff_base": "1m", "backoff_max": "1m"})
	if j.Timeout != 1200*time.Millisecond {
		t.Fatalf("added job's timeout %v, want 1.2s", j.Timeout)
	}
	if g := s.get(t, j.ID); g.Timeout != 1200*time.Millisecond {
		t.Fatalf("read back: timeout %v, want 1.2s", g.Timeout)
	}
	run := s.acceptOne(t, "slow")
	if run.Timeout != 1200*time.Millisecond {
		t.Errorf("accepted job's timeout %v, want 1.2s", run.Timeout)
	}
	if want := run.StartedAt.Add(1200 * time.Millisecond); run.LeaseUntil.After(want) {
		t.Errorf("lease until %v, past the run's end %v", run.LeaseUntil, want)
	}
	hbPath := fmt.Sprintf("/v1/jobs/%d/heartbeat", run.ID)
	var refused reply
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		r := s.do(t, "POST", hbPath, map[string]any{"token": run.Token, "progress": 1})
		if r.Status != 200 {
			refused = r
			break
		}
	}
	// Refused as timed out, or, once the lease monitor took the run back,
	// as a lease that is no longer current: a worker conflict either way.
	if refused.Status != 409 || !strings.Contains(string(refused.Body), wire.CodeWorkerConflict) {
		t.Fatalf("heartbeats past the timeout: %v, want 409 worker_conflict", refused)
	}
	if since := time.Since(run.StartedAt); since < 1200*time.Millisecond {
		t.Errorf("heartbeat refused %v after the run started, before its timeout", since)
	}
	// The lease monitor ends the run: pending, after the back-off, with the error.
	var g store.Job
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if g = s.get(t, run.ID); g.State != store.Running {
			break
		}
	}
	if g.State != store.Pending || g.LastError != "timed out after 1.2s" || g.Attempt != 1 || g.RunAt.Before(time.Now().Add(40*time.Second)) {
		t.Errorf("after the timeout: state %s, last error %q, attempt %d, run at %v; want pending after the back-off, \"timed out after 1.2s\"",
			g.State, g.LastError, g.Attempt, g.RunAt)
	}
	// The worker's late finish is refused.
	if r := s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/finish", run.ID), map[string]any{"token": run.Token}); r.Status != 409 {
		t.Errorf("finish after the timeout: %v, want 409", r)
	}
	// A bad timeout is refused, naming the field; nothing is added.
	r := s.do(t, "POST", "/v1/jobs", map[string]any{"type": "slow", "timeout": "-1s"})
	if r.Status != 400 || !strings.Contains(string(r.Body), "timeout") {
		t.Errorf("a negative timeout: %v, want 400 naming timeout", r)
	}
}
