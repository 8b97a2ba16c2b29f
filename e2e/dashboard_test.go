package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The dashboard's tests drive it in a real headless Chromium (Debian's
// chromium, which scripts/setup.sh installs) against a real rota serve.
// With ROTA_DASHBOARD_SHOTS=DIR they save screenshots of the main
// screens there (docs/dashboard/ holds the chosen ones).

// browser starts a headless Chromium for the test, or skips when there is
// none (failing instead when ROTA_REQUIRE_CHROMIUM=1, as in CI).
func browser(t *testing.T, width, height int) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("ROTA_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no chromium on PATH, and the browser tests are required (ROTA_REQUIRE_CHROMIUM=1): scripts/setup.sh installs Debian's chromium")
		}
		t.Skip("no chromium on PATH: skipping the dashboard's browser tests (scripts/setup.sh installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // tests may run as root, where Chromium's sandbox will not start
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// Accept every confirm() the pages ask.
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(true))
		case *runtime.EventExceptionThrown:
			// A script error on a page is a test failure.
			t.Errorf("a page's script failed: %s", ev.ExceptionDetails.Error())
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// run runs browser actions with a deadline.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(tctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// shot saves a screenshot when ROTA_DASHBOARD_SHOTS names a directory.
func shot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("ROTA_DASHBOARD_SHOTS")
	if dir == "" {
		return
	}
	var png []byte
	run(t, ctx, "screenshot "+name, chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func signIn(t *testing.T, ctx context.Context, url, token string) {
	t.Helper()
	run(t, ctx, "sign in",
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(`input[name=token]`),
		chromedp.SendKeys(`input[name=token]`, token),
		chromedp.Submit(`input[name=token]`),
		chromedp.WaitVisible(`nav`),
	)
}

// httpGet reads an API route with the server's token.
func (s *server) httpGet(t *testing.T, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

func (s *server) jobState(t *testing.T, id int64) string {
	t.Helper()
	var got struct {
		Job struct {
			State string `json:"state"`
		} `json:"job"`
	}
	s.rotaJSON(t, &got, "get", fmt.Sprint(id))
	return got.Job.State
}

// TestDashboard signs in, watches counts change live as jobs are added
// through the API, filters and searches, opens a job, cancels and retries
// it, runs a bulk action, edits a group's weight, and checks that a
// read-only token sees no action and has its writes refused.
func TestDashboard(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	ctx := browser(t, 1280, 800)

	// Signing in: the overview, empty, says what to do.
	signIn(t, ctx, s.URL, "adm")
	var text string
	run(t, ctx, "empty overview", chromedp.Text(`#live`, &text))
	if !strings.Contains(text, "No jobs yet") {
		t.Errorf("the empty overview says:\n%s", text)
	}

	// Counts change live: jobs added through the API appear without a
	// reload (the page's marker survives).
	run(t, ctx, "mark the page", chromedp.Evaluate(`window.rotaMark = 42`, nil))
	for i := range 12 {
		group := []string{"acme", "beta", "gamma"}[i%3]
		s.rota(t, "add", "email.send", fmt.Sprintf(`{"to":"user%d@example.com"}`, i), "--group", group)
	}
	s.rota(t, "add", "report.build", `{"day":"monday"}`, "--group", "acme")
	run(t, ctx, "live counts", chromedp.WaitVisible(`#live a[href="/jobs?type=report.build"]`))
	var mark int
	run(t, ctx, "the page was not reloaded", chromedp.Evaluate(`window.rotaMark`, &mark), chromedp.Text(`#live`, &text))
	if mark != 42 {
		t.Errorf("the overview reloaded instead of updating in place")
	}
	if !strings.Contains(text, "email.send") || !strings.Contains(text, "13") {
		t.Errorf("the live counts show:\n%s", text)
	}
	shot(t, ctx, "overview")

	// The job list, filtered by type pattern and state, in the URL.
	var rows int
	run(t, ctx, "filter",
		chromedp.Navigate(s.URL+"/jobs?type=email.*&state=pending&group=acme"),
		chromedp.WaitVisible(`table.jobs`),
		chromedp.Evaluate(`document.querySelectorAll("table.jobs tbody tr").length`, &rows),
	)
	if rows != 4 {
		t.Errorf("email.* pending in acme: %d rows, want 4", rows)
	}
	shot(t, ctx, "jobs")

	// Search by id opens the job.
	run(t, ctx, "search",
		chromedp.Navigate(s.URL+"/jobs"),
		chromedp.WaitVisible(`#find`),
		chromedp.SendKeys(`#find`, "3\n"),
		chromedp.WaitVisible(`h1 .st`),
		chromedp.Text(`h1`, &text),
	)
	if !strings.HasPrefix(text, "Job 3") {
		t.Fatalf("searching 3 opened %q", text)
	}
	shot(t, ctx, "job")

	// Cancel, then retry, from the job's page: the store changes.
	run(t, ctx, "cancel",
		chromedp.Click(`form[action="/jobs/3/cancel"] button`),
		chromedp.WaitVisible(`.notice`),
	)
	if st := s.jobState(t, 3); st != "cancelled" {
		t.Errorf("after Cancel the job is %s", st)
	}
	run(t, ctx, "retry",
		chromedp.Navigate(s.URL+"/jobs/3"), // a page without the cancel's notice
		chromedp.Click(`form[action="/jobs/3/retry"] button`),
		chromedp.WaitVisible(`.notice`),
	)
	if st := s.jobState(t, 3); st != "pending" {
		t.Errorf("after Retry the job is %s", st)
	}

	// A bulk action on every job matching a filter, in the background.
	run(t, ctx, "bulk cancel",
		chromedp.Navigate(s.URL+"/jobs?type=email.send&group=beta"),
		chromedp.WaitVisible(`#bulk`),
		chromedp.SetValue(`select[name=action]`, "cancel"),
		chromedp.Click(`input[name=scope][value=all]`),
		chromedp.Click(`#bulk button[type=submit]`),
		chromedp.WaitVisible(`.progress`),
	)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var done string
		run(t, ctx, "bulk progress", chromedp.Reload(), chromedp.WaitVisible(`.progress`), chromedp.Text(`.progress`, &done))
		if strings.Contains(done, "Finished") {
			if !strings.HasPrefix(done, "4 jobs done") {
				t.Errorf("the bulk cancel says %q, want 4 jobs done", done)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bulk action did not finish: %q", done)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var stats struct {
		Counts []struct {
			Type, Group, State string
			Jobs               int
		} `json:"counts"`
	}
	s.rotaJSON(t, &stats, "stats")
	for _, c := range stats.Counts {
		if c.Group == "beta" && c.State != "cancelled" {
			t.Errorf("after the bulk cancel, beta has %d %s jobs", c.Jobs, c.State)
		}
	}

	// The recurring jobs, with their schedule and next run.
	s.rota(t, "add", "report.daily", `{}`, "--schedule", "DAILY")
	run(t, ctx, "recurring", chromedp.Navigate(s.URL+"/recurring"), chromedp.WaitVisible(`table.recurring`), chromedp.Text(`table.recurring`, &text))
	if !strings.Contains(text, "report.daily") || !strings.Contains(text, "DAILY") || strings.Contains(text, "email.send") {
		t.Errorf("the recurring jobs:\n%s", text)
	}
	shot(t, ctx, "recurring")

	// A group's weight, set from the groups page.
	run(t, ctx, "group weight",
		chromedp.Navigate(s.URL+"/groups"),
		chromedp.WaitVisible(`#new-group`),
		chromedp.SendKeys(`#new-group input[name=group]`, "acme"),
		chromedp.SendKeys(`#new-group input[name=weight]`, "3"),
		chromedp.Click(`#new-group button`),
		chromedp.WaitVisible(`.notice`),
	)
	var groups struct {
		Groups []struct {
			Group  string  `json:"group"`
			Weight float64 `json:"weight"`
		} `json:"groups"`
	}
	body := s.httpGet(t, "/v1/groups")
	if err := json.Unmarshal(body, &groups); err != nil || len(groups.Groups) != 1 || groups.Groups[0].Group != "acme" || groups.Groups[0].Weight != 3 {
		t.Errorf("groups after the edit: %s", body)
	}
	shot(t, ctx, "groups")

	// A form posted without its CSRF token (from another site) is refused.
	var forged int
	run(t, ctx, "cross-site post", chromedp.Evaluate(`fetch("/jobs/3/cancel", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "x=1"}).then(r => r.status)`, &forged,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if forged != 403 || s.jobState(t, 3) != "pending" {
		t.Errorf("a post without the CSRF token answered %d, and the job is %s", forged, s.jobState(t, 3))
	}

	// A read-only token: no action buttons, and its writes refused.
	viewer := strings.TrimSpace(s.rota(t, "token", "create", "viewer", "--read-only"))
	ro := browser(t, 1280, 800)
	signIn(t, ro, s.URL, viewer)
	var forms int
	run(t, ro, "read-only job page",
		chromedp.Navigate(s.URL+"/jobs/3"),
		chromedp.WaitVisible(`h1 .st`),
		chromedp.Evaluate(`document.querySelectorAll("form[method=post]:not([action='/logout'])").length`, &forms),
	)
	if forms != 0 {
		t.Errorf("a read-only token sees %d action forms on a job", forms)
	}
	var status int
	run(t, ro, "forged cancel", chromedp.Evaluate(`fetch("/jobs/3/cancel", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"},
		body: "csrf=" + document.querySelector("meta[name=csrf]").content}).then(r => r.status)`, &status, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
	if status != 403 {
		t.Errorf("a read-only token's forged cancel answered %d, want 403", status)
	}
	if st := s.jobState(t, 3); st != "pending" {
		t.Errorf("after a read-only cancel the job is %s", st)
	}

	// At a phone's width, the list still reads.
	phone := browser(t, 390, 844)
	signIn(t, phone, s.URL, "adm")
	run(t, phone, "phone", chromedp.Navigate(s.URL+"/jobs"), chromedp.WaitVisible(`table.jobs`))
	shot(t, phone, "jobs-phone")
}

// TestDashboardOff: --ui=false serves the API alone.
func TestDashboardOff(t *testing.T) {
	s := startServer(t, "--ui=false")
	resp, err := http.Get(s.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"not_found"`) {
		t.Errorf("GET / with --ui=false: %d %s", resp.StatusCode, b)
	}
	on := startServer(t)
	resp, err = http.Get(on.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET / with the dashboard: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
}
