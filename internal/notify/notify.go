// Package notify delivers committed job changes, as a store reports them,
// to the parts of the engine that wait for them: subscribers to one job or
// to job types, and acceptors sleeping until a job of their types is due.
//
// Publish never blocks the store's writer: waiters are woken with a
// non-blocking signal, and each subscription has its own queue drained by
// its own goroutine.
package notify

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// DefaultMaxQueue bounds the changes queued for one subscription that its
// reader has not taken: a reader that falls further behind loses the
// subscription (Subscription.Lost) instead of growing the queue without
// bound.
const DefaultMaxQueue = 10000

// Hub fans out changes. The zero value is not usable; call New.
type Hub struct {
	// MaxQueue bounds each subscription's queue; zero means
	// DefaultMaxQueue. Set it before subscribing.
	MaxQueue int

	// pub keeps Publish calls one at a time, in the order they come, so
	// that each subscriber sees changes in commit order though type
	// subscribers are matched outside mu. It also guards each type
	// subscription's cache of matched names.
	pub sync.Mutex
	// mu guards the registrations below. Subscribing, accepting (Wait,
	// Stop) and every write's Publish pass it, so no pattern of a type
	// subscriber is matched under it: a stream of many patterns costs its
	// own matching, once per type name, not every writer's wait.
	mu      sync.Mutex
	jobs    map[int64]map[*Subscription]struct{}
	typed   map[*Subscription]struct{}
	typedAt atomic.Pointer[[]*Subscription] // typed, as a list Publish reads without mu
	waiters map[*Waiter]struct{}
	raw     map[int]func([]store.Event)
	rawSeq  int

	testMatch func() // called before a subscriber matches a name (tests hold it there)
}

// New returns an empty hub.
func New() *Hub {
	return &Hub{
		jobs:    map[int64]map[*Subscription]struct{}{},
		typed:   map[*Subscription]struct{}{},
		waiters: map[*Waiter]struct{}{},
		raw:     map[int]func([]store.Event){},
	}
}

// Publish delivers committed changes. It is the store's Watch callback. A
// change with ID 0 is a hint that some jobs of its type changed (a store
// that could not report them one by one); it wakes waiters and nothing
// else.
func (h *Hub) Publish(changes []store.Event) {
	h.pub.Lock()
	defer h.pub.Unlock()
	h.publishLocked(changes)
	// Type subscribers, outside mu: each matches a type name against its
	// patterns once (wants), then looks the answer up.
	if typed := h.typedAt.Load(); typed != nil {
		for _, s := range *typed {
			for _, c := range changes {
				if c.ID != 0 && s.wants(c.Type) && s.push(c) {
					h.mu.Lock()
					h.remove(s)
					h.mu.Unlock()
					break
				}
			}
		}
	}
}

// publishLocked delivers changes to raw watchers, waiters and job
// subscribers, under mu.
func (h *Hub) publishLocked(changes []store.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, fn := range h.raw {
		fn(changes)
	}
	if len(h.waiters) > 0 {
		for _, c := range changes {
			// A job becoming pending may be acceptable; a job leaving
			// running frees room in its group's bound, which matters
			// only to waiters that a bound held back (WakeOnEnds).
			if !c.Removed && c.State == store.Running {
				continue
			}
			pending := c.ID == 0 || (!c.Removed && c.State == store.Pending)
			for w := range h.waiters {
				if pending && w.matches(c.Type) {
					w.pending.Add(1)
					w.signal()
				} else if !pending && w.ends.Load() && w.matches(c.Type) {
					w.signal()
				}
			}
		}
	}
	for _, c := range changes {
		if c.ID == 0 {
			continue // a hint that jobs of c.Type changed: for waiters only
		}
		if subs, ok := h.jobs[c.ID]; ok {
			for s := range subs {
				if s.push(c) {
					h.remove(s)
				}
			}
		}
	}
}

// Poke wakes every waiter, for changes the store could not report (for
// example jobs added in a caller's own transaction).
func (h *Hub) Poke() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters {
		w.pending.Add(1)
		w.signal()
	}
}

