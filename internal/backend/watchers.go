package backend

import (
	"sync"
	"time"

	"github.com/rotajobs/rota/store"
)

// Watchers is the registry behind Store.Watch, for stores to use: it
// delivers each batch of changes to every registered callback, one batch at
// a time, so that every callback sees the same sequence. The zero value is
// ready to use.
type Watchers struct {
	mu  sync.Mutex
	fns map[int]func([]store.Event)
	seq int
}

// Watch registers fn and returns the function that unregisters it.
func (w *Watchers) Watch(fn func([]store.Event)) (stop func()) {
	w.mu.Lock()
	if w.fns == nil {
		w.fns = map[int]func([]store.Event){}
	}
	w.seq++
	id := w.seq
	w.fns[id] = fn
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.fns, id)
		w.mu.Unlock()
	}
}

// Deliver calls every registered callback with changes, stamping At on
// those that have none; callbacks must not block.
func (w *Watchers) Deliver(changes []store.Event) {
	if len(changes) == 0 {
		return
	}
	now := time.Now().UTC()
	for i := range changes {
		if changes[i].At.IsZero() {
			changes[i].At = now
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, fn := range w.fns {
		fn(changes)
	}
}
