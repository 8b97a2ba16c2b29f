package postgres_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// TestRateAcrossNodes measures rates held by two nodes on one PostgreSQL
// (two stores, each with its own pool, client and worker), from the start
// times of the jobs: a type at 50/s starts 500 ± 5% jobs in 10 s after its
// burst and never more than burst + rate in any one-second window; a type
// at 100/s split between a group of weight 3 and one of weight 1 gives
// them 3:1 (within 5%) while both have jobs, and the other's share once
// the smaller runs out (about 100/s). The two types run at once.
func TestRateAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement of about 12s")
	}
	schema := newSchema(t)
	nodes := []*postgres.Store{openIn(t, schema, postgres.Config{MaxConns: 6}), openIn(t, schema, postgres.Config{MaxConns: 6})}
	ctx := t.Context()
	st := nodes[0]
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.SetTypeConfig(ctx, store.TypeConfig{Type: "steady", Rate: store.Rate{N: 50, Per: time.Second}}))
	must(st.SetTypeConfig(ctx, store.TypeConfig{Type: "split", Rate: store.Rate{N: 100, Per: time.Second}}))
	must(nodes[1].SetGroupConfig(ctx, store.GroupConfig{Group: "a", Type: "split", Weight: 3}))
	addN := func(typ, grp string, n int) {
		for n > 0 {
			k := min(n, 500)
			ps := make([]store.AddParams, k)
			for i := range ps {
				ps[i] = store.AddParams{Type: typ, Group: grp}
			}
			if _, err := st.Add(ctx, ps); err != nil {
				t.Fatal(err)
			}
			n -= k
		}
	}
	addN("steady", "", 800)
	addN("split", "a", 1500)
	addN("split", "b", 125) // runs out after about 5s at its 25/s

	const run = 12 * time.Second
	wctx, stop := context.WithTimeout(ctx, run)
	defer stop()
	var wg sync.WaitGroup
	for i, n := range nodes {
		c, err := rota.NewClient(n, rota.Config{})
		must(err)
		defer c.Close()
		w := rota.NewWorker(c, rota.WorkerConfig{Name: "node" + string(rune('0'+i)), Concurrency: 8})
		done := rota.HandlerFunc(func(context.Context, *rota.Job) error { return nil })
		w.Handle("steady", done)
		w.Handle("split", done)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx); err != nil && wctx.Err() == nil {
				t.Errorf("worker: %v", err)
			}
		}()
	}
	wg.Wait()

	// The start times, by type and group, from the jobs.
	starts := map[string][]time.Time{}
	var after int64
	for {
		res, err := st.List(ctx, store.ListParams{After: after, Limit: store.MaxListLimit})
		must(err)
		for _, j := range res.Jobs {
			if !j.StartedAt.IsZero() {
				starts[j.Type+"/"+j.Group] = append(starts[j.Type+"/"+j.Group], j.StartedAt)
			}
		}
		if res.Next == 0 {
			break
		}
		after = res.Next
	}
	for _, s := range starts {
		slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
	}
	in := func(s []time.Time, from, to time.Time) int {
		n := 0
		for _, x := range s {
			if !x.Before(from) && x.Before(to) {
				n++
			}
		}
		return n
	}

	// 50/s with its default burst of 50.
	steady := starts["steady/"]
	if len(steady) == 0 {
		t.Fatal("no job of the type at 50/s started")
	}
	t0 := steady[0]
	if n := in(steady, t0.Add(time.Second), t0.Add(11*time.Second)); math.Abs(float64(n)-500) > 25 {
		t.Errorf("50/s over the 10s after the burst: %d jobs started, want 500 ± 5%%", n)
	} else {
		t.Logf("50/s over 10s across two nodes: %d jobs started", n)
	}
	most := 0
	for i, j := 0, 0; i < len(steady); i++ {
		for steady[i].Sub(steady[j]) >= time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	if most > 100 {
		t.Errorf("%d jobs started within one second at 50/s with a burst of 50, more than burst + rate", most)
	} else {
		t.Logf("most starts in any one-second window: %d (burst + rate: 100)", most)
	}

	// 100/s split 3:1, then all of it to a once b has run out.
	a, b := starts["split/a"], starts["split/b"]
	if len(b) != 125 || len(a) == 0 {
		t.Fatalf("split: a started %d, b %d of its 125", len(a), len(b))
	}
	s0, bEnd := a[0], b[len(b)-1]
	if b[0].Before(s0) {
		s0 = b[0]
	}
	na, nb := in(a, s0.Add(time.Second), bEnd.Add(-500*time.Millisecond)), in(b, s0.Add(time.Second), bEnd.Add(-500*time.Millisecond))
	if share := float64(na) / float64(na+nb); math.Abs(share-0.75) > 0.75*0.05 || na+nb < 200 {
		t.Errorf("100/s, weights 3:1, both flooding: a %d, b %d (a's share %.3f), want 3:1 within 5%%", na, nb, share)
	} else {
		t.Logf("100/s, weights 3:1: a %d, b %d (a's share %.3f)", na, nb, share)
	}
	from, to := bEnd.Add(time.Second), s0.Add(run-time.Second)
	if to.Sub(from) < 3*time.Second {
		t.Fatalf("b ran out at %v of %v: too late to measure a alone", bEnd.Sub(s0), run)
	}
	rate := float64(in(a, from, to)) / to.Sub(from).Seconds()
	if math.Abs(rate-100) > 5 {
		t.Errorf("b idle: a started %.1f jobs/s, want its share, about 100/s", rate)
	} else {
		t.Logf("b idle: a started %.1f jobs/s of 100/s", rate)
	}
}