// Watch registers fn to see every published batch, under the hub's lock;
// fn must not block. It returns a function that unregisters fn.
func (h *Hub) Watch(fn func([]store.Event)) func() {
	h.mu.Lock()
	h.rawSeq++
	id := h.rawSeq
	h.raw[id] = fn
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.raw, id)
		h.mu.Unlock()
	}
}

// Waiter is an acceptor sleeping until a job of its types is pending.
type Waiter struct {
	h    *Hub
	pats []glob.Pattern
	C    chan struct{} // receives a value (buffered, 1) when woken
	ends atomic.Bool
	// pending counts the signals of jobs becoming pending (and pokes), as
	// apart from ends (WakeOnEnds): see Pending.
	pending atomic.Uint64
}

// Pending counts the signals of jobs of the waiter's types becoming
// pending so far. An acceptor that woke ends only to find jobs held back
// by a bound compares it across an accept: if it did not move, a signal
// left in C came from ends alone, which matter no more once nothing is
// held back (DropEnds).
func (w *Waiter) Pending() uint64 { return w.pending.Load() }

// DropEnds clears a signal in C that ends alone left there since Pending
// read since: a signal of a job becoming pending meanwhile stays.
func (w *Waiter) DropEnds(since uint64) {
	w.Drain()
	if w.pending.Load() != since {
		w.signal() // one came while it drained: keep it
	}
}

// WakeOnEnds says whether the waiter is also woken by jobs of its types
// leaving running (ending, or going back to pending), not only by jobs
// becoming pending: an acceptor sets it while due jobs may be held back by
// a bound on running jobs, which an end makes room under. Otherwise the
// end of every job would wake every waiting acceptor for nothing.
func (w *Waiter) WakeOnEnds(on bool) { w.ends.Store(on) }

// Wait registers a waiter for the patterns. Call Stop when done.
func (h *Hub) Wait(pats []glob.Pattern) *Waiter {
	w := &Waiter{h: h, pats: pats, C: make(chan struct{}, 1)}
	h.mu.Lock()
	h.waiters[w] = struct{}{}
	h.mu.Unlock()
	return w
}

func (w *Waiter) matches(typ string) bool {
	for _, p := range w.pats {
		if p.Match(typ) {
			return true
		}
	}
	return false
}

func (w *Waiter) signal() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// Drain clears a pending signal, so that the next receive on C reflects
// changes after this call.
func (w *Waiter) Drain() {
	select {
	case <-w.C:
	default:
	}
}

// Stop unregisters the waiter.
func (w *Waiter) Stop() {
	w.h.mu.Lock()
	delete(w.h.waiters, w)
	w.h.mu.Unlock()
}

// Subscription receives changes on C until it is stopped. Changes are
// queued between the hub and C, so that a slow reader never blocks the
// store; a reader that falls more than the hub's MaxQueue changes behind
// loses the subscription: its queue is dropped, C closes, and Lost
// reports it, so that the reader can start again from the store.
type Subscription struct {
	h     *Hub
	id    int64 // the job, for job subscriptions
	typed bool  // a subscription to types, not to one job
	pats  []glob.Pattern
	C     <-chan store.Event
	out   chan store.Event
	mu    sync.Mutex
	queue []store.Event
	wake  chan struct{}
	done  chan struct{}
	once  sync.Once
	lost  bool // the reader fell behind (under mu)

	// seen caches, per type name, whether pats match it (under the hub's
	// pub); evals counts the names matched against pats, for tests.
	seen  map[string]bool
	evals int
}

// maxSeen bounds a subscription's cache of matched type names: past it the
// cache starts again, so that clients adding jobs of ever new types cannot
// grow it without bound.
const maxSeen = 4096

