package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// testImport: jobs imported in their states, with a family, Bedrock ids
// and creation times; the counts follow; a bad batch changes nothing.
func testImport(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	im, ok := s.(store.Importer)
	if !ok {
		t.Skip("the store does not import")
	}
	created := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	batch := []store.ImportJob{
		{AddParams: store.AddParams{Type: "q", Data: raw(`{"a":1}`), Priority: 750, Schedule: "FINISHED, +1 HOUR"}, State: store.Pending, ParentIndex: -1, BedrockID: 111, CreatedAt: created},
		{AddParams: store.AddParams{Type: "parent"}, State: store.Paused, ParentIndex: -1, BedrockID: 222},
		{AddParams: store.AddParams{Type: "child"}, State: store.Pending, ParentIndex: 1, BedrockID: 333},
		{AddParams: store.AddParams{Type: "child"}, State: store.Completed, ParentIndex: 1, BedrockID: 444},
		{AddParams: store.AddParams{Type: "f"}, State: store.Failed, ParentIndex: -1, BedrockID: 555, LastError: "it broke"},
		{AddParams: store.AddParams{Type: "c"}, State: store.Cancelled, ParentIndex: -1},
	}
	// A bad batch is refused whole.
	bad := append([]store.ImportJob{}, batch...)
	bad = append(bad, store.ImportJob{AddParams: store.AddParams{Type: "x"}, State: store.Running, ParentIndex: -1})
	if _, err := im.Import(t.Context(), bad); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("importing a running job: %v, want ErrInvalid", err)
	}
	if res, _ := s.List(t.Context(), store.ListParams{}); len(res.Jobs) != 0 {
		t.Fatalf("a refused import left %d jobs", len(res.Jobs))
	}
	ids, err := im.Import(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Get(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range batch {
		j := jobs[i]
		if j.State != want.State || j.BedrockID != want.BedrockID || j.Type != want.Type {
			t.Errorf("import %d: %s %s bedrock %d, want %s %s bedrock %d", i, j.Type, j.State, j.BedrockID, want.Type, want.State, want.BedrockID)
		}
		if want.ParentIndex >= 0 && j.Parent != ids[want.ParentIndex] {
			t.Errorf("import %d: parent %d, want %d", i, j.Parent, ids[want.ParentIndex])
		}
		if want.State.Terminal() && j.FinishedAt.IsZero() {
			t.Errorf("import %d: ended without an end time", i)
		}
	}
	if !jobs[1].HasChildren {
		t.Errorf("the imported parent has no children")
	}
	if !jobs[0].CreatedAt.Equal(created) || jobs[0].Schedule != "FINISHED, +1 HOUR" || jobs[0].Priority != 750 {
		t.Errorf("import 0: created %v schedule %q priority %d", jobs[0].CreatedAt, jobs[0].Schedule, jobs[0].Priority)
	}
	if jobs[4].LastError != "it broke" {
		t.Errorf("the failed job's last error is %q", jobs[4].LastError)
	}
	// Counts and accepts see the states.
	counts, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, c := range counts {
		got[c.Type+" "+c.State.String()] += c.Jobs
	}
	for k, n := range map[string]int64{"q pending": 1, "parent paused": 1, "child pending": 1, "child completed": 1, "f failed": 1, "c cancelled": 1} {
		if got[k] != n {
			t.Errorf("stats %s = %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	res := accept(t, s, store.AcceptParams{Types: []string{"*"}, Limit: 10})
	if len(res.Jobs) != 2 {
		t.Errorf("accept took %d imported jobs, want the 2 pending", len(res.Jobs))
	}
	if b, ok := s.(store.BedrockIDs); ok {
		m, err := b.ByBedrockID(t.Context(), []int64{111, 444, 555})
		if err != nil || m[111] != ids[0] || m[444] != ids[3] || m[555] != ids[4] {
			t.Errorf("ByBedrockID of imported jobs = %v, %v", m, err)
		}
	}
}
