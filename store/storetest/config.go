package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- type configuration ----

func testTypeConfig(t *testing.T, open func(t *testing.T) store.Store) {
	leaseOf := func(t *testing.T, s store.Store, p store.AcceptParams, want time.Duration) {
		t.Helper()
		before := time.Now()
		res := accept(t, s, p)
		after := time.Now()
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept(%v) took %d jobs, want 1", p.Types, len(res.Jobs))
		}
		within(t, fmt.Sprintf("lease_until of a %v job (lease %v)", p.Types, want), res.Jobs[0].LeaseUntil,
			before.Add(want-slack), after.Add(want+slack))
		if want > time.Minute {
			before = time.Now()
			hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(res.Jobs[0])})
			after = time.Now()
			within(t, fmt.Sprintf("lease_until of a %v job after a heartbeat (lease %v)", p.Types, want), hb.LeaseUntil,
				before.Add(want-slack), after.Add(want+slack))
		}
	}

	t.Run("LeaseTimeout", func(t *testing.T) {
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "slow", LeaseTimeout: 10 * time.Minute}); err != nil {
			t.Fatalf("SetTypeConfig: %v", err)
		}
		add(t, s, store.AddParams{Type: "slow"}, store.AddParams{Type: "fast"}, store.AddParams{Type: "fast"},
			store.AddParams{Type: "slow"})
		leaseOf(t, s, store.AcceptParams{Types: []string{"slow"}}, 10*time.Minute)
		leaseOf(t, s, store.AcceptParams{Types: []string{"fast"}}, store.DefaultLeaseTimeout)
		leaseOf(t, s, store.AcceptParams{Types: []string{"fast"}, LeaseTimeout: 2 * time.Hour}, 2*time.Hour)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "slow", LeaseTimeout: 3 * time.Minute}); err != nil {
			t.Fatalf("SetTypeConfig: %v", err)
		}
		leaseOf(t, s, store.AcceptParams{Types: []string{"slow"}}, 3*time.Minute)
	})

	t.Run("List", func(t *testing.T) {
		s := open(t)
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "slow", LeaseTimeout: 10 * time.Minute}); err != nil {
			t.Fatalf("SetTypeConfig: %v", err)
		}
		addOne(t, s, store.AddParams{Type: "fast"})
		cfgs, err := s.TypeConfigs(t.Context())
		if err != nil {
			t.Fatalf("TypeConfigs: %v", err)
		}
		got := map[string]time.Duration{}
		for _, c := range cfgs {
			got[c.Type] = c.LeaseTimeout
		}
		if d, ok := got["slow"]; !ok || d != 10*time.Minute {
			t.Errorf("TypeConfigs = %+v, want slow with a 10m lease timeout", cfgs)
		}
		if d, ok := got["fast"]; !ok || d != store.DefaultLeaseTimeout {
			t.Errorf("TypeConfigs = %+v, want the added type fast with the default lease timeout", cfgs)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		for _, c := range []store.TypeConfig{
			{Type: ""},
			{Type: "a\x7f"},
			{Type: "ok", LeaseTimeout: -time.Second},
		} {
			err := s.SetTypeConfig(t.Context(), c)
			wantErr(t, fmt.Sprintf("SetTypeConfig(%+v)", c), err, store.ErrInvalid)
		}
		cfgs, err := s.TypeConfigs(t.Context())
		if err != nil {
			t.Fatalf("TypeConfigs: %v", err)
		}
		if len(cfgs) != 0 {
			t.Errorf("TypeConfigs after rejected configs = %+v, want none", cfgs)
		}
	})
}