// Lost reports whether the subscription ended because its reader fell
// more than MaxQueue changes behind.
func (s *Subscription) Lost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// SubscribeJob subscribes to changes of one job.
func (h *Hub) SubscribeJob(id int64) *Subscription {
	s := newSubscription(h)
	s.id = id
	h.mu.Lock()
	if h.jobs[id] == nil {
		h.jobs[id] = map[*Subscription]struct{}{}
	}
	h.jobs[id][s] = struct{}{}
	h.mu.Unlock()
	go s.forward()
	return s
}

// SubscribeTypes subscribes to changes of jobs whose type matches any of
// the patterns.
func (h *Hub) SubscribeTypes(pats []glob.Pattern) *Subscription {
	s := newSubscription(h)
	s.pats, s.typed = pats, true
	s.seen = map[string]bool{}
	h.mu.Lock()
	h.typed[s] = struct{}{}
	h.listTyped()
	h.mu.Unlock()
	go s.forward()
	return s
}

func newSubscription(h *Hub) *Subscription {
	// Buffered, so that a reader that drains what is ready (an event
	// stream writing a batch per flush) finds it there.
	out := make(chan store.Event, 64)
	return &Subscription{h: h, C: out, out: out, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// wants reports whether the type subscription's patterns match typ,
// matching each name once; the hub's pub is held.
func (s *Subscription) wants(typ string) bool {
	if ok, hit := s.seen[typ]; hit {
		return ok
	}
	s.evals++
	if s.h.testMatch != nil {
		s.h.testMatch()
	}
	ok := slices.ContainsFunc(s.pats, func(p glob.Pattern) bool { return p.Match(typ) })
	if len(s.seen) >= maxSeen {
		clear(s.seen)
	}
	s.seen[typ] = ok
	return ok
}

// push queues c. It reports whether the reader just fell behind, for the
// caller to unregister the subscription under the hub's mu.
func (s *Subscription) push(c store.Event) (lost bool) {
	max := s.h.MaxQueue
	if max <= 0 {
		max = DefaultMaxQueue
	}
	s.mu.Lock()
	if s.lost {
		s.mu.Unlock()
		return false
	}
	if len(s.queue) >= max {
		s.queue, s.lost = nil, true
		s.mu.Unlock()
		s.once.Do(func() { close(s.done) })
		return true
	}
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return false
}

func (s *Subscription) forward() {
	defer close(s.out)
	// Two queues take turns: push appends to one while this sends the
	// other, so that a busy stream reuses them instead of growing a new
	// queue from nothing after each turn (which was a remote worker's
	// largest allocation on the server: 1.8 KB per job drained).
	var spare []store.Event
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = spare[:0]
		s.mu.Unlock()
		for _, c := range q {
			select {
			case s.out <- c:
			case <-s.done:
				return
			}
		}
		// Keep the queue for the next turn (holding no strings of events
		// sent) while turns fill a good part of it: a subscription that
		// has gone quiet lets a burst's queue go.
		spare = nil
		if len(q) >= cap(q)/4 {
			clear(q)
			spare = q
		}
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
	}
}

// Stop ends the subscription and closes C; events not yet received are
// dropped, those already buffered in C too: once Stop returns, C yields
// nothing more.
func (s *Subscription) Stop() {
	s.once.Do(func() {
		s.h.mu.Lock()
		s.h.remove(s)
		s.h.mu.Unlock()
		close(s.done)
	})
	for range s.C {
		// forward ends at done and closes C.
	}
}

// remove unregisters s; the hub's lock is held.
func (h *Hub) remove(s *Subscription) {
	if !s.typed {
		if subs := h.jobs[s.id]; subs != nil {
			delete(subs, s)
			if len(subs) == 0 {
				delete(h.jobs, s.id)
			}
		}
	} else if _, ok := h.typed[s]; ok {
		delete(h.typed, s)
		h.listTyped()
	}
}

// listTyped publishes the list of type subscribers for Publish; mu is
// held. A new list each time: Publish may be reading the last one.
func (h *Hub) listTyped() {
	l := make([]*Subscription, 0, len(h.typed))
	for s := range h.typed {
		l = append(l, s)
	}
	h.typedAt.Store(&l)
}
