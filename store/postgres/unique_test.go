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

// Adds with a unique window on two nodes at once make one job per (type,
// group, data) and per (type, group, key), and debounced adds of one key
// one job: the lock on what a window finds holds across nodes.
func TestUniqueForAcrossNodes(t *testing.T) {
	schema := newSchema(t)
	nodes := []*postgres.Store{openIn(t, schema, postgres.Config{}), openIn(t, schema, postgres.Config{})}
	const rounds, perNode = 20, 4
	for round := range rounds {
		data := json.RawMessage(fmt.Sprintf(`{"round":%d}`, round))
		key := fmt.Sprintf("k-%d", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ids := map[string]map[int64]bool{"data": {}, "key": {}, "debounce": {}}
		errs := make(chan error, 2*len(nodes)*perNode)
		for _, n := range nodes {
			for range perNode {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := n.Add(t.Context(), []store.AddParams{
						{Type: "mail", Group: "acme", UniqueFor: time.Hour, Data: data},
						{Type: "mail", Group: "acme", Key: key, UniqueFor: time.Hour},
						{Type: "index", Group: "acme", Key: key, Debounce: time.Hour, Data: data},
					})
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					ids["data"][res[0].Job.ID] = true
					ids["key"][res[1].Job.ID] = true
					ids["debounce"][res[2].Job.ID] = true
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(ids["data"]) != 1 || len(ids["key"]) != 1 || len(ids["debounce"]) != 1 {
			t.Fatalf("round %d: %d jobs for the same data, %d for the same key, %d debounced, want 1 each", round, len(ids["data"]), len(ids["key"]), len(ids["debounce"]))
		}
	}
	res, err := nodes[0].List(t.Context(), store.ListParams{Types: []string{"mail", "index"}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 3*rounds {
		t.Errorf("%d jobs, want %d", len(res.Jobs), 3*rounds)
	}
}
