package httpapi

import (
	"fmt"
	"sync"

	"github.com/rotajobs/rota/httpapi/wire"
)

// DefaultMaxTokenRequests is how many requests one named token may have in
// flight at once when Config.MaxTokenRequests is zero: a quarter of rota
// serve's default --max-conns (1,024), so that no tenant holds every
// connection, while a remote worker, which keeps about three requests in
// flight (a long-poll accept, its event stream, a batch of finishes or
// heartbeats), may run some 80 processes on one token.
const DefaultMaxTokenRequests = 256

// inflight counts each named token's requests in flight. The admin token's
// and an open server's requests are the operator's, and not counted.
type inflight struct {
	max int // <= 0: no bound
	mu  sync.Mutex
	n   map[string]int
}

// enter counts a request of a's, or refuses it (wire.ErrTooManyRequests)
// when a's token has max in flight; leave ends what enter counted.
func (f *inflight) enter(a *access) (leave func(), err error) {
	if f.max <= 0 || a.admin || a.name == "" {
		return func() {}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[a.name] >= f.max {
		return nil, fmt.Errorf("%w: token %q has %d requests in flight, as many as one token may (--max-token-requests); try again when one of them ends", wire.ErrTooManyRequests, a.name, f.max)
	}
	f.n[a.name]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.n[a.name]--; f.n[a.name] == 0 {
			delete(f.n, a.name)
		}
	}, nil
}
