package dashboard

import (
	"context"
	"slices"
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
	subs    map[chan struct{}]reachFunc
	version uint64    // changes seen
	since   time.Time // when counting started: the chart covers no earlier minute
}

// reachFunc says whether a token reaches jobs of a type and group.
type reachFunc func(typ, group string) bool

// changes returns how many changes it has seen.
func (a *activity) changes() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.version
}

// minute is one minute's changes, by what the jobs became, and by type
// and group, so that a token's chart counts only the changes of the jobs
// it reaches.
type minute struct {
	start                              time.Time
	queued, started, completed, failed int64
	byPlace                            map[[2]string][4]int64 // type and group
}

// maxPlaces bounds the types and groups a minute counts apart: more, and
// the minute's later changes of new ones are left out of every chart.
const maxPlaces = 10000

func watchActivity(ctx context.Context, c *rota.Client) (*activity, error) {
	a := &activity{subs: map[chan struct{}]reachFunc{}, since: time.Now()}
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
		a.wakeAll(evs)
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
		*m = minute{start: now, byPlace: map[[2]string][4]int64{}}
	}
	i := -1
	switch {
	case ev.Removed:
	case ev.Failed:
		// A failed run, whether the job runs again or not: a retry is no
		// new job in the queue.
		m.failed, i = m.failed+1, 3
	case ev.State == rota.Pending:
		m.queued, i = m.queued+1, 0
	case ev.State == rota.Running && ev.Progress == 0:
		m.started, i = m.started+1, 1
	case ev.State == rota.Completed:
		m.completed, i = m.completed+1, 2
	}
	k := [2]string{ev.Type, ev.Group}
	if _, ok := m.byPlace[k]; i >= 0 && (ok || len(m.byPlace) < maxPlaces) {
		c := m.byPlace[k]
		c[i]++
		m.byPlace[k] = c
	}
}

// wakeAll tells the live pages whose token reaches a job of evs that jobs
// changed (a page is not told of other tenants' changes: when they happen
// is theirs too); a.mu is held.
func (a *activity) wakeAll(evs []rota.Event) {
	for ch, reach := range a.subs {
		if !slices.ContainsFunc(evs, func(ev rota.Event) bool { return reach(ev.Type, ev.Group) }) {
			continue
		}
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
// types and groups reach allows, and when the counts start: an hour ago,
// or when counting started if that is later.
func (a *activity) lastHour(reach reachFunc) ([]point, time.Time) {
	now := time.Now().Truncate(time.Minute)
	out := make([]point, 60)
	a.mu.Lock()
	defer a.mu.Unlock()
	from := now.Add(-59 * time.Minute)
	if a.since.After(from) {
		from = a.since
	}
	for i := range out {
		at := now.Add(time.Duration(i-59) * time.Minute)
		out[i].At = at
		m := a.minutes[at.Minute()]
		if !m.start.Equal(at) {
			continue
		}
		for k, c := range m.byPlace {
			if reach(k[0], k[1]) {
				out[i].Queued += c[0]
				out[i].Started += c[1]
				out[i].Completed += c[2]
				out[i].Failed += c[3]
			}
		}
	}
	return out, from
}

// wake returns a channel that receives after changes of jobs in reach,
// and its release.
func (a *activity) wake(reach reachFunc) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	a.mu.Lock()
	a.subs[ch] = reach
	a.mu.Unlock()
	return ch, func() {
		a.mu.Lock()
		delete(a.subs, ch)
		a.mu.Unlock()
	}
}
