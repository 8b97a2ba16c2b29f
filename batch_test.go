package rota_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
	_ "github.com/rotajobs/rota/store/sqlite"
)

// TestAddBatchOverOneAdd: a batch of more jobs than one add takes goes in
// whole, closed after its last job (or left open when asked); a bad job
// among the later ones refuses it with nothing added, and one the store
// refuses leaves it open with the jobs before, saying so.
func TestAddBatchOverOneAdd(t *testing.T) {
	c, err := rota.Open(filepath.Join(t.TempDir(), "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	n := store.MaxAddBatch + 3
	jobs := make([]rota.AddParams, n)
	for i := range jobs {
		jobs[i] = rota.AddParams{Type: "item"}
	}
	b, res, err := c.AddBatch(ctx, rota.NewBatch{Jobs: jobs, OnComplete: &rota.AddParams{Type: "after"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != n || b.Open || b.Counts.Total != int64(n) || res[n-1].Job.Batch != b.ID {
		t.Fatalf("AddBatch of %d jobs: %d results, batch %+v", n, len(res), b)
	}
	b, _, err = c.AddBatch(ctx, rota.NewBatch{Jobs: jobs, Open: true})
	if err != nil || !b.Open || b.Counts.Total != int64(n) {
		t.Fatalf("AddBatch of %d jobs, open: %+v, %v", n, b, err)
	}
	before, err := c.ListBatches(ctx, rota.BatchListParams{})
	if err != nil {
		t.Fatal(err)
	}
	jobs[n-1].Type = ""
	_, res, err = c.AddBatch(ctx, rota.NewBatch{Jobs: jobs})
	if !errors.Is(err, store.ErrInvalid) || len(res) != 0 || !strings.Contains(err.Error(), fmt.Sprintf("job %d of %d", n, n)) {
		t.Fatalf("a bad job after the first add's: %d results, %v; want none and ErrInvalid naming job %d", len(res), err, n)
	}
	if after, _ := c.ListBatches(ctx, rota.BatchListParams{}); len(after) != len(before) {
		t.Errorf("a refused batch was added: %d batches, then %d", len(before), len(after))
	}
	jobs[n-1] = rota.AddParams{Type: "item", Parent: 999999} // refused by the store only
	_, res, err = c.AddBatch(ctx, rota.NewBatch{Jobs: jobs})
	if !errors.Is(err, store.ErrNotFound) || len(res) != store.MaxAddBatch || !strings.Contains(err.Error(), "is open with its first 10000 jobs") {
		t.Fatalf("a job the store refuses after the first add: %d results, %v; want the first %d and ErrNotFound", len(res), err, store.MaxAddBatch)
	}
	left, err := c.GetBatch(ctx, res[0].Job.Batch)
	if err != nil || !left.Open || left.Counts.Total != store.MaxAddBatch {
		t.Errorf("the batch after the failure: %+v, %v; want it open with the first add's jobs", left, err)
	}
}
