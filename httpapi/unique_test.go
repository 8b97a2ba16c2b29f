package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/rotajobs/rota/httpapi"
)

// An add with unique_for within the window answers with the job it found
// and outcome unchanged (200); unique_states narrows what counts; bad
// windows are refused with a 400 that names the field.
func TestAddUniqueFor(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	addAs := func(body map[string]any, status int) addResp {
		t.Helper()
		r := s.do(t, "POST", "/v1/jobs", body)
		if r.Status != status {
			t.Fatalf("add %v: %s, want %d", body, r, status)
		}
		var res addResp
		if err := json.Unmarshal(r.Body, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := addAs(map[string]any{"type": "mail", "unique_for": "1h", "data": map[string]any{"to": "a"}}, http.StatusCreated)
	again := addAs(map[string]any{"type": "mail", "unique_for": "1h", "data": map[string]any{"to": "a"}}, http.StatusOK)
	if again.Job.ID != first.Job.ID || again.Outcome != "unchanged" {
		t.Errorf("second add: job %d %s, want %d unchanged", again.Job.ID, again.Outcome, first.Job.ID)
	}
	// Only completed jobs count: the pending one is not found.
	other := addAs(map[string]any{"type": "mail", "unique_for": "1h", "unique_states": []string{"completed"}, "data": map[string]any{"to": "a"}}, http.StatusCreated)
	if other.Job.ID == first.Job.ID || other.Outcome != "inserted" {
		t.Errorf("add counting completed jobs only: job %d %s, want a new job", other.Job.ID, other.Outcome)
	}
	wantError(t, s.do(t, "POST", "/v1/jobs", map[string]any{"type": "mail", "unique_for": "-1s"}), 400, "invalid_input", "unique_for")
	wantError(t, s.do(t, "POST", "/v1/jobs", map[string]any{"type": "mail", "unique_states": []string{"pending"}}), 400, "invalid_input", "unique_states")
	wantError(t, s.do(t, "POST", "/v1/jobs", map[string]any{"type": "mail", "unique_for": "1h", "unique_states": []string{"asleep"}}), 400, "invalid_input", "asleep")
}
