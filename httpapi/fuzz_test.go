package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store/sqlite"
)

// fuzzAPI is the API on a real SQLite store with a few jobs, for fuzz
// targets that send it requests.
func fuzzAPI(f *testing.F) (*httpapi.Server, *rota.Client) {
	st, err := sqlite.Open(filepath.Join(f.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		f.Fatal(err)
	}
	c, err := rota.NewClient(st, rota.Config{Logger: quiet(), CloseStore: true})
	if err != nil {
		f.Fatal(err)
	}
	api := httpapi.New(c, httpapi.Config{Logger: quiet()})
	f.Cleanup(func() { api.Close(); c.Close() })
	for _, typ := range []string{"a", "b", "a"} {
		if _, err := c.Add(context.Background(), rota.AddParams{Type: typ, Group: "g,1"}); err != nil {
			f.Fatal(err)
		}
	}
	return api, c
}

// answer sends a request to api and checks what every answer must be: a
// status the API documents, never a 500, and an error body with a code.
func answer(t *testing.T, api http.Handler, r *http.Request, ok ...int) int {
	t.Helper()
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, r)
	code := rec.Code
	for _, s := range ok {
		if code == s {
			return code
		}
	}
	var e wire.ErrorResponse
	if code == http.StatusBadRequest || code == http.StatusNotFound || code == http.StatusRequestEntityTooLarge {
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Fatalf("%s %s: %d with body %q", r.Method, r.URL, code, rec.Body)
		}
		return code
	}
	t.Fatalf("%s %s: status %d, body %q", r.Method, r.URL, code, rec.Body)
	return 0
}

// FuzzListQuery sends listings with arbitrary filters, limits, orders and
// cursors.
func FuzzListQuery(f *testing.F) {
	for _, q := range []string{"", "type=a", "type=a,b&state=pending&limit=1", "cursor=1&order=desc", "cursor=-3", "limit=0",
		"limit=99999", "state=bogus", "group=g,1", "key=k&type=a", "id=1,2,x", "nope=1", "type=%2A", "cursor=9223372036854775808"} {
		f.Add(q)
	}
	api, _ := fuzzAPI(f)
	f.Fuzz(func(t *testing.T, query string) {
		vals, err := url.ParseQuery(query)
		if err != nil {
			return // not a query a client can send
		}
		answer(t, api, httptest.NewRequest("GET", "http://127.0.0.1/v1/jobs?"+vals.Encode(), nil), http.StatusOK)
	})
}

// FuzzAddBody sends arbitrary bodies to POST /v1/jobs: each is refused
// whole (and adds nothing) or added.
func FuzzAddBody(f *testing.F) {
	for _, b := range []string{`{"type":"a"}`, `{"jobs":[{"type":"a"},{"type":"b*"}]}`, `{"type":"a","data":[1]}`,
		`{"type":"a","run_at":"x"}`, `{"type":"a","max_attempts":-1}`, `{"type":"a","extra":1}`, `[`, ``, `{"type":"a","backoff_base":"1h","backoff_max":"1s"}`} {
		f.Add(b)
	}
	api, c := fuzzAPI(f)
	count := func(t *testing.T) int {
		n := 0
		counts, err := c.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range counts {
			n += int(k.Jobs)
		}
		return n
	}
	f.Fuzz(func(t *testing.T, body string) {
		before := count(t)
		r := httptest.NewRequest("POST", "http://127.0.0.1/v1/jobs", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		code := answer(t, api, r, http.StatusOK, http.StatusCreated)
		if code != http.StatusOK && code != http.StatusCreated && count(t) != before {
			t.Fatalf("a refused add (%d) changed the job count from %d to %d", code, before, count(t))
		}
	})
}
