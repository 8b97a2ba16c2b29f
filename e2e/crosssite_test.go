package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestCrossSitePageChangesNothing opens, in a real headless Chromium, a
// page served from another origin (another loopback port) that tries what
// a hostile site can do to a `rota serve` without a token on the same
// machine: add a job with a no-cors fetch labelled text/plain (or
// application/json, which no-cors drops), cancel a job with a bodiless
// no-cors POST, and post an HTML form. Nothing changes. Over plain HTTP,
// a request naming another Host, as a page rebinding its own name to
// 127.0.0.1 would send, is refused on the API and the dashboard.
func TestCrossSitePageChangesNothing(t *testing.T) {
	s := startServer(t)
	id := s.add(t, "victim", "{}")
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>loading</title>
<form id="f" method="post" enctype="text/plain" action="%[1]s/v1/jobs" target="sink"><input name='{"type":"evil-form","x":"' value='"}'></form>
<iframe name="sink"></iframe>
<script>
(async () => {
  const target = %[1]q, out = [];
  const tries = [
    ["add as text/plain", target + "/v1/jobs", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: JSON.stringify({type: "evil-text"})}],
    ["add as json", target + "/v1/jobs", {method: "POST", mode: "no-cors", headers: {"Content-Type": "application/json"}, body: JSON.stringify({type: "evil-json"})}],
    ["add, no type", target + "/v1/jobs", {method: "POST", mode: "no-cors", body: new Blob([JSON.stringify({type: "evil-blob"})])}],
    ["cancel", target + "/v1/jobs/%[2]d/cancel", {method: "POST", mode: "no-cors"}],
    ["dashboard cancel", target + "/jobs/%[2]d/cancel", {method: "POST", mode: "no-cors", credentials: "include"}],
  ];
  for (const [what, url, opts] of tries) {
    try { await fetch(url, opts); out.push(what + ": sent"); } catch (e) { out.push(what + ": " + e); }
  }
  document.getElementById("f").submit();
  await new Promise(r => setTimeout(r, 500));
  document.title = "done: " + out.join("; ");
})();
</script>`, s.URL, id)
	}))
	defer evil.Close()
	if strings.TrimPrefix(evil.URL, "http://") == strings.TrimPrefix(s.URL, "http://") {
		t.Fatal("the hostile page shares the server's origin")
	}
	ctx := browser(t, 800, 600)
	var title string
	run(t, ctx, "open the hostile page",
		chromedp.Navigate(evil.URL),
		chromedp.Poll(`document.title.startsWith("done")`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Title(&title),
	)
	t.Logf("the page: %s", title)
	if !strings.Contains(title, "add as text/plain: sent") {
		t.Fatalf("the page's requests were not sent: %s", title)
	}
	var list struct {
		Jobs []struct {
			ID    int64  `json:"id"`
			Type  string `json:"type"`
			State string `json:"state"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(s.httpGet(t, "/v1/jobs"), &list); err != nil {
		t.Fatal(err)
	}
	for _, j := range list.Jobs {
		if j.ID != id {
			t.Errorf("the hostile page added job %d of type %q", j.ID, j.Type)
		}
	}
	if st := s.jobState(t, id); st != "pending" {
		t.Errorf("the hostile page left job %d %s", id, st)
	}

	// DNS rebinding: the page's own name, pointed at 127.0.0.1.
	for _, path := range []string{"/v1/jobs", "/", "/healthz"} {
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		req.Host = "rebind.evil.example:" + strings.Split(s.URL, ":")[2]
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s as Host %s: %d, want 403", path, req.Host, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("POST", s.URL+"/v1/jobs", strings.NewReader(`{"type":"rebound"}`))
	req.Host = "rebind.evil.example"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("an add as Host %s: %d, want 403", req.Host, resp.StatusCode)
	}
	if err := json.Unmarshal(s.httpGet(t, "/v1/jobs"), &list); err != nil || len(list.Jobs) != 1 {
		t.Errorf("after the rebinding requests: %d jobs (%v), want 1", len(list.Jobs), err)
	}
}
