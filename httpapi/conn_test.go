package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// rawRequest sends one request as given: its Host, its headers, its body
// (a string, or nil), with the server's token unless hdr gives an
// Authorization.
func (s *testServer) rawRequest(t *testing.T, method, target, host, body string, hdr ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
	s.check(t, method, target, r)
	return r
}

func (s *testServer) jobCount(t *testing.T) int {
	t.Helper()
	n := 0
	for _, v := range s.stats(t).ByState {
		n += int(v)
	}
	return n
}

// TestJSONBodiesNeedJSONContentType: a body not labelled
// application/json (a charset may follow) is refused with 415 naming what
// is wrong, on every route that takes one, and changes nothing; requests
// without a body need no Content-Type.
func TestJSONBodiesNeedJSONContentType(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	j := s.add(t, map[string]any{"type": "mail"})
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/jobs", `{"type":"mail"}`},
		{"POST", "/v1/jobs", `{"jobs":[{"type":"mail"}]}`},
		{"PATCH", path(j.ID, ""), `{"priority":5}`},
		{"POST", path(j.ID, "resubmit"), `{"data":{"x":1}}`},
		{"POST", "/v1/accept", `{"types":["mail"]}`},
		{"POST", "/v1/finish", `{"items":[]}`},
		{"PUT", "/v1/types/mail", `{"lease_timeout":"1m"}`},
		{"PUT", "/v1/groups", `{"group":"g","weight":2}`},
	} {
		before := s.snapshot(t)
		for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
			hdr := []string{"Content-Type", ct}
			if ct == "" {
				hdr = nil
			}
			r := s.rawRequest(t, c.method, c.path, "", c.body, hdr...)
			want := fmt.Sprintf("%q", ct)
			if ct == "" {
				want = "no Content-Type"
			}
			wantError(t, r, http.StatusUnsupportedMediaType, wire.CodeMediaType, want)
		}
		if after := s.snapshot(t); after != before {
			t.Errorf("%s %s with another Content-Type changed the jobs:\nbefore %s\nafter  %s", c.method, c.path, before, after)
		}
	}
	// JSON, with a charset or in another case, is taken.
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		if r := s.rawRequest(t, "POST", "/v1/jobs", "", `{"type":"mail"}`, "Content-Type", ct); r.Status != http.StatusCreated {
			t.Errorf("an add as %q: %s", ct, r)
		}
	}
	// No body, no Content-Type needed.
	if r := s.rawRequest(t, "POST", path(j.ID, "cancel"), "", ""); r.Status != http.StatusOK {
		t.Errorf("a cancel without a body: %s", r)
	}
	if r := s.rawRequest(t, "POST", path(j.ID, "resubmit"), "", ""); r.Status != http.StatusOK {
		t.Errorf("a resubmit without a body: %s", r)
	}
}

// TestOpenServerAnswersItsNamesOnly: a server without a token answers only
// to localhost, IP addresses and the names it was given (Config.Hosts),
// with any port; another name, as a page of another site rebinding its
// name to the server's address would send, is refused and changes
// nothing. A server with a token answers to every name.
func TestOpenServerAnswersItsNamesOnly(t *testing.T) {
	s := newServer(t, httpapi.Config{Hosts: []string{"rota.internal"}})
	for _, host := range []string{"evil.example", "evil.example:7700", "localhost.evil.example", "127.0.0.1.nip.io:80", "rota.internal.evil.example"} {
		r := s.rawRequest(t, "POST", "/v1/jobs", host, `{"type":"mail"}`, "Content-Type", "application/json")
		wantError(t, r, http.StatusForbidden, wire.CodeForbidden, fmt.Sprintf("Host %q is not a name of this server", host))
		if r := s.rawRequest(t, "GET", "/healthz", host, ""); r.Status != http.StatusForbidden {
			t.Errorf("GET /healthz as %s: %s", host, r)
		}
	}
	if n := s.jobCount(t); n != 0 {
		t.Fatalf("refused adds added %d jobs", n)
	}
	for _, host := range []string{"localhost", "localhost:7700", "LOCALHOST.", "127.0.0.1", "127.0.0.1:9", "[::1]:7700", "[::1]", "10.1.2.3:7700", "rota.internal:7700"} {
		if r := s.rawRequest(t, "POST", "/v1/jobs", host, `{"type":"mail"}`, "Content-Type", "application/json"); r.Status != http.StatusCreated {
			t.Errorf("an add as Host %s: %s", host, r)
		}
	}
	everyName := newServer(t, httpapi.Config{Hosts: []string{"*"}})
	if r := everyName.rawRequest(t, "POST", "/v1/jobs", "rota.example.com", `{"type":"mail"}`, "Content-Type", "application/json"); r.Status != http.StatusCreated {
		t.Errorf("a server with Hosts * refused a name: %s", r)
	}
	closed := newServer(t, httpapi.Config{AuthToken: "adm"})
	if r := closed.rawRequest(t, "POST", "/v1/jobs", "rota.example.com", `{"type":"mail"}`, "Content-Type", "application/json"); r.Status != http.StatusCreated {
		t.Errorf("a server with a token refused a name: %s", r)
	}
}

