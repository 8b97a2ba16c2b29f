package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

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

// An add with debounce runs its job that long after the add; another add
// of the key replaces its data and run time, outcome updated.
func TestAddDebounce(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	first := s.do(t, "POST", "/v1/jobs", map[string]any{"type": "index", "key": "doc-1", "debounce": "1h", "data": map[string]any{"v": 1}})
	var a, b addResp
	if err := json.Unmarshal(first.Body, &a); err != nil || first.Status != http.StatusCreated {
		t.Fatalf("first add: %s", first)
	}
	if until := time.Until(a.Job.RunAt); until < 59*time.Minute || until > time.Hour {
		t.Errorf("first add runs in %v, want about an hour", until)
	}
	second := s.do(t, "POST", "/v1/jobs", map[string]any{"type": "index", "key": "doc-1", "debounce": "1h", "data": map[string]any{"v": 2}})
	if err := json.Unmarshal(second.Body, &b); err != nil {
		t.Fatal(err)
	}
	if b.Job.ID != a.Job.ID || b.Outcome != "updated" || string(b.Job.Data) != `{"v":2}` || !b.Job.RunAt.After(a.Job.RunAt) {
		t.Errorf("second add: job %d %s data %s run at %v, want %d updated with the new data, later than %v",
			b.Job.ID, b.Outcome, b.Job.Data, b.Job.RunAt, a.Job.ID, a.Job.RunAt)
	}
	wantError(t, s.do(t, "POST", "/v1/jobs", map[string]any{"type": "index", "debounce": "1h"}), 400, "invalid_input", "debounce needs a key")
}
