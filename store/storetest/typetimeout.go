package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- a type's default run timeout (TypeConfig.Timeout) ----

func testTypeTimeout(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("AppliedAtStart", func(t *testing.T) {
		// The default applies when a job starts: a job added before the
		// type had one gets it, a job's own timeout wins over it, and the
		// run is held to it even while its worker heartbeats.
		s := open(t)
		plain := addOne(t, s, store.AddParams{Type: "t", Priority: 2, MaxAttempts: 1})
		own := addOne(t, s, store.AddParams{Type: "t", Priority: 1, Timeout: time.Hour})
		const d = 1200 * time.Millisecond
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", Timeout: d}); err != nil {
			t.Fatal(err)
		}
		cfgs, err := s.TypeConfigs(t.Context())
		if err != nil || len(cfgs) != 1 || cfgs[0].Timeout != d {
			t.Fatalf("TypeConfigs: %+v, %v; want the type's timeout %v", cfgs, err, d)
		}
		if got := get(t, s, plain.ID); got.Timeout != 0 {
			t.Errorf("a waiting job without its own timeout reads %v, want none of its own", got.Timeout)
		}
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 2, LeaseTimeout: time.Minute})
		if len(res.Jobs) != 2 || res.Jobs[0].ID != plain.ID || res.Jobs[1].ID != own.ID {
			t.Fatalf("accept: %v, want jobs %d and %d", ids(res.Jobs), plain.ID, own.ID)
		}
		run, ownRun := res.Jobs[0], res.Jobs[1]
		if run.Timeout != d || !run.LeaseUntil.Equal(run.StartedAt.Add(d)) {
			t.Errorf("accepted without its own timeout: timeout %v, lease until %v; want the type's %v, the lease ending with the run (%v)",
				run.Timeout, run.LeaseUntil, d, run.StartedAt.Add(d))
		}
		if ownRun.Timeout != time.Hour || ownRun.LeaseUntil.Before(ownRun.StartedAt.Add(50*time.Second)) {
			t.Errorf("accepted with its own timeout of 1h: timeout %v, lease until %v; want its own, the accept's lease", ownRun.Timeout, ownRun.LeaseUntil)
		}
		time.Sleep(time.Until(run.StartedAt.Add(d + 50*time.Millisecond)))
		hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(run)})
		wantErr(t, "heartbeat past the type's timeout", hb.Err, store.ErrWorkerConflict)
		if hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(ownRun)}); hb.Err != nil {
			t.Errorf("heartbeat of the job with its own longer timeout: %v", hb.Err)
		}
		if n, _ := expire(t, s, time.Now()); n != 1 {
			t.Fatalf("ExpireLeases took back %d jobs, want the 1 past the type's timeout", n)
		}
		got := get(t, s, plain.ID)
		wantState(t, got, store.Failed)
		if !strings.HasPrefix(got.LastError, "timed out after 1.2s") {
			t.Errorf("last error %q, want \"timed out after 1.2s\"", got.LastError)
		}
	})

	t.Run("ChangeReachesWaitingJobs", func(t *testing.T) {
		// Removing the default before a waiting job starts leaves its run
		// unbounded.
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", Timeout: time.Second}); err != nil {
			t.Fatal(err)
		}
		addOne(t, s, store.AddParams{Type: "t"})
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t"}); err != nil {
			t.Fatal(err)
		}
		run := accept(t, s, store.AcceptParams{Types: []string{"t"}, LeaseTimeout: time.Minute}).Jobs[0]
		if run.Timeout != 0 || run.LeaseUntil.Before(run.StartedAt.Add(50*time.Second)) {
			t.Errorf("started after the default was removed: timeout %v, lease until %v; want none, the accept's lease", run.Timeout, run.LeaseUntil)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", Timeout: -time.Second})
		wantErr(t, "a negative type timeout", err, store.ErrInvalid)
		err = s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "t", Timeout: time.Nanosecond})
		wantErr(t, "a type timeout under the minimum lease", err, store.ErrInvalid)
	})
}
