package remote

import (
	"context"
	"sync"
	"time"

	"github.com/rotajobs/rota/store"
)

// batcher coalesces concurrent calls into one request: while a request is
// in flight, new calls queue, and the next request carries all of them (up
// to max items). This is group commit on the client side; it is what lets
// many remote handlers finish without each paying a round trip alone.
type batcher[P, R any] struct {
	max  int
	send func(ctx context.Context, items []P) ([]R, error)

	mu      sync.Mutex
	queue   []*call[P, R]
	running bool
	closed  bool
}

// requestTimeout bounds one batched request.
const requestTimeout = time.Minute

type call[P, R any] struct {
	items []P
	res   []R
	err   error
	done  chan struct{}
}

func newBatcher[P, R any](max int, send func(context.Context, []P) ([]R, error)) *batcher[P, R] {
	return &batcher[P, R]{max: max, send: send}
}

// do sends items, together with whatever else is queued, and returns
// their results.
func (b *batcher[P, R]) do(ctx context.Context, items []P) ([]R, error) {
	if len(items) == 0 {
		return nil, nil
	}
	c := &call[P, R]{items: items, done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, store.ErrClosed
	}
	b.queue = append(b.queue, c)
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		// The request may still be sent; like any network call whose
		// answer was not awaited, its effect is unknown to the caller.
		return nil, ctx.Err()
	}
}

func (b *batcher[P, R]) loop() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		var calls []*call[P, R]
		n := 0
		for len(b.queue) > 0 && (n == 0 || n+len(b.queue[0].items) <= b.max) {
			calls = append(calls, b.queue[0])
			n += len(b.queue[0].items)
			b.queue = b.queue[1:]
		}
		b.mu.Unlock()

		items := make([]P, 0, n)
		for _, c := range calls {
			items = append(items, c.items...)
		}
		// Finishes and heartbeats are quick on a healthy server; the bound
		// keeps a wedged connection from holding every caller forever.
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		res, err := b.send(ctx, items)
		cancel()
		for _, c := range calls {
			if err != nil {
				c.err = err
			} else {
				c.res, res = res[:len(c.items):len(c.items)], res[len(c.items):]
			}
			close(c.done)
		}
	}
}

func (b *batcher[P, R]) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}
