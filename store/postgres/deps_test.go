package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// TestFinishWorkflowRoundTrips counts the round trips of finishes that
// end jobs with dependants: the root of a fan-out of n, whose end makes
// all n pending, and the n, whose ends count the fan-in's sink down. Each
// takes as many round trips whatever n (docs/benchmarks.md, "Round 4:
// workflows"): the dependants are counted down in one statement, and the
// jobs with dependants complete set-based, where they took a statement
// each.
func TestFinishWorkflowRoundTrips(t *testing.T) {
	rt := &roundTrips{}
	st := openIn(t, newSchema(t), postgres.WithTracer(postgres.Config{MaxConns: 1}, rt))
	ctx := t.Context()
	counted := context.WithValue(ctx, counted{}, true)
	const n, most = 50, 10
	roots, err := st.Add(ctx, []store.AddParams{{Type: "wf"}})
	if err != nil {
		t.Fatal(err)
	}
	root := roots[0].Job.ID
	ps := make([]store.AddParams, n)
	for i := range ps {
		ps[i] = store.AddParams{Type: "wf", After: []int64{root}}
	}
	mids, err := st.Add(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	after := make([]int64, n)
	for i, m := range mids {
		after[i] = m.Job.ID
	}
	sinks, err := st.Add(ctx, []store.AddParams{{Type: "wf", After: after}})
	if err != nil {
		t.Fatal(err)
	}
	sink := sinks[0].Job.ID

	finishAll := func(what string, want int) {
		t.Helper()
		res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"wf"}, Limit: 2 * n})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != want {
			t.Fatalf("%s: accepted %d jobs, want %d", what, len(res.Jobs), want)
		}
		fs := make([]store.FinishParams, len(res.Jobs))
		for i, j := range res.Jobs {
			fs[i] = store.FinishParams{Lease: store.Lease{ID: j.ID, Token: j.Token}, As: store.Complete}
		}
		before := rt.n.Load()
		errs, err := st.Finish(counted, fs)
		if err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: finish of job %d: %v", what, fs[i].ID, err)
			}
		}
		got := rt.n.Load() - before
		t.Logf("%s: %d round trips", what, got)
		if got > most {
			t.Errorf("%s: the finish took %d round trips, want at most %d", what, got, most)
		}
	}
	finishAll("the root, which releases the fan-out", 1)
	finishAll("the fan-out, which releases the sink", n)
	res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"wf"}, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 1 || res.Jobs[0].ID != sink {
		t.Fatalf("accepted %v, want the sink %d alone", res.Jobs, sink)
	}
	if got := res.Jobs[0].Deps; len(got) != n {
		t.Fatalf("the sink sees %d dependencies, want %d", len(got), n)
	}
	for _, d := range res.Jobs[0].Deps {
		if d.State != store.Completed {
			t.Errorf("the sink sees dependency %d %s, want completed", d.ID, d.State)
		}
	}
}

// TestDepsOfPlan: the read of the dependencies of the jobs an accept
// hands out probes the indexes by id, whatever the tables' statistics;
// as a hash join it read the whole of deps and of the hot table at each
// accept (19 ms a call at 40,000 edges), a cost that grew with the
// tables (docs/benchmarks.md, "Round 4: workflows").
func TestDepsOfPlan(t *testing.T) {
	schema := newSchema(t)
	st := openIn(t, schema, postgres.Config{})
	ctx := t.Context()
	roots, err := st.Add(ctx, []store.AddParams{{Type: "wf"}})
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]store.AddParams, 2000)
	for i := range ps {
		ps[i] = store.AddParams{Type: "wf", After: []int64{roots[0].Job.ID}}
	}
	mids, err := st.Add(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 100)
	for i := range ids {
		ids[i] = mids[i*20].Job.ID
	}
	conn, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	var plan string
	if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+postgres.Statement(st, "deps_of"), ids).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, `"Seq Scan"`) {
		t.Errorf("deps_of reads a whole table:\n%s", plan)
	}
}
