package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// httpPost posts JSON to an API route with the server's token and decodes
// the answer into out (when not nil).
func (s *server) httpPost(t *testing.T, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: %v in %s", path, err, b)
		}
	}
}

// accept takes the next job of typ as a worker would, and returns its id
// and lease token.
func (s *server) accept(t *testing.T, typ string) (int64, string) {
	t.Helper()
	var got struct {
		Jobs []struct {
			ID    int64  `json:"id"`
			Token string `json:"token"`
		} `json:"jobs"`
	}
	s.httpPost(t, "/v1/accept", fmt.Sprintf(`{"types":[%q],"limit":1}`, typ), &got)
	if len(got.Jobs) != 1 {
		t.Fatalf("accept %s: %d jobs", typ, len(got.Jobs))
	}
	return got.Jobs[0].ID, got.Jobs[0].Token
}

// textOf reads the text of the first element sel selects, "" when none
// does, so that a page without it fails a check, not the whole test.
func textOf(sel string, out *string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, sel), out)
}

// relRE is how the dashboard writes every relative time: one style
// whatever the size ("in 49 s", "1 min 10 s ago", "in 3 days 4 h").
var relRE = regexp.MustCompile(`^(just now|never|—|(in )?\d+ (s|min|h|days?)( \d+ (s|min|h))?( ago)?)$`)

// relativeTimes returns the text of the page's relative times.
func relativeTimes(t *testing.T, ctx context.Context) []string {
	var out []string
	run(t, ctx, "the page's times", chromedp.Evaluate(`[...document.querySelectorAll("time:not([data-clock])")].map(t => t.textContent)`, &out))
	return out
}

