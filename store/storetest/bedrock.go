package storetest

import (
	"testing"

	"github.com/rotajobs/rota/store"
)

// ---- Bedrock's ids ----

func testBedrockIDs(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	b, ok := s.(store.BedrockIDs)
	if !ok {
		t.Skip("the store keeps no Bedrock ids")
	}
	j1 := addOne(t, s, store.AddParams{Type: "t"})
	j2 := ended(t, s, store.AddParams{Type: "u"}, store.Completed)
	if j1.BedrockID != 0 {
		t.Errorf("a new job has Bedrock id %d before the protocol names it", j1.BedrockID)
	}
	got, err := b.BedrockIDs(t.Context(), []int64{j1.ID, j2.ID, 987654})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[j1.ID] <= 0 || got[j2.ID] <= 0 || got[j1.ID] == got[j2.ID] {
		t.Fatalf("BedrockIDs = %v, want two distinct positive ids and none for the missing job", got)
	}
	// Stable: asked again, the same; shown on the job; found by it.
	again, err := b.BedrockIDs(t.Context(), []int64{j1.ID})
	if err != nil || again[j1.ID] != got[j1.ID] {
		t.Errorf("BedrockIDs again = %v %v, want %d", again, err, got[j1.ID])
	}
	if j := get(t, s, j1.ID); j.BedrockID != got[j1.ID] {
		t.Errorf("job shows Bedrock id %d, want %d", j.BedrockID, got[j1.ID])
	}
	back, err := b.ByBedrockID(t.Context(), []int64{got[j1.ID], got[j2.ID], 42})
	if err != nil || len(back) != 2 || back[got[j1.ID]] != j1.ID || back[got[j2.ID]] != j2.ID {
		t.Errorf("ByBedrockID = %v %v", back, err)
	}
	// The id survives the job's moves: run and complete it, re-add it.
	run := accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs[0]
	if run.BedrockID != got[j1.ID] {
		t.Errorf("accepted job shows Bedrock id %d, want %d", run.BedrockID, got[j1.ID])
	}
	mustFinish(t, s, store.FinishParams{Lease: lease(run), As: store.Complete})
	resubmit(t, s, store.ResubmitParams{ID: j1.ID})
	if j := get(t, s, j1.ID); j.BedrockID != got[j1.ID] {
		t.Errorf("after completion and resubmit the job shows Bedrock id %d, want %d", j.BedrockID, got[j1.ID])
	}
}

// testPrevStarted: a claim keeps when the run before it started, which is
// Bedrock's lastRun as a dequeue reports it.
func testPrevStarted(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	addOne(t, s, store.AddParams{Type: "t"})
	first := accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs[0]
	if !first.PrevStartedAt.IsZero() || first.StartedAt.IsZero() {
		t.Errorf("first run: prev_started_at %v started_at %v, want none and a time", first.PrevStartedAt, first.StartedAt)
	}
	mustFinish(t, s, store.FinishParams{Lease: lease(first), As: store.Release})
	second := accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs[0]
	sameTime(t, "prev_started_at of the second run", second.PrevStartedAt, first.StartedAt)
	sameTime(t, "prev_started_at as stored", get(t, s, second.ID).PrevStartedAt, first.StartedAt)
	// It moves with the job to the ended table and back.
	mustFinish(t, s, store.FinishParams{Lease: lease(second), As: store.Complete})
	sameTime(t, "prev_started_at of a completed job", get(t, s, second.ID).PrevStartedAt, first.StartedAt)
}

// testAcceptPriority: an accept of one priority takes only jobs of that
// priority, in the fair order among them, on every path of an accept
// (one type, several types, with priority bands).
func testAcceptPriority(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	prio := func(p int) *int { return &p }
	for _, typ := range []string{"a", "b", "c", "d"} {
		for _, p := range []int{1000, 500, 500, 250} {
			for _, g := range []string{"x", "y"} {
				addOne(t, s, store.AddParams{Type: typ, Group: g, Priority: p})
			}
		}
	}
	if err := s.SetTypeConfig(t.Context(), store.TypeConfig{Type: "b", Bands: store.Bands{High: 2, Low: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, types := range [][]string{{"a"}, {"b"}, {"c", "d"}} {
		res := accept(t, s, store.AcceptParams{Types: types, Limit: 100, Priority: prio(500)})
		want := 4 * len(types)
		if len(res.Jobs) != want {
			t.Errorf("Accept(%v, priority 500) took %d jobs, want %d", types, len(res.Jobs), want)
		}
		for _, j := range res.Jobs {
			if j.Priority != 500 {
				t.Errorf("Accept(%v, priority 500) took a job of priority %d", types, j.Priority)
			}
		}
	}
	if res := accept(t, s, store.AcceptParams{Types: []string{"a", "b"}, Limit: 100, Priority: prio(7)}); len(res.Jobs) != 0 {
		t.Errorf("Accept of a priority no job has took %d jobs", len(res.Jobs))
	}
	// The rest are still there, highest first.
	res := accept(t, s, store.AcceptParams{Types: []string{"a"}, Limit: 1})
	if len(res.Jobs) != 1 || res.Jobs[0].Priority != 1000 {
		t.Errorf("Accept without a priority after the filtered ones: %+v", res.Jobs)
	}
}

// testRename: a snooze may give the job a new type (Bedrock's RetryJob
// with a name); the counts and the accepts follow it.
func testRename(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	j := start(t, s, store.AddParams{Type: "old", Group: "g"})
	mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Snooze, Rename: "new"})
	got := get(t, s, j.ID)
	if got.Type != "new" || got.State != store.Pending {
		t.Errorf("after a snooze with a rename: type %q state %v, want new, pending", got.Type, got.State)
	}
	if n := len(accept(t, s, store.AcceptParams{Types: []string{"old"}}).Jobs); n != 0 {
		t.Errorf("Accept of the old type took %d jobs", n)
	}
	res := accept(t, s, store.AcceptParams{Types: []string{"new"}})
	if len(res.Jobs) != 1 || res.Jobs[0].ID != j.ID {
		t.Fatalf("Accept of the new type took %v", res.Jobs)
	}
	counts, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		if c.Type == "old" && c.Jobs > 0 {
			t.Errorf("stats still count %d %v jobs of the old type", c.Jobs, c.State)
		}
	}
	cfgs, _ := s.TypeConfigs(t.Context())
	found := false
	for _, c := range cfgs {
		found = found || c.Type == "new"
	}
	if !found {
		t.Error("the new type is not known to the store")
	}
	_, err = s.Finish(t.Context(), []store.FinishParams{{Lease: lease(res.Jobs[0]), As: store.Complete, Rename: "other"}})
	wantErr(t, "a rename with complete", err, store.ErrInvalid)
}
