package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// typePaused reads whether a type is paused, through the API.
func (s *server) typePaused(t *testing.T, typ string) bool {
	t.Helper()
	var got struct {
		Types []struct {
			Type   string `json:"type"`
			Paused bool   `json:"paused"`
		} `json:"types"`
	}
	body := s.httpGet(t, "/v1/types")
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("GET /v1/types: %v: %s", err, body)
	}
	for _, tc := range got.Types {
		if tc.Type == typ {
			return tc.Paused
		}
	}
	t.Fatalf("no type %q in %s", typ, body)
	return false
}

// TestDashboardTypeNamesStayInTheirPath: a type's name cannot steer the
// admin's forms elsewhere. A name with ".." segments is refused when
// added (by the store, so every interface agrees); names with a slash or
// a "#" are legitimate, and the admin's Pause on the Types page pauses
// exactly that type, and touches no job.
func TestDashboardTypeNamesStayInTheirPath(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	var ten int64
	for range 10 {
		ten = s.add(t, "report", `{}`, "--group", "globex-1")
	}
	// The name that would turn "Pause" into "remove job 10".
	var added []string
	r := s.run(t, "", "add", "zz/../../jobs/10/remove", `{}`)
	if r.code == 0 || !strings.Contains(r.stderr, `".." path segment`) {
		t.Errorf("adding a type with .. segments: %v", r)
		if r.code == 0 { // then at least the admin's Pause must pause it
			added = append(added, "zz/../../jobs/10/remove")
		}
	}
	for _, typ := range []string{"www-prod/UserActivityEvaluator", "report#x", "report?x=1", "a%2F..%2Fb"} {
		if r := s.run(t, "", "add", typ, `{}`, "--group", "acme-1"); r.code != 0 {
			if typ == "report?x=1" { // a GLOB metacharacter: not a type name (yet)
				continue
			}
			t.Fatalf("adding type %q: %v", typ, r)
		}
		added = append(added, typ)
	}

	ctx := browser(t, 1280, 800)
	signIn(t, ctx, s.URL, "adm")
	for _, typ := range added {
		sel := fmt.Sprintf(`//tr[td/a[text()=%q]]//form[input[@name="op"]]//button`, typ)
		run(t, ctx, "pause "+typ,
			chromedp.Navigate(s.URL+"/types"),
			chromedp.WaitVisible(sel, chromedp.BySearch),
			chromedp.Click(sel, chromedp.BySearch),
			chromedp.WaitVisible(`.notice`),
		)
		if !s.typePaused(t, typ) {
			t.Errorf("after Pause on type %q it is not paused", typ)
		}
	}
	if s.typePaused(t, "report") {
		t.Errorf("pausing report#x paused report")
	}
	if j := s.get(t, ten); j.State != "pending" {
		t.Errorf("job %d is %s after the admin paused types", ten, j.State)
	}
	// The links to the type's jobs find them.
	var rows int
	run(t, ctx, "the type's jobs",
		chromedp.Navigate(s.URL+"/types"),
		chromedp.Click(`//td/a[text()="www-prod/UserActivityEvaluator"]`, chromedp.BySearch),
		chromedp.WaitVisible(`table.jobs`),
		chromedp.Evaluate(`document.querySelectorAll("table.jobs tbody tr").length`, &rows),
	)
	if rows != 1 {
		t.Errorf("the type's link lists %d jobs, want 1", rows)
	}
}

