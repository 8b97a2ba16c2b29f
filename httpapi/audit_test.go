package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
)

// TestHistory shows the audit trail over HTTP: each change is recorded
// with the name of the token that made it (the admin token as "admin"),
// a job's history shows them, a removed job's too, and a token of
// another tenant reads neither.
func TestHistory(t *testing.T) {
	e := newTokenEnv(t)
	res, err := e.c.Add(t.Context(), rota.AddParams{Type: "mail.send", Group: "acme-1"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Job.ID
	path := fmt.Sprintf("/v1/jobs/%d", id)
	for _, step := range []struct{ kind, method, suffix, body string }{
		{"acme", "PATCH", "", `{"priority":5}`},
		{"mail-only", "POST", "/cancel", ""},
		{"admin", "POST", "/resubmit", ""},
		{"acme", "DELETE", "", ""},
	} {
		var body any
		if step.body != "" {
			body = json.RawMessage(step.body)
		}
		if r := e.as(t, step.kind, step.method, path+step.suffix, body); r.Status >= 300 {
			t.Fatalf("%s %s as %s: %s", step.method, step.suffix, step.kind, r)
		}
	}
	r := e.as(t, "acme-read-only", "GET", path+"/history", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("history as acme-read-only: %s", r)
	}
	var h wire.HistoryResponse
	if err := json.Unmarshal(r.Body, &h); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h.History {
		got = append(got, e.Action+" by "+e.Actor+": "+e.Detail)
	}
	// A removed job has no row: its history is its records.
	want := []string{"update by acme: priority 0 → 5",
		"cancel by mail-only: pending → cancelled", "retry by admin: cancelled → pending", "remove by acme: removed while pending"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the removed job's history over HTTP:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if r := e.as(t, "beta", "GET", path+"/history", nil); r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), `"not_found"`) {
		t.Errorf("another tenant's token reads the removed job's history: %s, want 404 not_found", r)
	}
	if r := e.as(t, "admin", "GET", "/v1/jobs/987654321/history", nil); r.Status != http.StatusNotFound {
		t.Errorf("history of a job that never was: %s, want 404", r)
	}
}
