// Package expiry is the lease monitor: it takes back running jobs whose
// worker stopped heartbeating, so that they run again (or fail when out of
// attempts), and their old tokens die.
package expiry

import (
	"context"
	"log/slog"
	"time"

	"github.com/rotajobs/rota/store"
)

// Monitor runs the lease sweep. It sleeps until the earliest lease ends,
// but at most Interval, so that leases created meanwhile are not missed
// for long.
type Monitor struct {
	Store    store.Store
	Interval time.Duration // zero means 1s
	Logger   *slog.Logger
	Now      func() time.Time // nil means time.Now
}

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
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		n, next, err := m.Store.ExpireLeases(ctx, now())
		wait := interval
		switch {
		case err != nil:
			if ctx.Err() == nil && m.Logger != nil {
				m.Logger.Warn("lease sweep failed", "err", err)
			}
		case n > 0:
			if m.Logger != nil {
				m.Logger.Info("took back jobs with expired leases", "jobs", n)
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
