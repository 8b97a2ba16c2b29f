package remote_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store/sqlite"
)

// TestUnavailable checks the unavailable path end to end: a server whose
// store is closed answers 503 with Retry-After, the remote client's error
// matches rota.ErrUnavailable, and reads that meet a 503 are tried again.
func TestUnavailable(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := rota.NewClient(st, rota.Config{CloseStore: true})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	api := httpapi.New(local, httpapi.Config{})
	defer api.Close()
	backend := httptest.NewServer(api)
	defer backend.Close()
	res, err := local.Add(context.Background(), rota.AddParams{Type: "t"})
	if err != nil {
		t.Fatal(err)
	}

	// A proxy in front of it that answers 503 to the first two requests,
	// as a server whose database is restarting does.
	target, _ := url.Parse(backend.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/events" && refused.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":"unavailable","message":"database unavailable"}}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	client, err := remote.NewClient(front.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	j, err := client.Get(context.Background(), res.Job.ID)
	if err != nil || j.ID != res.Job.ID {
		t.Fatalf("a read after two 503s: %+v, %v", j, err)
	}
	if n := refused.Load(); n != 3 {
		t.Fatalf("the read took %d requests, want 3", n)
	}

	// The store goes away: 503 with Retry-After, ErrUnavailable-class.
	st.Close()
	resp, err := http.Get(backend.URL + "/v1/jobs?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("with the store closed: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// A write is not repeated: it fails at once, and says what happened.
	if _, err := client.Add(context.Background(), rota.AddParams{Type: "t"}); !errors.Is(err, rota.ErrUnavailable) && !errors.Is(err, rota.ErrClosed) {
		t.Fatalf("an add with the store closed: %v", err)
	}
}
