// Package batch coalesces concurrent calls into shared ones: while a call
// is in flight, new items queue, and the next call carries all of them (up
// to a maximum). No timer is involved, so a lone item goes out at once;
// under load, items share calls instead of each paying for one alone. This
// is group commit on the caller's side: the worker runtime finishes jobs
// through one (N handlers ending together cost one store call), and the
// remote client sends finishes and heartbeats through them (one request).
package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("batch: closed")

// Batcher sends items of type P in shared calls that answer with one R per
// item. Create it with New.
type Batcher[P, R any] struct {
	max     int
	timeout time.Duration
	send    func(ctx context.Context, items []P) ([]R, error)

	mu      sync.Mutex
	queue   []*call[P, R]
	running bool
	closed  bool
}

type call[P, R any] struct {
	items []P
	res   []R
	err   error
	done  chan struct{}
	// then, set by Go instead of done, takes the answer of one item,
	// which one holds.
	then Waiter[R]
	one  [1]P
}

// Waiter takes the answer of an item sent with Go: its result, or the
// error of the whole call.
type Waiter[R any] interface {
	Answer(R, error)
}

// New returns a Batcher whose calls carry at most max items and are each
// bounded by timeout (so a wedged call cannot hold every caller forever).
func New[P, R any](max int, timeout time.Duration, send func(ctx context.Context, items []P) ([]R, error)) *Batcher[P, R] {
	return &Batcher[P, R]{max: max, timeout: timeout, send: send}
}

// Do sends items, together with whatever else is queued, and returns their
// results. If ctx ends first, Do returns ctx.Err(); the items may still be
// sent, so their effect is unknown to the caller, as with any call whose
// answer was not awaited.
func (b *Batcher[P, R]) Do(ctx context.Context, items ...P) ([]R, error) {
	if len(items) == 0 {
		return nil, nil
	}
	c := &call[P, R]{items: items, done: make(chan struct{})}
	if err := b.enqueue(c); err != nil {
		return nil, err
	}
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Go sends item like Do, without waiting for the answer: then gets it,
// when the shared call that carries item returns, on the Batcher's own
// goroutine, so it must not block (it may call Go or Do). It spares the
// caller a goroutine blocked on the call, and a channel: a worker finishes
// tens of thousands of jobs a second through one Batcher. After Close,
// then gets ErrClosed at once, on the caller's goroutine.
func (b *Batcher[P, R]) Go(item P, then Waiter[R]) {
	c := &call[P, R]{then: then}
	c.one[0] = item
	c.items = c.one[:]
	if err := b.enqueue(c); err != nil {
		var zero R
		then.Answer(zero, err)
	}
}

// enqueue queues c for the next shared call, and starts the loop that
// makes them unless it runs.
func (b *Batcher[P, R]) enqueue(c *call[P, R]) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.queue = append(b.queue, c)
	if !b.running {
		b.running = true
		go b.loop()
	}
	return nil
}

// Close makes later calls to Do fail with ErrClosed; queued items are
// still sent.
func (b *Batcher[P, R]) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

func (b *Batcher[P, R]) loop() {
	var calls []*call[P, R]
	var items []P
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		calls = calls[:0]
		n := 0
		for len(b.queue) > 0 && (n == 0 || n+len(b.queue[0].items) <= b.max) {
			calls = append(calls, b.queue[0])
			n += len(b.queue[0].items)
			b.queue[0] = nil
			b.queue = b.queue[1:]
		}
		b.mu.Unlock()

		items = items[:0]
		for _, c := range calls {
			items = append(items, c.items...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		res, err := b.send(ctx, items)
		cancel()
		if err == nil && len(res) != len(items) {
			err = fmt.Errorf("batch: %d answers for %d items", len(res), len(items))
		}
		for i, c := range calls {
			calls[i] = nil // the loop keeps calls' backing array; not its calls
			if err != nil {
				c.err = err
			} else {
				c.res, res = res[:len(c.items):len(c.items)], res[len(c.items):]
			}
			if c.then == nil {
				close(c.done)
				continue
			}
			var r R
			if c.err == nil {
				r = c.res[0]
			}
			c.then.Answer(r, c.err)
		}
	}
}
