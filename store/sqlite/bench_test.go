package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

func openBench(b *testing.B) *sqlite.Store {
	b.Helper()
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"), sqlite.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

var benchData = json.RawMessage(`{"image":"img-000001.png","width":320,"height":240}`)

func addN(b *testing.B, st *sqlite.Store, n, batch int) {
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

// BenchmarkAddBatch100 measures durable inserts in batches of 100; one op
// is one job.
func BenchmarkAddBatch100(b *testing.B) {
	st := openBench(b)
	b.ResetTimer()
	addN(b, st, b.N, 100)
}

// BenchmarkAddConcurrent measures single-job adds from 8 goroutines, which
// group commit merges into shared transactions; one op is one job.
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

// BenchmarkDrain measures accept (batches of 100) plus complete of
// pre-added jobs, from 4 workers; one op is one job.
func BenchmarkDrain(b *testing.B) {
	st := openBench(b)
	addN(b, st, b.N, 1000)
	ctx := context.Background()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"bench"}, Limit: 100})
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
		}()
	}
	wg.Wait()
}

// BenchmarkAcceptGroups measures one accept of one job with 10 and with
// 10,000 groups that have due jobs; fair scheduling must not scan them all.
func BenchmarkAcceptGroups(b *testing.B) {
	for _, groups := range []int{10, 10000} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) {
			st := openBench(b)
			ctx := context.Background()
			perGroup := max(b.N/groups+2, 2)
			var ps []store.AddParams
			for i := range perGroup {
				for g := range groups {
					ps = append(ps, store.AddParams{Type: "bench", Group: fmt.Sprintf("g%05d", g), Data: benchData})
					if len(ps) == 1000 || (i == perGroup-1 && g == groups-1) {
						if _, err := st.Add(ctx, ps); err != nil {
							b.Fatal(err)
						}
						ps = ps[:0]
					}
				}
			}
			b.ResetTimer()
			for range b.N {
				res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"bench"}, Limit: 1})
				if err != nil || len(res.Jobs) != 1 {
					b.Fatalf("accept: %v %v", res.Jobs, err)
				}
			}
		})
	}
}

// BenchmarkAccept100 measures accept alone, in batches of 100 from a
// backlog of b.N jobs; one op is one job.
func BenchmarkAccept100(b *testing.B) {
	st := openBench(b)
	addN(b, st, b.N, 1000)
	ctx := context.Background()
	b.ResetTimer()
	for done := 0; done < b.N; {
		res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"bench"}, Limit: 100})
		if err != nil || len(res.Jobs) == 0 {
			b.Fatalf("accept: %d jobs, %v", len(res.Jobs), err)
		}
		done += len(res.Jobs)
	}
}

// BenchmarkComplete100 measures completing accepted jobs in batches of
// 100 (the set-based path); one op is one job.
func BenchmarkComplete100(b *testing.B) {
	finish100(b, store.FinishParams{As: store.Complete})
}

// BenchmarkRetry100 measures failing accepted jobs into retries in
// batches of 100: the general finish path, which applies each job's plan
// and counts its move between groups' counts; one op is one job.
func BenchmarkRetry100(b *testing.B) {
	finish100(b, store.FinishParams{As: store.Fail, Error: "again"})
}

// finish100 accepts b.N jobs, then times finishing them as p says, 100 at
// a time.
func finish100(b *testing.B, p store.FinishParams) {
	st := openBench(b)
	addN(b, st, b.N, 1000)
	ctx := context.Background()
	var leases []store.FinishParams
	for len(leases) < b.N {
		res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"bench"}, Limit: 1000})
		if err != nil || len(res.Jobs) == 0 {
			b.Fatalf("accept: %d jobs, %v", len(res.Jobs), err)
		}
		for _, j := range res.Jobs {
			p.Lease = j.Lease()
			leases = append(leases, p)
		}
	}
	b.ResetTimer()
	for i := 0; i < len(leases); i += 100 {
		errs, err := st.Finish(ctx, leases[i:min(i+100, len(leases))])
		if err != nil || errs[0] != nil {
			b.Fatalf("finish: %v %v", err, errs[0])
		}
	}
}
