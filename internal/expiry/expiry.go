// Package expiry is the lease monitor: it takes back running jobs whose
// worker stopped heartbeating, so that they run again (or fail when out of
// attempts), and their old tokens die, and ends pending jobs whose deadline
// passed (store.Job.ExpiresAt). It also deletes ended jobs past
// their type's retention, when the store can (store.Retirer).
package expiry

import (
	"context"
	"log/slog"
	"time"

	"github.com/rotajobs/rota/store"
)

// Monitor runs the lease sweep. It sleeps until the earliest lease ends or
// deadline passes, but at most Interval, so that leases and deadlines
// created meanwhile are not missed for long (claims never start a job past
// its deadline meanwhile).
type Monitor struct {
	Store    store.Store
	Interval time.Duration // zero means 1s
	Logger   *slog.Logger
	Now      func() time.Time // nil means time.Now
	// RetireEvery is how often ended jobs past their retention are
	// deleted, in batches of RetireBatch; zero means every minute, 1000.
	RetireEvery time.Duration
	RetireBatch int
}

// retireBatches bounds the batches one retention sweep deletes, so that a
// large backlog of old jobs is worked off over several sweeps, between
// lease sweeps, rather than in one long one.
const retireBatches = 10

// Run sweeps until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	interval := m.Interval
	if interval <= 0 {
		interval = time.Second
	}
	now := m.Now
	if now == nil {
		now = time.Now
	}
	retirer, _ := m.Store.(store.Retirer)
	retireEvery, batch := m.RetireEvery, m.RetireBatch
	if retireEvery <= 0 {
		retireEvery = time.Minute
	}
	if batch <= 0 {
		batch = 1000
	}
	var retired time.Time // when the last retention sweep ran
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		n, next, err := m.Store.ExpireLeases(ctx, now())
		if retirer != nil && time.Since(retired) >= retireEvery {
			retired = time.Now()
			m.retire(ctx, retirer, now, batch)
		}
		wait := interval
		switch {
		case err != nil:
			if ctx.Err() == nil && m.Logger != nil {
				m.Logger.Warn("lease sweep failed", "err", err)
			}
		case n > 0:
			if m.Logger != nil {
				m.Logger.Info("took back jobs with expired leases or ended jobs past their deadline", "jobs", n)
			}
			if d := time.Until(next); !next.IsZero() && d < wait {
				wait = max(d, 0)
			}
		case !next.IsZero():
			if d := time.Until(next); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		timer.Reset(wait)
	}
}

// retire deletes ended jobs past their retention, a few batches at most.
func (m *Monitor) retire(ctx context.Context, r store.Retirer, now func() time.Time, batch int) {
	total := 0
	for range retireBatches {
		n, err := r.Retire(ctx, now(), batch)
		if err != nil {
			if ctx.Err() == nil && m.Logger != nil {
				m.Logger.Warn("retention sweep failed", "err", err)
			}
			break
		}
		total += n
		if n < batch {
			break
		}
	}
	if total > 0 && m.Logger != nil {
		m.Logger.Info("deleted ended jobs past their retention", "jobs", total)
	}
}
