package rota

import (
	"context"
	"sync"
	"time"
)

// batcher coalesces concurrent calls into one store call: while a call is
// in flight, new items queue, and the next call carries all of them (up to
// max items). No timer is involved, so a lone item goes out at once; under
// load, items share calls (and, on an embedded store, transactions) instead
// of each paying for one alone. The worker runtime finishes jobs through
// one, so that N handlers ending together cost one store call, not N.
type batcher[P, R any] struct {
	max  int
	send func(ctx context.Context, items []P) ([]R, error)

	mu      sync.Mutex
	queue   []*batchCall[P, R]
	running bool
}

type batchCall[P, R any] struct {
	item P
	res  R
	err  error
	done chan struct{}
}

func newBatcher[P, R any](max int, send func(context.Context, []P) ([]R, error)) *batcher[P, R] {
	return &batcher[P, R]{max: max, send: send}
}

// do sends item, together with whatever else is queued, and returns its
// result. If ctx ends first, do returns ctx.Err(); the item may still be
// sent.
func (b *batcher[P, R]) do(ctx context.Context, item P) (R, error) {
	c := &batchCall[P, R]{item: item, done: make(chan struct{})}
	b.mu.Lock()
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
		var zero R
		return zero, ctx.Err()
	}
}

// batchTimeout bounds one batched call; a single finish has 30s.
const batchTimeout = 30 * time.Second

func (b *batcher[P, R]) loop() {
	var calls []*batchCall[P, R]
	var items []P
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), b.max)
		calls = append(calls[:0], b.queue[:n]...)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		b.mu.Unlock()

		items = items[:0]
		for _, c := range calls {
			items = append(items, c.item)
		}
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		res, err := b.send(ctx, items)
		cancel()
		for i, c := range calls {
			if err != nil {
				c.err = err
			} else {
				c.res = res[i]
			}
			close(c.done)
		}
		clear(calls)
	}
}
