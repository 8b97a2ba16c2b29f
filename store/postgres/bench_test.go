package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

var benchData = json.RawMessage(`{"image":"img-000001.png","width":320,"height":240}`)

func addN(b *testing.B, st *postgres.Store, n, batch int) {
	ctx := context.Background()
	for done := 0; done < n; {
		ps := make([]store.AddParams, min(batch, n-done))
		for i := range ps {
			ps[i] = store.AddParams{Type: "bench", Data: benchData}
		}
		if _, err := st.Add(ctx, ps); err != nil {
			b.Fatal(err)
		}
		done += len(ps)
	}
}

func openBench(b *testing.B) *postgres.Store {
	b.Helper()
	return openIn(b, newSchema(b), postgres.Config{MaxConns: 8, NoNotify: os.Getenv("BENCH_NONOTIFY") != ""})
}

// BenchmarkAddBatch100 measures durable inserts in batches of 100; one op
// is one job.
func BenchmarkAddBatch100(b *testing.B) {
	st := openBench(b)
	b.ResetTimer()
	addN(b, st, b.N, 100)
}

// BenchmarkAddConcurrent measures single-job adds from 8 goroutines; one op
// is one job.
func BenchmarkAddConcurrent(b *testing.B) {
	st := openBench(b)
	ctx := context.Background()
	b.ResetTimer()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := st.Add(ctx, []store.AddParams{{Type: "bench", Data: benchData}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDrain measures accept plus complete of pre-added jobs, in
// batches, from 4 workers; one op is one job.
func BenchmarkDrain(b *testing.B) {
	for _, batch := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			st := openBench(b)
			addN(b, st, b.N, 5000)
			ctx := context.Background()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for {
						res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"bench"}, Limit: batch})
						if err != nil {
							b.Error(err)
							return
						}
						if len(res.Jobs) == 0 {
							return
						}
						ps := make([]store.FinishParams, len(res.Jobs))
						for i, j := range res.Jobs {
							ps[i] = store.FinishParams{Lease: j.Lease(), As: store.Complete}
						}
						if _, err := st.Finish(ctx, ps); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkAcceptGroups measures one accept with 10 and with 10,000 groups
// that have due jobs, of one job and of a batch of 100 (which serves 100
// groups once each when there are that many, and 10 groups ten times
// each); fair scheduling must not read all the groups: its cost follows
// the groups an accept serves, not the groups there are. One op is one
// accept.
func BenchmarkAcceptGroups(b *testing.B) {
	for _, limit := range []int{1, 100} {
		for _, groups := range []int{10, 100, 10000} {
			if limit == 1 && groups == 100 {
				continue
			}
			b.Run(fmt.Sprintf("limit=%d/groups=%d", limit, groups), func(b *testing.B) {
				st := openBench(b)
				ctx := context.Background()
				perGroup := max(b.N*limit/groups+2, 2)
				var ps []store.AddParams
				for i := range perGroup {
					for g := range groups {
						ps = append(ps, store.AddParams{Type: "bench", Group: fmt.Sprintf("g%05d", g), Data: benchData})
						if len(ps) == 5000 || (i == perGroup-1 && g == groups-1) {
							if _, err := st.Add(ctx, ps); err != nil {
								b.Fatal(err)
							}
							ps = ps[:0]
						}
					}
				}
				b.ResetTimer()
				for range b.N {
					res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"bench"}, Limit: limit})
					if err != nil || len(res.Jobs) != limit {
						b.Fatalf("accept: %d jobs, %v", len(res.Jobs), err)
					}
				}
			})
		}
	}
}