// TestCrossOriginChangesRefused: a change that a browser page of another
// origin asks for (Sec-Fetch-Site, or Origin from an older browser) is
// refused, even without a body (a cancel); reads, the same origin and
// clients that are not browsers pass.
func TestCrossOriginChangesRefused(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	j := s.add(t, map[string]any{"type": "mail"})
	for _, hdr := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"}, // another port of the same host
		{"Origin", "http://127.0.0.1:1"},
		{"Origin", "null"},
	} {
		r := s.rawRequest(t, "POST", path(j.ID, "cancel"), "", "", hdr...)
		wantError(t, r, http.StatusForbidden, wire.CodeForbidden, "another site")
		if r := s.rawRequest(t, "GET", path(j.ID, ""), "", "", hdr...); r.Status != http.StatusOK {
			t.Errorf("a read with %v: %s", hdr, r)
		}
	}
	if got := s.get(t, j.ID); got.State != store.Pending {
		t.Fatalf("a refused cancel left the job %s", got.State)
	}
	for _, hdr := range [][]string{{"Sec-Fetch-Site", "same-origin"}, {"Sec-Fetch-Site", "none"}, {"Origin", s.URL}} {
		if r := s.rawRequest(t, "POST", "/v1/jobs", "", `{"type":"mail"}`, append([]string{"Content-Type", "application/json"}, hdr...)...); r.Status != http.StatusCreated {
			t.Errorf("an add with %v: %s", hdr, r)
		}
	}
}

// TestEventsLimitPatterns: a stream of more than store.MaxStreamPatterns
// type patterns is refused, naming the limit.
func TestEventsLimitPatterns(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	q := ""
	for i := range store.MaxStreamPatterns + 1 {
		q += fmt.Sprintf("&type=t%d.*", i)
	}
	r := s.do(t, "GET", "/v1/events?"+q[1:], nil)
	wantError(t, r, http.StatusBadRequest, wire.CodeInvalid, fmt.Sprintf("more than %d", store.MaxStreamPatterns))
}

// streamAs opens /v1/events on url with a bearer token and sends the
// names of its events; the channel closes when the stream ends.
func streamAs(t *testing.T, url, secret string) <-chan string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url+"/v1/events?type=t", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("events: %d", resp.StatusCode)
	}
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				ch <- name
			}
		}
	}()
	return ch
}

// secondNode serves the API of e's engine on another port with its own
// token cache: another node of the same store.
func secondNode(t *testing.T, e *tokenEnv) string {
	api := httpapi.New(e.c, httpapi.Config{AuthToken: "admin-secret", Logger: quiet()})
	ts := httptest.NewServer(api)
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close(); api.Close() })
	return ts.URL
}