// attacker serves a page on another loopback port (another origin, the
// same site) that posts a form to the dashboard as soon as it loads.
func attacker(t *testing.T, action string, fields map[string]string) string {
	t.Helper()
	var inputs strings.Builder
	for k, v := range fields {
		fmt.Fprintf(&inputs, `<input type="hidden" name="%s" value="%s">`, html.EscapeString(k), html.EscapeString(v))
	}
	page := fmt.Sprintf(`<!doctype html><title>cats</title><form id=f method=post action="%s">%s</form>
<script>document.getElementById("f").submit()</script>`, html.EscapeString(action), inputs.String())
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// signedInAs returns the badge of the signed-in token on the dashboard,
// or "" on the sign-in page.
func signedInAs(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	var who string
	var nav bool
	run(t, ctx, "who is signed in",
		chromedp.Navigate(url+"/jobs"),
		chromedp.WaitVisible(`main`),
		chromedp.Evaluate(`!!document.querySelector("nav")`, &nav),
	)
	if !nav {
		return ""
	}
	run(t, ctx, "badge", chromedp.Text(`.who .badge`, &who))
	return who
}

// TestDashboardSignInFromElsewhere: a page on another origin (another port
// of this host) can neither sign a browser in with its own token nor sign
// it out; a sign-in link cannot send the browser to another origin.
func TestDashboardSignInFromElsewhere(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	mallory := strings.TrimSpace(s.rota(t, "token", "create", "mallory"))
	ctx := browser(t, 1280, 800)

	// Signing a victim in with the attacker's token.
	// (The attacker's page has no <main>: the dashboard's answer does.)
	run(t, ctx, "the attacker's sign-in page", chromedp.Navigate(attacker(t, s.URL+"/login", map[string]string{"token": mallory, "next": "/"})),
		chromedp.WaitVisible(`main`))
	if who := signedInAs(t, ctx, s.URL); who != "" {
		t.Errorf("a page elsewhere signed the browser in as %q", who)
	}

	// A link to sign in whose next= a browser would read as another origin.
	var visits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		visits.Add(1)
		fmt.Fprint(w, "elsewhere")
	}))
	defer elsewhere.Close()
	host := strings.TrimPrefix(elsewhere.URL, "http://")
	for _, next := range []string{"/\t/" + host + "/", "/\\" + host + "/", "/\n/" + host + "/", "//" + host + "/"} {
		ctx := browser(t, 1280, 800)
		run(t, ctx, "sign in with next="+next,
			chromedp.Navigate(s.URL+"/login?next="+url.QueryEscape(next)),
			chromedp.WaitVisible(`input[name=token]`),
			chromedp.SendKeys(`input[name=token]`, "adm"),
			chromedp.Submit(`input[name=token]`),
		)
		// Wait for the page after sign-in, wherever it is.
		var at string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			err := chromedp.Run(tctx, chromedp.Location(&at))
			cancel()
			if err == nil && !strings.Contains(at, "/login") {
				break
			}
		}
		if n := visits.Swap(0); n > 0 || !strings.HasPrefix(at, s.URL+"/") || strings.Contains(at, "/login") {
			t.Errorf("signing in with next=%q went to %s (the other origin had %d visits)", next, at, n)
		}
	}

	// Signing a victim out.
	ctx = browser(t, 1280, 800)
	signIn(t, ctx, s.URL, "adm")
	run(t, ctx, "the attacker's sign-out page", chromedp.Navigate(attacker(t, s.URL+"/logout", nil)),
		chromedp.WaitVisible(`main`))
	if who := signedInAs(t, ctx, s.URL); who != "admin" {
		t.Errorf("after a page elsewhere posted a sign-out, the dashboard shows %q signed in", who)
	}
	// Signing out from the dashboard itself works, and ends the session.
	run(t, ctx, "sign out", chromedp.Navigate(s.URL+"/jobs"), chromedp.Click(`form[action="/logout"] button`), chromedp.WaitVisible(`input[name=token]`))
	if who := signedInAs(t, ctx, s.URL); who != "" {
		t.Errorf("after signing out, the dashboard shows %q signed in", who)
	}
}

// TestServeDataIsOwnersOnly: the data directory and database rota serve
// makes are the owner's alone.
func TestServeDataIsOwnersOnly(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	serveAt(t, "127.0.0.1:0", data)
	for name, want := range map[string]os.FileMode{data: 0o700 | os.ModeDir, filepath.Join(data, "rota.db"): 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s is %v, want %v", name, fi.Mode(), want)
		}
	}
}