// TestDashboardSaysWhatIsTrue: the overview's chart legend says the window
// it covers (not "59 min ago" a minute after start), counts a failed run
// as a failure and not as a job queued, and the counts table totals the
// "all" row; a job page was opened now; the Groups page lists the groups
// in use with their counts; the Types page's inputs have visible labels
// and its durations read "7 days" and "90 s"; relative times have one
// style; the job list shows a running job's progress, marks recurring
// jobs and counts each state beside its filter, scoped to the token.
func TestDashboardSaysWhatIsTrue(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	for i := range 3 {
		s.add(t, "email.send", fmt.Sprintf(`{"n":%d}`, i), "--group", "acme-1")
	}
	s.add(t, "email.send", `{}`, "--group", "globex")
	s.add(t, "flaky", `{}`, "--group", "acme-1", "--max-attempts", "3")
	slow := s.add(t, "slow", `{}`, "--group", "acme-1")
	nightly := s.add(t, "nightly", `{}`, "--group", "acme-1", "--schedule", "0 3 * * *")
	const added = 7

	// A failed run that is retried: a failure, not a job queued.
	id, tok := s.accept(t, "flaky")
	s.httpPost(t, fmt.Sprintf("/v1/jobs/%d/fail", id), fmt.Sprintf(`{"token":%q,"error":"boom"}`, tok), nil)
	if st := s.jobState(t, id); st != "pending" {
		t.Fatalf("the failed flaky job is %s, want pending for a retry", st)
	}
	// A running job at 40%.
	id, tok = s.accept(t, "slow")
	if id != slow {
		t.Fatalf("accepted %d, want the slow job %d", id, slow)
	}
	s.httpPost(t, fmt.Sprintf("/v1/jobs/%d/heartbeat", id), fmt.Sprintf(`{"token":%q,"progress":40}`, tok), nil)
	s.httpDo(t, "PUT", "/v1/types/email.send", `{"lease_timeout":"90s","retention":"168h"}`)
	s.httpDo(t, "PUT", "/v1/groups", `{"group":"acme-1","weight":3}`)

	ctx := browser(t, 1280, 800)
	signIn(t, ctx, s.URL, "adm")

	// The overview.
	var legend, total string
	run(t, ctx, "the overview", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(`.legend`),
		chromedp.Text(`.legend`, &legend), textOf(`tfoot [data-state=total]`, &total))
	if !strings.Contains(legend, "since the server started") || strings.Contains(legend, "59") {
		t.Errorf("the chart's legend says %q, want since the server started seconds ago", legend)
	}
	if !strings.Contains(legend, fmt.Sprintf("queued %d ", added)) || !strings.Contains(legend, "failed 1 ") {
		t.Errorf("the chart's legend says %q, want queued %d (the retry is no new job) and failed 1", legend, added)
	}
	if strings.TrimSpace(total) != strconv.Itoa(added) {
		t.Errorf("the all row's total is %q, want %d", total, added)
	}
	var note string
	run(t, ctx, "the chart's note", textOf(`#chart-note`, &note))
	if !strings.Contains(note, "failed run counts under failed") {
		t.Errorf("the chart does not say how it counts retries: %q", note)
	}

	// A job page opened now says so, whenever the job last changed.
	time.Sleep(1100 * time.Millisecond) // the job changed over a second ago
	var opened, openedAt string
	run(t, ctx, "a job page", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", s.URL, nightly)), chromedp.WaitVisible(`#history`),
		chromedp.Text(`#history li`, &opened), chromedp.Evaluate(`document.querySelector("#history time")?.getAttribute("datetime") ?? ""`, &openedAt))
	at, err := time.Parse(time.RFC3339, openedAt)
	if !strings.HasPrefix(opened, "Opened at ") || strings.Contains(opened, "ago") || err != nil || time.Since(at).Abs() > 5*time.Second {
		t.Errorf("a page just opened says %q (at %q)", opened, openedAt)
	}
	for _, rt := range relativeTimes(t, ctx) {
		if !relRE.MatchString(rt) {
			t.Errorf("the job page writes a time as %q", rt)
		}
	}

	// Groups: those in use, with their counts and settings.
	var groups string
	run(t, ctx, "the groups", chromedp.Navigate(s.URL+"/groups"), chromedp.WaitVisible(`main h1`),
		textOf(`#groups-in-use tr[data-group="acme-1"]`, &groups))
	if !strings.Contains(groups, "acme-1") || !strings.Contains(groups, "weight 3") || !strings.Contains(groups, "6") {
		t.Errorf("the groups in use show acme-1 as %q, want its 6 jobs and weight 3", groups)
	}

	// Types: every input has a visible label; durations read as people write them.
	var unlabelled []string
	var types string
	run(t, ctx, "the types", chromedp.Navigate(s.URL+"/types"), chromedp.WaitVisible(`table`),
		chromedp.Evaluate(`[...document.querySelectorAll("main form input:not([type=hidden])")]
			.filter(i => !i.labels.length || !i.labels[0].textContent.trim() || i.labels[0].offsetWidth === 0).map(i => i.name)`, &unlabelled),
		chromedp.Text(`main`, &types))
	if len(unlabelled) > 0 {
		t.Errorf("inputs without a visible label on the Types page: %v", unlabelled)
	}
	if !strings.Contains(types, "90 s") || !strings.Contains(types, "7 days") || strings.Contains(types, "0m0s") {
		t.Errorf("the Types page writes durations as:\n%s", types)
	}
	// The form reads back what it shows.
	// The wait is on the answer's notice or error: the page being left
	// has a heading too, and a navigation started before the answer
	// arrives would abort the save.
	var notice, failure string
	run(t, ctx, "save a type as shown", chromedp.Click(`form[action="/types/email.send"] button`), chromedp.WaitVisible(`.notice, .error`),
		textOf(`.notice`, &notice), textOf(`.error`, &failure))
	if notice == "" {
		t.Errorf("saving email.send's settings as shown failed: %q", failure)
	}

	// The jobs list: progress, recurring, counts by state.
	var running, recurring string
	counts := map[string]string{}
	run(t, ctx, "the jobs", chromedp.Navigate(s.URL+"/jobs"), chromedp.WaitVisible(`table.jobs`),
		textOf(fmt.Sprintf(`tr:has(a[href="/jobs/%d"])`, slow), &running),
		textOf(fmt.Sprintf(`tr:has(a[href="/jobs/%d"])`, nightly), &recurring),
		chromedp.Evaluate(`Object.fromEntries([...document.querySelectorAll("[data-count]")].map(e => [e.dataset.count, e.textContent]))`, &counts))
	if !strings.Contains(running, "40%") {
		t.Errorf("the running job's row reads %q, want its progress 40%%", running)
	}
	if !strings.Contains(recurring, "↻") {
		t.Errorf("the recurring job's row reads %q, want it marked recurring", recurring)
	}
	if counts["pending"] != "6" || counts["running"] != "1" || counts["failed"] != "0" {
		t.Errorf("the state counts beside the filters are %v, want pending 6, running 1, failed 0", counts)
	}
	run(t, ctx, "the jobs of a type", chromedp.Navigate(s.URL+"/jobs?type=email.*&group=acme-1"), chromedp.WaitVisible(`table.jobs`),
		chromedp.Evaluate(`Object.fromEntries([...document.querySelectorAll("[data-count]")].map(e => [e.dataset.count, e.textContent]))`, &counts))
	if counts["pending"] != "3" || counts["running"] != "0" {
		t.Errorf("the state counts of email.* in acme-1 are %v, want pending 3", counts)
	}
	for _, rt := range relativeTimes(t, ctx) {
		if !relRE.MatchString(rt) {
			t.Errorf("the job list writes a time as %q", rt)
		}
	}

	// A scoped token counts its own jobs only.
	acme := strings.TrimSpace(s.rota(t, "token", "create", "acme", "--groups", "acme-*"))
	scoped := browser(t, 1280, 800)
	signIn(t, scoped, s.URL, acme)
	run(t, scoped, "acme's jobs", chromedp.Navigate(s.URL+"/jobs"), chromedp.WaitVisible(`table.jobs`),
		chromedp.Evaluate(`Object.fromEntries([...document.querySelectorAll("[data-count]")].map(e => [e.dataset.count, e.textContent]))`, &counts))
	if counts["pending"] != "5" || counts["running"] != "1" {
		t.Errorf("acme's state counts are %v, want pending 5 (globex's job not counted), running 1", counts)
	}
}
