package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/dashboard"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store/sqlite"
)

// These tests check the dashboard's server side over real HTTP on a real
// SQLite store: sign-in, its cookie, CSRF, and what tokens reach. The
// browser tests (e2e/dashboard_test.go) drive the pages themselves.

type site struct {
	ts  *httptest.Server
	url string
	c   *rota.Client
	api *httpapi.Server
}

func newSite(t *testing.T, adminToken string) *site {
	return newSiteWith(t, adminToken, dashboard.Config{}, false)
}

// newSiteWith starts a site with the dashboard's cfg, over TLS when tls.
func newSiteWith(t *testing.T, adminToken string, cfg dashboard.Config, tls bool) *site {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rota.NewClient(st, rota.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(c, httpapi.Config{AuthToken: adminToken, Logger: slog.New(slog.DiscardHandler)})
	cfg.Logger = slog.New(slog.DiscardHandler)
	dash, err := dashboard.New(c, api, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle("/", dash)
	ts := httptest.NewUnstartedServer(mux)
	if tls {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() { ts.Close(); dash.Close(); api.Close(); c.Close(); st.Close() })
	return &site{url: ts.URL, c: c, api: api, ts: ts}
}

// browser is an HTTP client with cookies that does not follow redirects.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// tlsBrowser is browser for a site over TLS.
func tlsBrowser(t *testing.T, s *site) *http.Client {
	cl := s.ts.Client()
	cl.Jar, _ = cookiejar.New(nil)
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return cl
}

func get(t *testing.T, cl *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := cl.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func postForm(t *testing.T, cl *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := cl.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var csrfRE = regexp.MustCompile(`<meta name="csrf" content="([0-9a-f]+)">`)

var loginCSRFRE = regexp.MustCompile(`<input type="hidden" name="csrf" value="([0-9a-f]+)">`)

// loginForm opens the sign-in page and returns its form's CSRF token.
func loginForm(t *testing.T, s *site, cl *http.Client) string {
	t.Helper()
	_, page := get(t, cl, s.url+"/login")
	m := loginCSRFRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the sign-in form")
	}
	return m[1]
}

// login posts the sign-in form as the browser cl would.
func login(t *testing.T, s *site, cl *http.Client, token, next string) (*http.Response, string) {
	t.Helper()
	return postForm(t, cl, s.url+"/login", url.Values{"token": {token}, "next": {next}, "csrf": {loginForm(t, s, cl)}})
}

func signIn(t *testing.T, s *site, token string) (*http.Client, string) {
	t.Helper()
	cl := browser(t)
	resp, _ := login(t, s, cl, token, "/jobs")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs" {
		t.Fatalf("sign-in: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "rota_session" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("the session cookie is %+v: want HttpOnly and SameSite=Strict", cookie)
	}
	// A short test token ("adm") can turn up in a random session id by
	// chance; the tokens the server makes are long enough to tell.
	if len(token) >= 16 && strings.Contains(cookie.Value, token) {
		t.Fatalf("the session cookie holds the token")
	}
	_, page := get(t, cl, s.url+"/jobs")
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the page")
	}
	return cl, m[1]
}

func TestSignIn(t *testing.T) {
	s := newSite(t, "adm")
	cl := browser(t)
	// Pages need a sign-in, and go back where they were asked for.
	resp, _ := get(t, cl, s.url+"/jobs?state=failed")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=%2Fjobs%3Fstate%3Dfailed") {
		t.Errorf("an anonymous page: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A wrong token is refused and says so.
	resp, body := login(t, s, cl, "nope", "/")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not valid for this server") {
		t.Errorf("a wrong token: %d", resp.StatusCode)
	}
	// The redirect after sign-in stays on this site.
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example"} {
		resp, _ = login(t, s, browser(t), "adm", next)
		if resp.Header.Get("Location") != "/" {
			t.Errorf("next=%q sent the browser to %q", next, resp.Header.Get("Location"))
		}
	}
	// Every page carries a strict Content-Security-Policy.
	resp, _ = get(t, cl, s.url+"/login")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
	signIn(t, s, "adm")
}

func TestActionsNeedCSRFAndWrite(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	res, err := s.c.Add(ctx, rota.AddParams{Type: "t", Group: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Job.ID
	cl, csrf := signIn(t, s, "adm")
	cancel := fmt.Sprintf("%s/jobs/%d/cancel", s.url, id)
	if resp, _ := postForm(t, cl, cancel, url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a post without the CSRF token: %d", resp.StatusCode)
	}
	if resp, _ := postForm(t, cl, cancel, url.Values{"csrf": {"0123456789abcdef0123456789abcdef"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a post with another CSRF token: %d", resp.StatusCode)
	}
	if j, _ := s.c.Get(ctx, id); j.State != rota.Pending {
		t.Fatalf("a refused post changed the job: %s", j.State)
	}

	// A read-only token is refused, even with its own CSRF token.
	ro := createToken(t, s, wire.CreateTokenRequest{Name: "viewer", ReadOnly: true})
	rcl, rcsrf := signIn(t, s, ro)
	if resp, body := postForm(t, rcl, cancel, url.Values{"csrf": {rcsrf}}); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Errorf("a read-only cancel: %d", resp.StatusCode)
	}
	_, page := get(t, rcl, fmt.Sprintf("%s/jobs/%d", s.url, id))
	if strings.Contains(page, "/cancel") {
		t.Errorf("a read-only token sees the cancel button")
	}

	// The admin's post with its token goes through.
	if resp, _ := postForm(t, cl, cancel, url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the admin's cancel: %d", resp.StatusCode)
	}
	if j, _ := s.c.Get(ctx, id); j.State != rota.Cancelled {
		t.Errorf("after the admin's cancel the job is %s", j.State)
	}
}

func TestScopedToken(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	mine, _ := s.c.Add(ctx, rota.AddParams{Type: "t", Group: "acme"})
	theirs, _ := s.c.Add(ctx, rota.AddParams{Type: "t", Group: "beta"})
	tok := createToken(t, s, wire.CreateTokenRequest{Name: "acme", Groups: []string{"acme"}})
	cl, csrf := signIn(t, s, tok)
	_, list := get(t, cl, s.url+"/jobs")
	if !strings.Contains(list, fmt.Sprintf(`href="/jobs/%d"`, mine.Job.ID)) || strings.Contains(list, fmt.Sprintf(`href="/jobs/%d"`, theirs.Job.ID)) {
		t.Errorf("acme's list shows another tenant's job, or not its own")
	}
	if resp, _ := get(t, cl, fmt.Sprintf("%s/jobs/%d", s.url, theirs.Job.ID)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another tenant's job page: %d", resp.StatusCode)
	}
	if resp, _ := postForm(t, cl, fmt.Sprintf("%s/jobs/%d/remove", s.url, theirs.Job.ID), url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("removing another tenant's job: %d", resp.StatusCode)
	}
	if _, err := s.c.Get(ctx, theirs.Job.ID); err != nil {
		t.Errorf("another tenant's job is gone: %v", err)
	}
	_, overview := get(t, cl, s.url+"/ui/overview")
	if strings.Contains(overview, "beta") {
		t.Errorf("acme's overview counts beta's jobs")
	}
	if resp, _ := postForm(t, cl, s.url+"/groups", url.Values{"csrf": {csrf}, "group": {"beta"}, "weight": {"5"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("setting another tenant's group: %d", resp.StatusCode)
	}
}

// TestScopedTokenBatches: a scoped session lists and opens its tenant's
// batches, and another tenant's batch is a missing one.
func TestScopedTokenBatches(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	mine, _, err := s.c.AddBatch(ctx, rota.NewBatch{Description: "acme pages", Jobs: []rota.AddParams{{Type: "t", Group: "acme"}}})
	if err != nil {
		t.Fatal(err)
	}
	theirs, _, err := s.c.AddBatch(ctx, rota.NewBatch{Description: "beta pages", Jobs: []rota.AddParams{{Type: "t", Group: "beta"}}})
	if err != nil {
		t.Fatal(err)
	}
	tok := createToken(t, s, wire.CreateTokenRequest{Name: "acme", Groups: []string{"acme"}})
	cl, _ := signIn(t, s, tok)
	_, list := get(t, cl, s.url+"/batches")
	if !strings.Contains(list, fmt.Sprintf(`data-batch="%d"`, mine.ID)) || strings.Contains(list, fmt.Sprintf(`data-batch="%d"`, theirs.ID)) ||
		strings.Contains(list, "beta pages") {
		t.Errorf("acme's Batches page shows another tenant's batch, or not its own:\n%s", list)
	}
	if strings.Contains(list, `rel="next"`) {
		t.Errorf("acme's only page of batches links a next page")
	}
	if resp, page := get(t, cl, fmt.Sprintf("%s/batches/%d", s.url, mine.ID)); resp.StatusCode != http.StatusOK || !strings.Contains(page, "acme pages") {
		t.Errorf("acme's batch page: %d", resp.StatusCode)
	}
	if resp, page := get(t, cl, fmt.Sprintf("%s/batches/%d", s.url, theirs.ID)); resp.StatusCode != http.StatusNotFound || strings.Contains(page, "beta pages") {
		t.Errorf("another tenant's batch page: %d", resp.StatusCode)
	}
}

func createToken(t *testing.T, s *site, req wire.CreateTokenRequest) string {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"read_only":%v`, req.Name, req.ReadOnly)
	if len(req.Groups) > 0 {
		body += fmt.Sprintf(`,"groups":["%s"]`, strings.Join(req.Groups, `","`))
	}
	hreq, _ := http.NewRequest("POST", s.url+"/v1/tokens", strings.NewReader(body+"}"))
	hreq.Header.Set("Authorization", "Bearer adm")
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`"secret":"([^"]+)"`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("create token: %s", b)
	}
	return m[1]
}

// TestScopedTokenCountsNothingOutOfReach: a bulk action by filter acts on,
// and counts, only the jobs the token reaches; a job page lists only the
// children it reaches; a jobs page offers a next page only when a job it
// reaches follows.
func TestScopedTokenCountsNothingOutOfReach(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	var beta []int64
	for range 7 {
		res, _ := s.c.Add(ctx, rota.AddParams{Type: "t", Group: "beta"})
		beta = append(beta, res.Job.ID)
	}
	for range 2 {
		s.c.Add(ctx, rota.AddParams{Type: "t", Group: "acme"})
	}
	tok := createToken(t, s, wire.CreateTokenRequest{Name: "acme", Groups: []string{"acme"}})
	cl, csrf := signIn(t, s, tok)

	// A page of one with beta's jobs after acme's: no next page.
	_, list := get(t, cl, s.url+"/jobs?type=t&limit=2")
	if strings.Contains(list, `rel="next"`) {
		t.Errorf("acme's last page of its jobs links a next page: beta's jobs follow")
	}
	_, list = get(t, cl, s.url+"/jobs?group=beta&limit=1")
	if strings.Contains(list, `rel="next"`) {
		t.Errorf("acme's page of group beta links a next page")
	}

	resp, _ := postForm(t, cl, s.url+"/jobs/bulk", url.Values{"csrf": {csrf}, "action": {"cancel"}, "scope": {"all"}, "filter": {"type=t"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("bulk cancel: %d", resp.StatusCode)
	}
	task := s.url + resp.Header.Get("Location")
	var page string
	for range 200 {
		if _, page = get(t, cl, task); strings.Contains(page, "Finished.") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(page, "<strong>2</strong> jobs done, 0 skipped") {
		m := regexp.MustCompile(`<p class="progress".*</p>`).FindString(page)
		t.Errorf("acme's bulk cancel of type t: %q; want 2 done and nothing skipped (beta's jobs are not acme's to count)", m)
	}
	jobs, _ := s.c.GetMany(ctx, beta)
	for _, j := range jobs {
		if j.State != rota.Pending {
			t.Errorf("beta's job %d is %v after acme's bulk cancel", j.ID, j.State)
		}
	}

	// A parent of acme's with a child of acme's and one of beta's (an
	// admin may add one): acme's job page shows its own child only.
	s.c.Add(ctx, rota.AddParams{Type: "p", Group: "acme"})
	running, err := s.c.Accept(ctx, rota.AcceptParams{Types: []string{"p"}, Limit: 1})
	if err != nil || len(running) != 1 {
		t.Fatalf("accept the parent: %v %v", running, err)
	}
	parent := running[0]
	mine, _ := s.c.Add(ctx, rota.AddParams{Type: "c", Group: "acme", Parent: parent.ID})
	theirs, _ := s.c.Add(ctx, rota.AddParams{Type: "c", Group: "beta", Parent: parent.ID})
	_, jobPage := get(t, cl, fmt.Sprintf("%s/jobs/%d", s.url, parent.ID))
	if !strings.Contains(jobPage, fmt.Sprintf(`href="/jobs/%d"`, mine.Job.ID)) || strings.Contains(jobPage, fmt.Sprintf(`href="/jobs/%d"`, theirs.Job.ID)) {
		t.Errorf("acme's page of its parent job lists another tenant's child, or not its own")
	}
}

// TestOverviewByReach: the overview's counts and chart, and the live
// pages' wake-ups, hold nothing of another tenant's jobs, and a tenant's
// look at the shared counts does not narrow the admin's.
func TestOverviewByReach(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	tok := createToken(t, s, wire.CreateTokenRequest{Name: "acme", Groups: []string{"acme"}})
	acme, _ := signIn(t, s, tok)
	admin, _ := signIn(t, s, "adm")

	// acme's live stream: open before beta's jobs come.
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", s.url+"/ui/stream", nil)
	resp, err := acme.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	changed := make(chan struct{}, 10)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(b)
			if strings.Contains(string(b[:n]), "event: changed") {
				changed <- struct{}{}
			}
			if err != nil {
				return
			}
		}
	}()

	for range 5 {
		s.c.Add(ctx, rota.AddParams{Type: "t", Group: "beta"})
	}
	var page string
	for range 200 {
		if _, page = get(t, admin, s.url+"/ui/overview"); strings.Contains(page, "queued 5") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(page, "queued 5") {
		t.Fatalf("the admin's chart does not count beta's 5 jobs")
	}
	// Another change, and the shared count's time gone by, so that acme's
	// look counts afresh; the admin looks right after it, from the same
	// shared count.
	s.c.Add(ctx, rota.AddParams{Type: "t", Group: "beta"})
	select {
	case <-changed:
		t.Errorf("acme's page was told of beta's changes")
	case <-time.After(2100 * time.Millisecond): // statsTTL
	}
	_, page = get(t, acme, s.url+"/ui/overview")
	if !strings.Contains(page, "queued 0") || strings.Contains(page, "beta") {
		t.Errorf("acme's overview shows beta's jobs (its chart should count none)")
	}
	if _, page = get(t, admin, s.url+"/ui/overview"); !strings.Contains(page, "beta") {
		t.Errorf("the admin's overview lost beta's counts after acme's look")
	}
	s.c.Add(ctx, rota.AddParams{Type: "t", Group: "acme"})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Errorf("acme's page was not told of its own change")
	}
}

// TestOutOfReachLikeMissing: to a scoped token, another tenant's job on
// the dashboard is a missing job word for word: its page and each of its
// actions answer the same status and text as for an id no job has, and
// change nothing.
func TestOutOfReachLikeMissing(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	theirs, _ := s.c.Add(ctx, rota.AddParams{Type: "t", Group: "beta", Data: json.RawMessage(`{"secret":"beta-only"}`)})
	id := theirs.Job.ID
	before, _ := s.c.Get(ctx, id)
	tok := createToken(t, s, wire.CreateTokenRequest{Name: "acme", Groups: []string{"acme"}})
	cl, csrf := signIn(t, s, tok)
	const missing = 987654321
	norm := func(body string, id int64) string {
		body = regexp.MustCompile(`name="csrf" value="[^"]*"`).ReplaceAllString(body, "")
		return regexp.MustCompile(`(?i)(job |/jobs/)`+strconv.FormatInt(id, 10)+`\b`).ReplaceAllString(body, "${1}N")
	}
	for _, action := range []string{"", "cancel", "retry", "reschedule", "edit", "remove"} {
		do := func(id int64) (*http.Response, string) {
			if action == "" {
				return get(t, cl, fmt.Sprintf("%s/jobs/%d", s.url, id))
			}
			return postForm(t, cl, fmt.Sprintf("%s/jobs/%d/%s", s.url, id, action),
				url.Values{"csrf": {csrf}, "data": {`{"acme":1}`}, "run_at": {"2030-01-01T00:00"}})
		}
		out, outBody := do(id)
		miss, missBody := do(missing)
		if out.StatusCode != miss.StatusCode || norm(outBody, id) != norm(missBody, missing) {
			a, b := norm(outBody, id), norm(missBody, missing)
			i := 0
			for i < min(len(a), len(b)) && a[i] == b[i] {
				i++
			}
			t.Errorf("action %q: beta's job is answered %d, a missing one %d; the pages differ at %q / %q", action,
				out.StatusCode, miss.StatusCode, a[max(0, i-80):min(len(a), i+80)], b[max(0, i-80):min(len(b), i+80)])
		}
		if strings.Contains(outBody, "beta-only") {
			t.Errorf("action %q shows beta's data", action)
		}
	}
	if after, _ := s.c.Get(ctx, id); !reflect.DeepEqual(before, after) {
		t.Errorf("acme changed beta's job:\nbefore %+v\nafter  %+v", before, after)
	}
}

// TestScopedTokenCannotRaiseAWeight: on the Groups page, a tenant lowers
// its group's weight but cannot raise it above other tenants' groups.
func TestScopedTokenCannotRaiseAWeight(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	tok := createToken(t, s, wire.CreateTokenRequest{Name: "acme", Groups: []string{"acme"}})
	cl, csrf := signIn(t, s, tok)
	weight := func() float64 {
		gcs, _ := s.c.GroupConfigs(ctx)
		for _, g := range gcs {
			if g.Group == "acme" && g.Type == "t" {
				return g.Weight
			}
		}
		return 0
	}
	resp, page := postForm(t, cl, s.url+"/groups", url.Values{"csrf": {csrf}, "group": {"acme"}, "type": {"t"}, "weight": {"1000"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "not raise it above 1") || weight() != 0 {
		t.Errorf("acme raising its weight to 1000: %d, weight %g", resp.StatusCode, weight())
	}
	if resp, _ := postForm(t, cl, s.url+"/groups", url.Values{"csrf": {csrf}, "group": {"acme"}, "type": {"t"}, "weight": {"0.5"}}); resp.StatusCode != http.StatusSeeOther || weight() != 0.5 {
		t.Errorf("acme lowering its weight to 0.5: %d, weight %g", resp.StatusCode, weight())
	}
}

// TestWaitingLongestOnlyDue: the overview's "Waiting longest" lists due
// jobs only, with how long they have waited since due; a daily job due
// tomorrow is not waiting.
func TestWaitingLongestOnlyDue(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	daily, err := s.c.Add(ctx, rota.AddParams{Type: "report.daily", RunAt: time.Now().Add(18 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	late, err := s.c.Add(ctx, rota.AddParams{Type: "email.send", RunAt: time.Now().Add(-90 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	// A later job of email.send, due now: the one due first waits longest.
	if _, err := s.c.Add(ctx, rota.AddParams{Type: "email.send"}); err != nil {
		t.Fatal(err)
	}
	admin, _ := signIn(t, s, "adm")
	_, page := get(t, admin, s.url+"/ui/overview")
	start := strings.Index(page, "<h2>Waiting longest</h2>")
	if start < 0 {
		t.Fatalf("no Waiting longest section on the overview:\n%s", page)
	}
	section := page[start:]
	section = section[:strings.Index(section, "</section>")]
	if strings.Contains(section, "report.daily") || strings.Contains(section, fmt.Sprintf("#%d<", daily.Job.ID)) {
		t.Errorf("Waiting longest lists the daily job due in 18h:\n%s", section)
	}
	if !strings.Contains(section, fmt.Sprintf("/jobs/%d\">#%d<", late.Job.ID, late.Job.ID)) || !strings.Contains(section, "data-wait>9") {
		t.Errorf("Waiting longest does not show job %d of email.send waiting 90 s since due:\n%s", late.Job.ID, section)
	}
}

// TestTypesFailedRetention: the Types page shows how long a type's failed
// jobs are kept ("until removed" by default) and the admin sets it; a bad
// value is refused, naming the field, and changes nothing.
func TestTypesFailedRetention(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	if _, err := s.c.Add(ctx, rota.AddParams{Type: "mail"}); err != nil {
		t.Fatal(err)
	}
	admin, csrf := signIn(t, s, "adm")
	if _, page := get(t, admin, s.url+"/types"); !strings.Contains(page, "Failed jobs kept") || !strings.Contains(page, "until removed") {
		t.Errorf("the Types page does not say failed jobs are kept until removed")
	}
	failedRetention := func() time.Duration {
		tcs, err := s.c.TypeConfigs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range tcs {
			if tc.Type == "mail" {
				return tc.FailedRetention
			}
		}
		return -1
	}
	resp, _ := postForm(t, admin, s.url+"/types/mail", url.Values{"csrf": {csrf}, "failed_retention": {"720h"}})
	if resp.StatusCode != http.StatusSeeOther || failedRetention() != 720*time.Hour {
		t.Errorf("setting failed jobs kept 720h: %d, now %v", resp.StatusCode, failedRetention())
	}
	resp, page := postForm(t, admin, s.url+"/types/mail", url.Values{"csrf": {csrf}, "failed_retention": {"10ms"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "failed retention 10ms") || failedRetention() != 720*time.Hour {
		t.Errorf("a failed retention of 10ms: %d, now %v:\n%s", resp.StatusCode, failedRetention(), page)
	}
}

// TestScopedTokenWorkflowsAndBatches: a scoped session's job page draws
// no job of another tenant's that depends on its job (a dependency across
// tenants is the admin's to make), and another tenant's batch with nothing
// in it yet is a missing one, on its page and in the list. Before, the
// workflow drew beta's dependant, and acme's empty batch was beta's to
// see.
func TestScopedTokenWorkflowsAndBatches(t *testing.T) {
	s := newSite(t, "adm")
	ctx := context.Background()
	a, err := s.c.Add(ctx, rota.AddParams{Type: "t", Group: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.c.Add(ctx, rota.AddParams{Type: "t", Group: "beta", After: []int64{a.Job.ID}})
	if err != nil {
		t.Fatal(err)
	}
	acmeTok := createToken(t, s, wire.CreateTokenRequest{Name: "acme", Groups: []string{"acme"}})
	betaTok := createToken(t, s, wire.CreateTokenRequest{Name: "beta", Groups: []string{"beta"}})
	acme, _ := signIn(t, s, acmeTok)
	beta, _ := signIn(t, s, betaTok)
	if _, page := get(t, acme, fmt.Sprintf("%s/jobs/%d", s.url, a.Job.ID)); strings.Contains(page, fmt.Sprintf(`data-job="%d"`, b.Job.ID)) {
		t.Errorf("acme's job page draws beta's dependant %d", b.Job.ID)
	}
	// A job of acme's after beta's: beta's is drawn by its id and state
	// alone (not as removed, and without its type).
	c, err := s.c.Add(ctx, rota.AddParams{Type: "t", Group: "acme", After: []int64{b.Job.ID}})
	if err != nil {
		t.Fatal(err)
	}
	_, page := get(t, acme, fmt.Sprintf("%s/jobs/%d", s.url, c.Job.ID))
	node := regexp.MustCompile(fmt.Sprintf(`<a href="/jobs/%d"[^>]*data-state="([a-z]+)"`, b.Job.ID)).FindStringSubmatch(page)
	if node == nil || node[1] != "waiting" {
		t.Errorf("acme's page of job %d draws beta's dependency %d as %v, want by its state, waiting", c.Job.ID, b.Job.ID, node)
	}
	admin, _ := signIn(t, s, "adm")
	if _, page := get(t, admin, fmt.Sprintf("%s/jobs/%d", s.url, a.Job.ID)); !strings.Contains(page, fmt.Sprintf(`data-job="%d"`, b.Job.ID)) {
		t.Errorf("the admin's job page does not draw the dependant %d", b.Job.ID)
	}

	reach, err := rota.NewReach([]string{"acme"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	empty, _, err := s.c.AddBatch(rota.WithReach(ctx, reach), rota.NewBatch{Open: true, Description: "acme empty batch"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, page := get(t, beta, fmt.Sprintf("%s/batches/%d", s.url, empty.ID)); resp.StatusCode != http.StatusNotFound || strings.Contains(page, "acme empty batch") {
		t.Errorf("beta opens acme's empty batch: %d", resp.StatusCode)
	}
	if _, list := get(t, beta, s.url+"/batches"); strings.Contains(list, fmt.Sprintf(`data-batch="%d"`, empty.ID)) {
		t.Errorf("beta's Batches page lists acme empty batch")
	}
	if resp, page := get(t, acme, fmt.Sprintf("%s/batches/%d", s.url, empty.ID)); resp.StatusCode != http.StatusOK || !strings.Contains(page, "acme empty batch") {
		t.Errorf("acme opens its empty batch: %d", resp.StatusCode)
	}
}
