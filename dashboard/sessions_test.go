package dashboard_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/dashboard"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
)

// TestSafeNext: the page after sign-in stays on this site, whatever a link
// elsewhere put in ?next=.
func TestSafeNext(t *testing.T) {
	s := newSite(t, "adm")
	for _, tc := range []struct{ next, want string }{
		{"/jobs?state=failed", "/jobs?state=failed"},
		{"/jobs/3", "/jobs/3"},
		{"/types?done=type", "/types?done=type"},
		{"/jobs?type=a%2Fb", "/jobs?type=a%2Fb"},
		{"/%09/evil.example/", "/%09/evil.example/"}, // escaped: a path on this site
		{"", "/"},
		{"jobs", "/"},
		{"//evil.example/", "/"},
		{"///evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"\\/evil.example", "/"},
		{"/a\\b", "/"},
		{"/\t/evil.example/", "/"},
		{"/\n/evil.example/", "/"},
		{"/\r\n/evil.example/", "/"},
		{"\t//evil.example/", "/"},
		{"/ /evil.example/", "/"},
		{"/\x00/evil.example/", "/"},
		{"/\x7f/evil.example/", "/"},
		{"/\u3000/evil.example/", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"http:/evil.example", "/"},
		{"/" + strings.Repeat("a", 3000), "/"},
	} {
		resp, _ := login(t, s, browser(t), "adm", tc.next)
		if got := resp.Header.Get("Location"); got != tc.want {
			t.Errorf("next=%q sent the browser to %q, want %q", tc.next, got, tc.want)
		}
		// The sign-in page's form carries only a safe next, too.
		_, page := get(t, browser(t), s.url+"/login?next="+url.QueryEscape(tc.next))
		if tc.want == "/" && tc.next != "" && strings.Contains(page, `name="next" value="`+tc.next+`"`) {
			t.Errorf("the sign-in form carries next=%q", tc.next)
		}
	}
}

// TestLoginAndLogoutNeedTheirForm: a page elsewhere can neither sign a
// browser in (with its own token) nor out.
func TestLoginAndLogoutNeedTheirForm(t *testing.T) {
	s := newSite(t, "adm")
	hasSession := func(resp *http.Response) bool {
		for _, c := range resp.Cookies() {
			if (c.Name == "rota_session") && c.MaxAge >= 0 && c.Value != "" {
				return true
			}
		}
		return false
	}
	// No form token: refused.
	cl := browser(t)
	resp, body := postForm(t, cl, s.url+"/login", url.Values{"token": {"adm"}, "next": {"/"}})
	if resp.StatusCode != http.StatusForbidden || hasSession(resp) || !strings.Contains(body, "another site") {
		t.Errorf("a sign-in without the form's token: %d, session %v", resp.StatusCode, hasSession(resp))
	}
	// Another browser's form token: refused.
	other := loginForm(t, s, browser(t))
	loginForm(t, s, cl)
	resp, _ = postForm(t, cl, s.url+"/login", url.Values{"token": {"adm"}, "csrf": {other}})
	if resp.StatusCode != http.StatusForbidden || hasSession(resp) {
		t.Errorf("a sign-in with another browser's form token: %d", resp.StatusCode)
	}
	// The right form, but posted from another origin (another port of
	// this host): refused.
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "same-site"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "http://127.0.0.1:1"},
	} {
		form := url.Values{"token": {"adm"}, "csrf": {loginForm(t, s, cl)}}
		req, _ := http.NewRequest("POST", s.url+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || hasSession(resp) {
			t.Errorf("a sign-in with %v: %d", h, resp.StatusCode)
		}
	}

	// Sign-out needs the session's form token.
	cl, csrf := signIn(t, s, "adm")
	resp, _ = postForm(t, cl, s.url+"/logout", url.Values{})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a sign-out without the form's token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, cl, s.url+"/jobs"); resp.StatusCode != http.StatusOK {
		t.Errorf("after a refused sign-out, /jobs answers %d", resp.StatusCode)
	}
	resp, _ = postForm(t, cl, s.url+"/logout", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?done=signed-out" {
		t.Errorf("sign-out: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestSessions: the cookie holds a random id, not the token; signing out
// ends the session on the server (its cookie is worth nothing after), so
// does revoking its token (a stream open with it ends too), and the
// sessions are bounded, the oldest ending first.
func TestSessions(t *testing.T) {
	s := newSiteWith(t, "adm", dashboard.Config{MaxSessions: 3}, false)
	cl, csrf := signIn(t, s, "adm")
	u, _ := url.Parse(s.url)
	cookie := cl.Jar.Cookies(u)
	postForm(t, cl, s.url+"/logout", url.Values{"csrf": {csrf}})
	replay := browser(t)
	replay.Jar.SetCookies(u, cookie)
	resp, _ := get(t, replay, s.url+"/jobs")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "error=ended") {
		t.Errorf("a signed-out session's cookie, replayed: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page := get(t, replay, s.url+resp.Header.Get("Location"))
	if !strings.Contains(page, "Your session ended") {
		t.Errorf("the sign-in page after an ended session does not say so")
	}

	// A revoked token ends its sessions, and their streams.
	tok := createToken(t, s, wire.CreateTokenRequest{Name: "temp"})
	tcl, _ := signIn(t, s, tok)
	stream, err := tcl.Get(s.url + "/ui/stream")
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v %v", err, stream.StatusCode)
	}
	defer stream.Body.Close()
	req, _ := http.NewRequest("DELETE", s.url+"/v1/tokens/temp", nil)
	req.Header.Set("Authorization", "Bearer adm")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %v %v", err, resp.StatusCode)
	}
	if resp, _ := get(t, tcl, s.url+"/jobs"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a revoked token's session: %d", resp.StatusCode)
	}
	ended := make(chan string, 1)
	go func() {
		var last string
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event:") {
				last = sc.Text()
			}
		}
		ended <- last
	}()
	select {
	case last := <-ended:
		if last != "event: signed-out" {
			t.Errorf("the stream's last event is %q", last)
		}
	case <-time.After(3 * httpapi.TokenCacheTTL):
		t.Errorf("a revoked token's stream is still open after %v", 3*httpapi.TokenCacheTTL)
	}

	// Three sessions at most: a fourth sign-in ends the oldest.
	var cls []*http.Client
	for range 4 {
		c, _ := signIn(t, s, "adm")
		cls = append(cls, c)
	}
	for i, c := range cls {
		resp, _ := get(t, c, s.url+"/jobs")
		if want := map[bool]int{true: http.StatusSeeOther, false: http.StatusOK}[i == 0]; resp.StatusCode != want {
			t.Errorf("session %d of 4 with a bound of 3: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

// TestSecureCookie: the session cookie is Secure over TLS, or through a
// trusted proxy that says the request came over HTTPS; the header from
// anyone else changes nothing.
func TestSecureCookie(t *testing.T) {
	secure := func(t *testing.T, s *site, cl *http.Client, proto string) bool {
		t.Helper()
		form := url.Values{"token": {"adm"}, "next": {"/"}, "csrf": {loginForm(t, s, cl)}}
		req, _ := http.NewRequest("POST", s.url+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			if c.Name == "rota_session" {
				return c.Secure
			}
		}
		t.Fatalf("no session cookie: %d", resp.StatusCode)
		return false
	}
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	for _, tc := range []struct {
		name    string
		proxies []netip.Prefix
		proto   string
		want    bool
	}{
		{"plain HTTP", nil, "", false},
		{"an untrusted X-Forwarded-Proto", nil, "https", false},
		{"a trusted proxy over HTTPS", []netip.Prefix{loopback}, "https", true},
		{"a trusted proxy over HTTP", []netip.Prefix{loopback}, "http", false},
		{"a trusted proxy, no header", []netip.Prefix{loopback}, "", false},
		{"a proxy from another network", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "https", false},
	} {
		s := newSiteWith(t, "adm", dashboard.Config{TrustedProxies: tc.proxies}, false)
		if got := secure(t, s, browser(t), tc.proto); got != tc.want {
			t.Errorf("%s: Secure is %v, want %v", tc.name, got, tc.want)
		}
	}
	s := newSiteWith(t, "adm", dashboard.Config{}, true)
	if !secure(t, s, tlsBrowser(t, s), "") {
		t.Errorf("over TLS the cookie is not Secure")
	}
}

// TestMessagesAreFixed: ?error= and ?done= are codes of fixed messages; a
// link cannot make a page say what it likes.
func TestMessagesAreFixed(t *testing.T) {
	s := newSite(t, "adm")
	evil := "Your account is suspended: call +1 555 0100"
	_, page := get(t, browser(t), s.url+"/login?error="+url.QueryEscape(evil))
	if strings.Contains(page, "suspended") {
		t.Errorf("the sign-in page shows the link's text")
	}
	cl, _ := signIn(t, s, "adm")
	for _, path := range []string{"/jobs", "/types", "/groups"} {
		_, page := get(t, cl, fmt.Sprintf("%s%s?done=%s", s.url, path, url.QueryEscape(evil)))
		if strings.Contains(page, "suspended") {
			t.Errorf("%s shows the link's text", path)
		}
	}
	if _, page := get(t, cl, s.url+"/types?done=type"); !strings.Contains(page, "Done: type settings saved.") {
		t.Errorf("/types?done=type does not say the settings were saved")
	}
}

// TestSessionLifetime: a session ends at its lifetime, whatever its cookie
// says.
func TestSessionLifetime(t *testing.T) {
	s := newSiteWith(t, "adm", dashboard.Config{SessionLifetime: 300 * time.Millisecond}, false)
	cl, _ := signIn(t, s, "adm")
	time.Sleep(400 * time.Millisecond)
	if resp, _ := get(t, cl, s.url+"/jobs"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "error=ended") {
		t.Errorf("a session past its lifetime: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
