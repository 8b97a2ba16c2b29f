package storetest

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- close ----

func testClose(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	j := start(t, s, store.AddParams{Type: "t", Key: "k"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	l := lease(j)
	calls := []struct {
		name string
		fn   func() error
	}{
		{"Add", func() error { _, err := s.Add(ctx, []store.AddParams{{Type: "t"}}); return err }},
		{"Get", func() error { _, err := s.Get(ctx, []int64{j.ID}); return err }},
		{"GetByKey", func() error { _, err := s.GetByKey(ctx, "t", "", "k"); return err }},
		{"List", func() error { _, err := s.List(ctx, store.ListParams{}); return err }},
		{"Resubmit", func() error { _, _, err := s.Resubmit(ctx, []store.ResubmitParams{{ID: j.ID}}); return err }},
		{"Cancel", func() error { _, err := s.Cancel(ctx, []int64{j.ID}); return err }},
		{"Remove", func() error { _, err := s.Remove(ctx, []int64{j.ID}); return err }},
		{"Accept", func() error { _, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t"}}); return err }},
		{"Heartbeat", func() error { _, err := s.Heartbeat(ctx, []store.HeartbeatParams{{Lease: l}}); return err }},
		{"Finish", func() error {
			_, err := s.Finish(ctx, []store.FinishParams{{Lease: l, As: store.Complete}})
			return err
		}},
		{"ExpireLeases", func() error { _, _, err := s.ExpireLeases(ctx, time.Now()); return err }},
		{"SetTypeConfig", func() error { return s.SetTypeConfig(ctx, store.TypeConfig{Type: "t"}) }},
		{"TypeConfigs", func() error { _, err := s.TypeConfigs(ctx); return err }},
		{"Stats", func() error { _, err := s.Stats(ctx); return err }},
		{"SetGroupConfig", func() error { return s.SetGroupConfig(ctx, store.GroupConfig{Group: "g", Weight: 2}) }},
		{"GroupConfigs", func() error { _, err := s.GroupConfigs(ctx); return err }},
	}
	for _, c := range calls {
		// Each call several times: a store must refuse every call after
		// Close, not just most of them.
		for range 5 {
			done := make(chan error, 1)
			go func() { done <- c.fn() }()
			select {
			case err := <-done:
				wantErr(t, c.name+" after Close", err, store.ErrClosed)
			case <-time.After(5 * time.Second):
				t.Errorf("%s after Close did not return within 5s, want ErrClosed at once", c.name)
			}
		}
	}
}
