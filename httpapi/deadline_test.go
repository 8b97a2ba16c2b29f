package httpapi_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/store"
)

// TestDeadlineOverHTTP adds a job with expires_at over HTTP that no worker
// takes: the job's JSON carries the deadline, the server's lease monitor
// ends it once the deadline passes (cancelled, expired, its last error
// saying when). A deadline
// not after run_at is refused naming the field, adding nothing; a type's
// default timeout round-trips over PUT /v1/types/{type}, and a bad one is
// refused.
func TestDeadlineOverHTTP(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	deadline := time.Now().Add(time.Second).UTC().Truncate(time.Microsecond)
	j := s.add(t, map[string]any{"type": "quote", "expires_at": deadline.Format(time.RFC3339Nano)})
	if !j.ExpiresAt.Equal(deadline) || j.Expired {
		t.Fatalf("added: expires_at %v, expired %v; want %v, not expired", j.ExpiresAt, j.Expired, deadline)
	}
	var g store.Job
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if g = s.get(t, j.ID); g.State != store.Pending {
			break
		}
	}
	if g.State != store.Cancelled || !g.Expired || g.LastError != "expired at "+deadline.Format(time.RFC3339Nano)+", not started" {
		t.Errorf("after the deadline: %s, expired %v, last error %q; want cancelled and expired", g.State, g.Expired, g.LastError)
	}
	if r := s.do(t, "GET", "/v1/jobs/"+strconv.FormatInt(j.ID, 10), nil); !strings.Contains(string(r.Body), `"expired":true`) ||
		!strings.Contains(string(r.Body), `"expires_at":"`) {
		t.Errorf("GET of the expired job: %s", r.Body)
	}
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := s.do(t, "POST", "/v1/jobs", map[string]any{"type": "quote", "run_at": later, "expires_at": later})
	if r.Status != 400 || !strings.Contains(string(r.Body), "expires_at") {
		t.Errorf("expires_at at run_at: %v, want 400 naming expires_at", r)
	}
	r = s.do(t, "PUT", "/v1/types/quote", map[string]any{"timeout": "30s"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"timeout":"30s"`) {
		t.Errorf("PUT a type's timeout: %v", r)
	}
	r = s.do(t, "PUT", "/v1/types/quote", map[string]any{"timeout": "-1s"})
	if r.Status != 400 || !strings.Contains(string(r.Body), "timeout") {
		t.Errorf("PUT a negative type timeout: %v, want 400 naming timeout", r)
	}
	if r := s.do(t, "GET", "/v1/types", nil); !strings.Contains(string(r.Body), `"timeout":"30s"`) {
		t.Errorf("GET /v1/types after a refused change: %s, want the timeout kept at 30s", r.Body)
	}
}
