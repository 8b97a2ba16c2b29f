package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- retention ----

func testRetention(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	r, ok := s.(store.Retirer)
	if !ok {
		t.Skip("the store does not delete ended jobs itself")
	}
	retire := func(now time.Time) int {
		t.Helper()
		total := 0
		for { // in batches of 2
			n, err := r.Retire(t.Context(), now, 2)
			if err != nil {
				t.Fatalf("Retire: %v", err)
			}
			total += n
			if n < 2 {
				return total
			}
		}
	}
	for _, typ := range []string{"short", "kid"} {
		if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: typ, Retention: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	// Failed jobs of dead expire an hour after they fail, its others
	// after the default retention.
	if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "dead", FailedRetention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	cfgs, err := s.TypeConfigs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(cfgs, func(c store.TypeConfig) bool { return c.Type == "short" }); i < 0 || cfgs[i].Retention != time.Hour || cfgs[i].FailedRetention != 0 {
		t.Errorf("TypeConfigs: %+v, want short's ended jobs kept for 1h and its failed ones until removed", cfgs)
	}
	if i := slices.IndexFunc(cfgs, func(c store.TypeConfig) bool { return c.Type == "dead" }); i < 0 ||
		cfgs[i].Retention != store.DefaultRetention || cfgs[i].FailedRetention != time.Hour {
		t.Errorf("TypeConfigs: %+v, want dead's failed jobs kept for 1h, its others for the default", cfgs)
	}
	var short []store.Job
	for _, st := range []store.State{store.Completed, store.Cancelled} {
		short = append(short, ended(t, s, store.AddParams{Type: "short"}, st))
	}
	// Failed jobs are kept until removed unless their type says otherwise,
	// whatever the type's Retention.
	failed := ended(t, s, store.AddParams{Type: "short"}, store.Failed)
	failedDefault := ended(t, s, store.AddParams{Type: "other"}, store.Failed)
	deadFailed := ended(t, s, store.AddParams{Type: "dead"}, store.Failed)
	deadDone := ended(t, s, store.AddParams{Type: "dead"}, store.Completed)
	pending := addOne(t, s, store.AddParams{Type: "short"})
	recurring := ended(t, s, store.AddParams{Type: "other"}, store.Completed)
	long := ended(t, s, store.AddParams{Type: "long"}, store.Completed)
	// A child that ended while its parent waits for its other children.
	parent := start(t, s, store.AddParams{Type: "short.parent"})
	child := addOne(t, s, store.AddParams{Type: "kid", Parent: parent.ID})
	sibling := addOne(t, s, store.AddParams{Type: "kid", Parent: parent.ID})
	mustFinish(t, s, store.FinishParams{Lease: lease(parent), As: store.Complete})
	run := accept(t, s, store.AcceptParams{Types: []string{"kid"}, Limit: 1}).Jobs
	if len(run) != 1 || run[0].ID != child.ID {
		t.Fatalf("accept took %v, want the first child", run)
	}
	mustFinish(t, s, store.FinishParams{Lease: lease(run[0]), As: store.Complete})

	if n := retire(time.Now()); n != 0 {
		t.Errorf("Retire now deleted %d jobs, want none", n)
	}
	if n := retire(time.Now().Add(2 * time.Hour)); n != 3 {
		t.Errorf("Retire two hours on deleted %d jobs, want short's completed and cancelled jobs and dead's failed one", n)
	}
	for _, j := range short {
		gone(t, s, j.ID)
	}
	gone(t, s, deadFailed.ID)
	wantState(t, get(t, s, deadDone.ID), store.Completed)
	wantState(t, get(t, s, failed.ID), store.Failed)
	wantState(t, get(t, s, pending.ID), store.Pending)
	wantState(t, get(t, s, child.ID), store.Completed) // its parent has yet to see it
	wantState(t, get(t, s, long.ID), store.Completed)
	// Past the default retention, the others go too, but not the child
	// of a parent that waits for its sibling.
	if n := retire(time.Now().Add(store.DefaultRetention + time.Hour)); n != 3 {
		t.Errorf("Retire past the default retention deleted %d jobs, want 3", n)
	}
	gone(t, s, recurring.ID)
	gone(t, s, long.ID)
	gone(t, s, deadDone.ID)
	// Failed jobs stay, years on.
	if n := retire(time.Now().Add(10 * 365 * 24 * time.Hour)); n != 0 {
		t.Errorf("Retire ten years on deleted %d jobs, want none (failed jobs are kept until removed)", n)
	}
	wantState(t, get(t, s, failed.ID), store.Failed)
	wantState(t, get(t, s, failedDefault.ID), store.Failed)
	wantState(t, get(t, s, child.ID), store.Completed)
	wantState(t, get(t, s, sibling.ID), store.Pending)

	if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "bad", Retention: time.Millisecond}); err == nil {
		t.Error("a retention under a second was accepted")
	}
	if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "bad", FailedRetention: -time.Hour}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a negative failed retention: %v, want ErrInvalid", err)
	}
}
