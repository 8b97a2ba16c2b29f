package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

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
