package sqlite_test

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// TestRecurringOnAClock runs a recurring job through a month of slots,
// across a daylight-saving change, on the store's injected clock: no
// sleeping. A daily 02:30 New York job runs once each local day, at the
// jump on the day its time does not exist; a job of the skip policy
// whose store was "down" for days skips to its next slot.
func TestRecurringOnAClock(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	res, err := s.Add(ctx, []store.AddParams{{Type: "daily", Schedule: "CRON_TZ=America/New_York 30 2 * * *"}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	days := map[string]int{}
	var runs []time.Time
	for range 14 {
		jobs, err := s.Get(ctx, []int64{id})
		if err != nil {
			t.Fatal(err)
		}
		set(jobs[0].RunAt.Add(time.Second)) // the clock moves to the slot
		acc, err := s.Accept(ctx, store.AcceptParams{Types: []string{"daily"}})
		if err != nil || len(acc.Jobs) != 1 {
			t.Fatalf("accept at %v: %v %v", clock(), acc.Jobs, err)
		}
		runs = append(runs, acc.Jobs[0].Slot)
		days[acc.Jobs[0].Slot.In(ny).Format(time.DateOnly)]++
		errs, err := s.Finish(ctx, []store.FinishParams{{Lease: acc.Jobs[0].Lease(), As: store.Complete}})
		if err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
	}
	for d := time.Date(2026, 3, 2, 0, 0, 0, 0, ny); d.Before(time.Date(2026, 3, 16, 0, 0, 0, 0, ny)); d = d.AddDate(0, 0, 1) {
		if days[d.Format(time.DateOnly)] != 1 {
			t.Errorf("%s: %d runs, want 1 (runs %v)", d.Format(time.DateOnly), days[d.Format(time.DateOnly)], runs)
		}
	}
	if jump := time.Date(2026, 3, 8, 3, 0, 0, 0, ny); !slices.ContainsFunc(runs, jump.Equal) {
		t.Errorf("no run at the jump %v on the day 02:30 does not exist: %v", jump, runs)
	}

	// Skip: the store was down for three days; the job goes to its next slot.
	res, err = s.Add(ctx, []store.AddParams{{Type: "skip", Schedule: "@daily", Missed: store.MissedSkip}})
	if err != nil {
		t.Fatal(err)
	}
	first := res[0].Job.RunAt
	set(first.Add(3*24*time.Hour + time.Hour))
	acc, err := s.Accept(ctx, store.AcceptParams{Types: []string{"skip"}})
	if err != nil || len(acc.Jobs) != 0 {
		t.Fatalf("accept of a skip job three days late: %v %v, want none", acc.Jobs, err)
	}
	jobs, _ := s.Get(ctx, []int64{res[0].Job.ID})
	if want := first.Add(4 * 24 * time.Hour); !jobs[0].RunAt.Equal(want) {
		t.Errorf("the late skip job runs next at %v, want %v", jobs[0].RunAt, want)
	}
}
