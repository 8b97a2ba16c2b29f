package postgres_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// TestBatchCallbackAcrossNodes: members of the same batches end on two
// nodes at once (completions, failures for good and cancels, one to four
// per call); every batch is done once, with the right counts, and each of
// its callbacks is added exactly once.
func TestBatchCallbackAcrossNodes(t *testing.T) {
	schema := newSchema(t)
	nodes := []*postgres.Store{openIn(t, schema, postgres.Config{}), openIn(t, schema, postgres.Config{})}
	ctx := t.Context()
	const batches, members = 12, 40
	ids := make([]int64, batches)
	for b := range batches {
		jobs := make([]store.AddParams, members)
		for i := range jobs {
			jobs[i] = store.AddParams{Type: "m", MaxAttempts: 1, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
		}
		nb, _, err := nodes[b%2].AddBatch(ctx, store.NewBatch{Jobs: jobs,
			OnComplete: &store.AddParams{Type: "after"}, OnSuccess: &store.AddParams{Type: "success"}})
		if err != nil {
			t.Fatal(err)
		}
		ids[b] = nb.ID
	}
	// One member in ten fails for good, one in ten is cancelled by a
	// producer on the other node; the rest complete.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		s, other := nodes[w%2], nodes[(w+1)%2]
		wg.Go(func() {
			for idle := 0; idle < 50; {
				res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"m"}, Limit: 1 + w%4, LeaseTimeout: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if len(res.Jobs) == 0 {
					idle++
					time.Sleep(2 * time.Millisecond)
					continue
				}
				var ps []store.FinishParams
				for _, j := range res.Jobs {
					var d struct{ I int }
					json.Unmarshal(j.Data, &d)
					switch d.I % 10 {
					case 3:
						ps = append(ps, store.FinishParams{Lease: j.Lease(), As: store.Fail, Error: "no"})
					case 7:
						if _, err := other.Cancel(ctx, []int64{j.ID}); err != nil {
							errs <- err
							return
						}
					default:
						ps = append(ps, store.FinishParams{Lease: j.Lease(), As: store.Complete})
					}
				}
				if len(ps) > 0 {
					if _, err := s.Finish(ctx, ps); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := store.BatchCounts{Total: members, Completed: members * 8 / 10, Failed: members / 10, Cancelled: members / 10}
	callbacks := map[int64]int{}
	for _, typ := range []string{"after", "success"} {
		res, err := nodes[0].List(ctx, store.ListParams{Types: []string{typ}, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if typ == "success" && len(res.Jobs) != 0 {
			t.Errorf("%d on_success jobs, want none: every batch has failures", len(res.Jobs))
		}
		for _, j := range res.Jobs {
			var d struct {
				Batch struct {
					ID     int64             `json:"id"`
					Counts store.BatchCounts `json:"counts"`
				} `json:"batch"`
			}
			if err := json.Unmarshal(j.Data, &d); err != nil {
				t.Fatal(err)
			}
			callbacks[d.Batch.ID]++
			if d.Batch.Counts != want {
				t.Errorf("batch %d's callback saw %+v, want %+v", d.Batch.ID, d.Batch.Counts, want)
			}
		}
	}
	for _, id := range ids {
		b, err := nodes[1].GetBatch(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !b.Done || b.Counts != want || b.CompleteJob == 0 || b.SuccessJob != 0 {
			t.Errorf("batch %d: %+v, want done with %+v and only on_complete", id, b, want)
		}
		if n := callbacks[id]; n != 1 {
			t.Errorf("batch %d: its on_complete was added %d times, want once", id, n)
		}
	}
}
