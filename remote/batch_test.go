package remote_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// TestBatch: a batch larger than one request crosses the wire whole (open,
// its jobs in several requests, then closed), and its counts, callbacks
// and refusals come back as the store gives them.
func TestBatch(t *testing.T) {
	local, url := serve(t)
	c, err := remote.NewClient(url, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()

	n := store.MaxAddBatch + 5
	jobs := make([]rota.AddParams, n)
	for i := range jobs {
		jobs[i] = rota.AddParams{Type: "item"}
	}
	b, res, err := c.AddBatch(ctx, rota.NewBatch{Jobs: jobs, OnComplete: &rota.AddParams{Type: "after"}, Description: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != n || b.Open || b.Done || b.Counts.Total != int64(n) || b.OnComplete == nil || b.OnComplete.Type != "after" || b.Description != "big" {
		t.Fatalf("AddBatch of %d jobs: %d results, batch %+v", n, len(res), b)
	}
	if res[n-1].Job.Batch != b.ID {
		t.Errorf("the last job's batch %d, want %d", res[n-1].Job.Batch, b.ID)
	}
	// The members run on the server's own client.
	for {
		got, err := local.Accept(ctx, rota.AcceptParams{Types: []string{"item"}, Limit: 1000, LeaseTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		ps := make([]rota.FinishParams, len(got))
		for i, j := range got {
			ps[i] = rota.FinishParams{Lease: j.Lease(), As: store.Complete}
		}
		if _, err := local.FinishMany(ctx, ps); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.GetBatch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Done || got.DoneAt.IsZero() || got.Counts.Completed != int64(n) || got.CompleteJob == 0 {
		t.Fatalf("GetBatch after the members: %+v", got)
	}
	if cb, err := c.Get(ctx, got.CompleteJob); err != nil || cb.Type != "after" {
		t.Errorf("the callback job: %+v, %v", cb, err)
	}
	list, err := c.ListBatches(ctx, rota.BatchListParams{Limit: 10})
	if err != nil || len(list) != 1 || list[0].ID != b.ID {
		t.Errorf("ListBatches: %+v, %v", list, err)
	}
	if _, err := c.Add(ctx, rota.AddParams{Type: "item", Batch: b.ID}); !errors.Is(err, store.ErrFinished) {
		t.Errorf("joining a done batch: %v, want ErrFinished", err)
	}
	if _, err := c.CloseBatch(ctx, b.ID+1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("closing a batch that does not exist: %v, want ErrNotFound", err)
	}
}