// TestServeTrustedProxy: --trusted-proxy makes a proxy's X-Forwarded-Proto
// count for the dashboard's Secure cookie (and nobody else's); serve's
// help recommends --auth-token-file.
func TestServeTrustedProxy(t *testing.T) {
	s := startServer(t, "--auth-token", "adm", "--trusted-proxy", "127.0.0.1")
	req, _ := http.NewRequest("GET", s.URL+"/login", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := resp.Cookies(); len(c) != 1 || !c[0].Secure {
		t.Errorf("through a trusted proxy over HTTPS, the cookies are %v", c)
	}
	// Without the flag, the header is anyone's and counts for nothing.
	plain := startServer(t, "--auth-token", "adm")
	req, _ = http.NewRequest("GET", plain.URL+"/login", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := resp.Cookies(); len(c) != 1 || c[0].Secure {
		t.Errorf("without --trusted-proxy, X-Forwarded-Proto: https made the cookies %v", c)
	}
	r := s.run(t, "", "serve", "--trusted-proxy", "10.0.0.0/33", "--data", t.TempDir())
	if r.code == 0 || !strings.Contains(r.stderr, "--trusted-proxy") {
		t.Errorf("a bad --trusted-proxy: %v", r)
	}
	r = s.run(t, "", "serve", "--help")
	if !strings.Contains(r.stdout, "prefer --auth-token-file") && !strings.Contains(r.stdout, "Prefer\n--auth-token-file") {
		t.Errorf("serve --help does not recommend --auth-token-file:\n%s", r.stdout)
	}
}

// httpDo sends an API request with the server's token and fails the test
// unless it succeeds.
func (s *server) httpDo(t *testing.T, method, path, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
}

// TestDashboardScopedTokenSeesItsOwn: a token scoped to acme-* sees acme's
// jobs only, on every page: no name or count of globex's, the overview's
// chart and legend included.
func TestDashboardScopedTokenSeesItsOwn(t *testing.T) {
	s := startServer(t, "--auth-token", "adm")
	s.token = "adm"
	acmeJob := s.add(t, "report", `{}`, "--group", "acme-1", "--key", "r-1")
	for range 2 {
		s.add(t, "report", `{}`, "--group", "acme-1")
	}
	for range 4 {
		s.add(t, "report", `{}`, "--group", "globex-hr")
	}
	for range 3 {
		s.add(t, "globex-payroll", `{}`, "--group", "globex-hr")
	}
	s.add(t, "globex-nightly", `{}`, "--group", "globex-hr", "--schedule", "DAILY")
	s.httpDo(t, "PUT", "/v1/types/globex-payroll", `{"lease_timeout":"2m"}`)
	s.httpDo(t, "PUT", "/v1/groups", `{"group":"globex-hr","weight":7}`)
	acme := strings.TrimSpace(s.rota(t, "token", "create", "acme", "--groups", "acme-*"))

	ctx := browser(t, 1280, 800)
	signIn(t, ctx, s.URL, acme)
	var legend string
	run(t, ctx, "the overview's chart", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(`.legend`), chromedp.Text(`.legend`, &legend))
	// (The adds may straddle a minute: the peak is at most acme's 3.)
	peak := 0
	if m := regexp.MustCompile(`peak (\d+)/min`).FindStringSubmatch(legend); m != nil {
		peak, _ = strconv.Atoi(m[1])
	}
	if !strings.Contains(legend, "queued 3 ") || peak < 1 || peak > 3 {
		t.Errorf("acme's chart legend says %q, want queued 3 and a peak of 3/min at most (acme's jobs only)", legend)
	}
	for _, path := range []string{"/", "/ui/overview", "/jobs", "/jobs?state=pending", "/jobs?type=*", "/jobs?q=report:r-1",
		fmt.Sprintf("/jobs/%d", acmeJob), "/recurring", "/types", "/groups"} {
		var page string
		run(t, ctx, "page "+path, chromedp.Navigate(s.URL+path), chromedp.WaitReady(`body`), chromedp.OuterHTML(`html`, &page))
		if strings.Contains(page, "globex") {
			i := strings.Index(page, "globex")
			t.Errorf("%s shows globex: …%s…", path, page[max(0, i-200):min(len(page), i+100)])
		}
	}
	// The admin's chart counts every tenant's jobs.
	admin := browser(t, 1280, 800)
	signIn(t, admin, s.URL, "adm")
	run(t, admin, "the admin's chart", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(`.legend`), chromedp.Text(`.legend`, &legend))
	if !strings.Contains(legend, "queued 11 ") {
		t.Errorf("the admin's chart legend says %q, want queued 11", legend)
	}
}