// TestRevocationEndsStreams: event streams of a named token, on the node
// that revoked it and on another node, end with a "revoked" event within
// TokenCacheTTL of the revocation (plus a second for a loaded machine),
// and a reconnection is refused.
func TestRevocationEndsStreams(t *testing.T) {
	e := newTokenEnv(t)
	temp := want[wire.CreateTokenResponse](t, e.testServer, http.StatusCreated, "POST", "/v1/tokens", wire.CreateTokenRequest{Name: "temp"}).Secret
	other := secondNode(t, e)
	here, there := streamAs(t, e.URL, temp), streamAs(t, other, temp)
	// Both streams are live: they carry a change.
	if _, err := e.c.Add(t.Context(), rota.AddParams{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan string{here, there} {
		select {
		case name := <-ch:
			if name != "job" {
				t.Fatalf("first event %q", name)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a stream carried no change")
		}
	}
	start := time.Now()
	want[struct{}](t, e.testServer, http.StatusNoContent, "DELETE", "/v1/tokens/temp", nil)
	for node, ch := range map[string]<-chan string{"the node that revoked it": here, "another node": there} {
		var last string
		timeout := time.After(3 * httpapi.TokenCacheTTL)
	read:
		for {
			select {
			case name, ok := <-ch:
				if !ok {
					break read
				}
				last = name
			case <-timeout:
				t.Fatalf("on %s, the stream of a revoked token was still open %v after the revocation", node, 3*httpapi.TokenCacheTTL)
			}
		}
		took := time.Since(start)
		t.Logf("on %s the stream ended %v after the revocation", node, took.Round(time.Millisecond))
		if last != "revoked" {
			t.Errorf("on %s the stream's last event is %q, want revoked", node, last)
		}
		if took > httpapi.TokenCacheTTL+time.Second {
			t.Errorf("on %s the stream ended %v after the revocation; want within TokenCacheTTL (%v)", node, took, httpapi.TokenCacheTTL)
		}
	}
	r := e.as(t, "admin", "GET", "/v1/stats", nil) // the server is fine
	if r.Status != http.StatusOK {
		t.Fatal(r)
	}
	e.secrets["temp"] = temp
	if r := e.as(t, "temp", "GET", "/v1/events", nil); r.Status != http.StatusForbidden {
		t.Errorf("a reconnection with the revoked token: %s", r)
	}
}

// TestRevocationEndsLongPolls: an accept waiting for jobs with a named
// token, on another node, answers 403 within TokenCacheTTL of the token's
// revocation, and leases nothing.
func TestRevocationEndsLongPolls(t *testing.T) {
	e := newTokenEnv(t)
	temp := want[wire.CreateTokenResponse](t, e.testServer, http.StatusCreated, "POST", "/v1/tokens", wire.CreateTokenRequest{Name: "temp"}).Secret
	other := secondNode(t, e)
	type answer struct {
		status int
		body   string
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", other+"/v1/accept", strings.NewReader(`{"types":["t"],"wait":"40s"}`))
		req.Header.Set("Authorization", "Bearer "+temp)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{0, err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{resp.StatusCode, string(b)}
	}()
	time.Sleep(200 * time.Millisecond) // let it wait: not needed for the check, only for it to mean something
	start := time.Now()
	want[struct{}](t, e.testServer, http.StatusNoContent, "DELETE", "/v1/tokens/temp", nil)
	select {
	case a := <-done:
		took := time.Since(start)
		t.Logf("the accept answered %v after the revocation: %d %s", took.Round(time.Millisecond), a.status, strings.TrimSpace(a.body))
		if a.status != http.StatusForbidden || !strings.Contains(a.body, "revoked") {
			t.Errorf("the accept answered %d %s; want 403 naming the revocation", a.status, a.body)
		}
		if took > httpapi.TokenCacheTTL+time.Second {
			t.Errorf("the accept answered %v after the revocation; want within TokenCacheTTL (%v)", took, httpapi.TokenCacheTTL)
		}
	case <-time.After(3 * httpapi.TokenCacheTTL):
		t.Fatalf("an accept of a revoked token was still waiting %v after the revocation", 3*httpapi.TokenCacheTTL)
	}
	if _, err := e.c.Add(t.Context(), rota.AddParams{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	if st := e.stats(t); st.ByState["running"] != 0 {
		t.Errorf("%d jobs running after the revoked accept", st.ByState["running"])
	}
}
