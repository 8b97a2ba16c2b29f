package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// TestTokenRequestsBounded checks that a named token may have
// MaxTokenRequests requests in flight on a real server: one more is
// answered 429 with Retry-After (which a remote client takes as a refusal
// that passes), while other tokens and the admin token are served, and
// the token is served again once one of its requests ends.
func TestTokenRequestsBounded(t *testing.T) {
	s := newServer(t, httpapi.Config{AuthToken: "admin-secret", MaxTokenRequests: 2})
	secret := map[string]string{"admin": "admin-secret"}
	for _, name := range []string{"acme", "beta"} {
		secret[name] = want[wire.CreateTokenResponse](t, s, http.StatusCreated, "POST", "/v1/tokens", wire.CreateTokenRequest{Name: name}).Secret
	}
	as := func(name string) []string { return []string{"Authorization", "Bearer " + secret[name]} }

	// Two long polls hold acme's two requests.
	polls, stopPolls := context.WithCancel(t.Context())
	ended := make(chan error, 2)
	for range 2 {
		go func() {
			for {
				r, err := s.send(polls, "POST", "/v1/accept", map[string]any{"types": []string{"idle"}, "wait": "50s"}, as("acme")...)
				// A probe below may hold acme's second request when this
				// one arrives (a busy machine starts it late): the bound
				// works, and the poll is sent again.
				if err == nil && r.Status == http.StatusTooManyRequests {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if err == nil && polls.Err() == nil {
					err = fmt.Errorf("answered %s", r)
				}
				ended <- err
				return
			}
		}()
	}
	var r reply
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-ended: // the bound cannot be reached: say why
			t.Fatalf("a long poll of 50s ended before acme was at its bound: %v", err)
		default:
		}
		r = s.do(t, "GET", "/v1/stats", nil, as("acme")...)
		if r.Status == http.StatusTooManyRequests || time.Now().After(deadline) {
			break
		}
	}
	wantError(t, r, http.StatusTooManyRequests, "too_many_requests", `token "acme" has 2 requests in flight, as many as one token may`)
	if got := r.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	// A body is not read: the refusal comes first.
	r = s.do(t, "POST", "/v1/jobs", map[string]any{"type": "a"}, as("acme")...)
	wantError(t, r, http.StatusTooManyRequests, "too_many_requests", "requests in flight")

	// Over the remote client, the refusal matches ErrTooManyRequests and
	// ErrUnavailable, which workers and reads try again.
	rs, err := remote.New(s.URL, remote.Config{Token: secret["acme"]})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	_, err = rs.Get(context.Background(), []int64{1})
	if !errors.Is(err, wire.ErrTooManyRequests) || !errors.Is(err, rota.ErrUnavailable) || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("remote Get while acme has 2 requests in flight: %v; want ErrTooManyRequests and ErrUnavailable", err)
	}

	// Other tokens are served meanwhile.
	for _, name := range []string{"beta", "admin"} {
		if r := s.do(t, "GET", "/v1/stats", nil, as(name)...); r.Status != http.StatusOK {
			t.Errorf("GET /v1/stats as %s while acme is at its bound: %s", name, r)
		}
	}

	// Once its long polls end, acme is served again.
	stopPolls()
	for range 2 {
		<-ended
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r = s.do(t, "GET", "/v1/stats", nil, as("acme")...)
		if r.Status == http.StatusOK || time.Now().After(deadline) {
			break
		}
	}
	if r.Status != http.StatusOK {
		t.Errorf("GET /v1/stats as acme after its long polls ended: %s", r)
	}
}
