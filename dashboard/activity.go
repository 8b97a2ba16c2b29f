package dashboard

import (
	"context"
	"sync"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
)

// activity counts the changes of the last hour, minute by minute, as they
// come from the engine's change feed, so that the overview's charts cost
// nothing to draw and never read all jobs. It also wakes the pages that
// show live counts. The counts start when the server does.
type activity struct {
	mu      sync.Mutex
	minutes [60]minute // a ring, by minute of the hour
	subs    map[chan struct{}]string
	version uint64 // changes seen
}

// changes returns how many changes it has seen.
func (a *activity) changes() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.version
}

// minute is one minute's changes, by what the jobs became. A change a
// token does not reach still counts: the chart is the server's.
type minute struct {
	start                              time.Time
	queued, started, completed, failed int64
	byType                             map[string][4]int64
}

func watchActivity(ctx context.Context, c *rota.Client) (*activity, error) {
	a := &activity{subs: map[chan struct{}]string{}}
	// The store's own feed, a batch at a time under one lock: it costs the
	// commit path little, and cannot fall behind as a queued subscriber can.
	// The charts count starts and completions, which a remote store's feed
	// leaves out until asked.
	if fw, ok := c.Store().(store.FullWatcher); ok {
		fw.WatchAll()
	}
	stop := c.Store().Watch(func(evs []rota.Event) {
		a.mu.Lock()
		for _, ev := range evs {
			a.count(ev)
		}
		a.wakeAll()
		a.mu.Unlock()
	})
	go func() {
		<-ctx.Done()
		stop()
	}()
	return a, nil
}

// count records one change; a.mu is held.
func (a *activity) count(ev rota.Event) {
	now := time.Now().Truncate(time.Minute)
	a.version++
	m := &a.minutes[now.Minute()]
	if !m.start.Equal(now) {
		*m = minute{start: now, byType: map[string][4]int64{}}
	}
	i := -1
	switch {
	case ev.Removed:
	case ev.State == rota.Pending:
		m.queued, i = m.queued+1, 0
	case ev.State == rota.Running && ev.Progress == 0:
		m.started, i = m.started+1, 1
	case ev.State == rota.Completed:
		m.completed, i = m.completed+1, 2
	case ev.State == rota.Failed:
		m.failed, i = m.failed+1, 3
	}
	if i >= 0 && len(m.byType) < 1000 {
		c := m.byType[ev.Type]
		c[i]++
		m.byType[ev.Type] = c
	}
}

// wakeAll tells the live pages that jobs changed; a.mu is held.
func (a *activity) wakeAll() {
	for ch := range a.subs {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// point is one minute of the chart.
type point struct {
	At                                 time.Time
	Queued, Started, Completed, Failed int64
}

// lastHour returns the last 60 minutes, oldest first, counting only the
// types reach allows.
func (a *activity) lastHour(reach func(typ string) bool) []point {
	now := time.Now().Truncate(time.Minute)
	out := make([]point, 60)
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range out {
		at := now.Add(time.Duration(i-59) * time.Minute)
		out[i].At = at
		m := a.minutes[at.Minute()]
		if !m.start.Equal(at) {
			continue
		}
		for typ, c := range m.byType {
			if reach(typ) {
				out[i].Queued += c[0]
				out[i].Started += c[1]
				out[i].Completed += c[2]
				out[i].Failed += c[3]
			}
		}
	}
	return out
}

// wake returns a channel that receives after changes, and its release.
func (a *activity) wake() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	a.mu.Lock()
	a.subs[ch] = ""
	a.mu.Unlock()
	return ch, func() {
		a.mu.Lock()
		delete(a.subs, ch)
		a.mu.Unlock()
	}
}
