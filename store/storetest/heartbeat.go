package storetest

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- heartbeat ----

func testHeartbeat(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("ExtendsAndUpdates", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Data: raw(`{"step":1}`)})
		p := 42.5
		before := time.Now()
		hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j), Data: raw(`{"step":2}`), Progress: &p})
		after := time.Now()
		if hb.Err != nil {
			t.Fatalf("Heartbeat: %v, want success", hb.Err)
		}
		if hb.Resubmit {
			t.Errorf("Heartbeat reports a resubmit nobody asked for")
		}
		if hb.LeaseUntil.Before(j.LeaseUntil) {
			t.Errorf("Heartbeat moved lease_until back from %v to %v", j.LeaseUntil, hb.LeaseUntil)
		}
		within(t, "lease_until after a heartbeat", hb.LeaseUntil,
			before.Add(store.DefaultLeaseTimeout-slack), after.Add(store.DefaultLeaseTimeout+slack))
		got := get(t, s, j.ID)
		sameTime(t, "stored lease_until", got.LeaseUntil, hb.LeaseUntil)
		wantJSON(t, "data after heartbeat", got.Data, `{"step":2}`)
		if got.Progress != 42.5 {
			t.Errorf("progress %v, want 42.5", got.Progress)
		}
		wantState(t, got, store.Running)
		wantAttempt(t, got, 1)
		if got.Token != j.Token {
			t.Errorf("heartbeat changed the token")
		}

		hb = heartbeat(t, s, store.HeartbeatParams{Lease: lease(j)})
		if hb.Err != nil {
			t.Fatalf("Heartbeat without data: %v", hb.Err)
		}
		got = get(t, s, j.ID)
		wantJSON(t, "data after a heartbeat without data", got.Data, `{"step":2}`)
		if got.Progress != 42.5 {
			t.Errorf("progress after a heartbeat without progress = %v, want it kept at 42.5", got.Progress)
		}
	})

	t.Run("ReportsResubmit", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Key: "k"})
		if r := add(t, s, store.AddParams{Type: "t", Key: "k"})[0]; r.Outcome != store.Resubmitted {
			t.Fatalf("re-add of a running job: outcome %v, want resubmitted", r.Outcome)
		}
		hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j)})
		if hb.Err != nil || !hb.Resubmit {
			t.Errorf("Heartbeat after a re-add = resubmit %v err %v, want resubmit true and no error", hb.Resubmit, hb.Err)
		}
	})

	t.Run("StaleToken", func(t *testing.T) {
		s := open(t)
		a := start(t, s, store.AddParams{Type: "a"})
		b := start(t, s, store.AddParams{Type: "b"})
		beforeB := get(t, s, b.ID)
		p := 99.0
		res, err := s.Heartbeat(t.Context(), []store.HeartbeatParams{
			{Lease: lease(a), Data: raw(`{"ok":true}`)},
			{Lease: store.Lease{ID: b.ID, Token: "not-the-token"}, Data: raw(`{"stale":true}`), Progress: &p},
		})
		if err != nil {
			t.Fatalf("Heartbeat: the call failed: %v", err)
		}
		if len(res) != 2 {
			t.Fatalf("Heartbeat(2 items) returned %d results", len(res))
		}
		if res[0].Err != nil {
			t.Errorf("Heartbeat of the current lease: %v, want success", res[0].Err)
		}
		wantErr(t, "Heartbeat with a stale token", res[1].Err, store.ErrWorkerConflict)
		wantJSON(t, "data of the job with the current lease", get(t, s, a.ID).Data, `{"ok":true}`)
		unchanged(t, "Heartbeat with a stale token", beforeB, get(t, s, b.ID))
		fenced(t, s, store.Lease{ID: a.ID, Token: b.Token}, store.ErrWorkerConflict)
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t"})
		before := get(t, s, j.ID)
		for _, c := range []struct {
			name string
			p    store.HeartbeatParams
		}{
			{"progress 101", store.HeartbeatParams{Lease: lease(j), Progress: ptr(101.0)}},
			{"progress -1", store.HeartbeatParams{Lease: lease(j), Progress: ptr(-1.0)}},
			{"data not an object", store.HeartbeatParams{Lease: lease(j), Data: raw(`[1]`)}},
			{"no token", store.HeartbeatParams{Lease: store.Lease{ID: j.ID}}},
		} {
			_, err := s.Heartbeat(t.Context(), []store.HeartbeatParams{{Lease: lease(j), Progress: ptr(10.0)}, c.p})
			wantErr(t, "Heartbeat with "+c.name, err, store.ErrInvalid)
		}
		unchanged(t, "rejected heartbeats", before, get(t, s, j.ID))
	})
}

func ptr[T any](v T) *T { return &v }
