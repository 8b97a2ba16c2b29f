package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// counted marks the context of the calls whose round trips count (not
// the store's own: sweeps, notifications).
type counted struct{}

// roundTrips counts the round trips of a pool's connections made under a
// counted context: a statement sent on its own, or a batch (whose
// statements go in one pipeline).
type roundTrips struct {
	n       atomic.Int64
	inBatch atomic.Int64
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if r.inBatch.Load() == 0 && ctx.Value(counted{}) != nil {
		r.n.Add(1)
	}
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	if ctx.Value(counted{}) != nil {
		r.n.Add(1)
	}
	r.inBatch.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {
	r.inBatch.Add(-1)
}

// TestAcceptRoundTrips counts the round trips of an accept that one group
// serves whole: one for a type with no rate and no bound, and one for a
// type with both when neither can bind (the head step takes the type's
// lock, checks and charges them in SQL: headLimitedSQL); they are what
// the drain pays for rates and bounds that do not bind
// (docs/benchmarks.md, "Round 4: flow control that does not bind"). A
// bound close to binding costs the accept that finds it so five (the head
// step that declines, then the locked transaction's three, and a page of
// groups read again after its claim), and the accepts after it three,
// until it no longer binds; the bound holds.
func TestAcceptRoundTrips(t *testing.T) {
	rt := &roundTrips{}
	st := openIn(t, newSchema(t), postgres.WithTracer(postgres.Config{MaxConns: 1}, rt))
	ctx := t.Context()
	if err := st.SetTypeConfig(ctx, store.TypeConfig{Type: "limited", Rate: store.Rate{N: 1_000_000, Per: time.Second}, Burst: 1_000_000, MaxRunning: 100_000}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTypeConfig(ctx, store.TypeConfig{Type: "rated", Rate: store.Rate{N: 1_000, Per: time.Minute}, Burst: 1_000}); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"plain", "limited", "rated"} {
		ps := make([]store.AddParams, 100)
		for i := range ps {
			ps[i] = store.AddParams{Type: typ}
		}
		if _, err := st.Add(ctx, ps); err != nil {
			t.Fatal(err)
		}
	}
	accept := func(typ string) (int, int64) {
		t.Helper()
		before := rt.n.Load()
		res, err := st.Accept(context.WithValue(ctx, counted{}, true), store.AcceptParams{Types: []string{typ}, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Jobs), rt.n.Load() - before
	}
	for _, c := range []struct {
		typ  string
		want int64
	}{{"plain", 1}, {"limited", 1}, {"rated", 1}} {
		for i := range 3 { // the first accept of a connection prepares its statements
			n, got := accept(c.typ)
			if n != 10 {
				t.Fatalf("%s: accepted %d jobs, want 10", c.typ, n)
			}
			t.Logf("%s: accept %d: %d round trips", c.typ, i, got)
			if i > 0 && got > c.want {
				t.Errorf("%s: an accept took %d round trips, want at most %d", c.typ, got, c.want)
			}
		}
	}
	// A bound of 25 running jobs: the third accept of 10 finds it close
	// to binding.
	if err := st.SetTypeConfig(ctx, store.TypeConfig{Type: "bound", MaxRunning: 25}); err != nil {
		t.Fatal(err)
	}
	ps := make([]store.AddParams, 100)
	for i := range ps {
		ps[i] = store.AddParams{Type: "bound"}
	}
	if _, err := st.Add(ctx, ps); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, want := range []struct {
		jobs  int
		trips int64
	}{{10, 0}, {10, 1}, {5, 5}, {0, 3}, {0, 3}} {
		n, got := accept("bound")
		total += n
		t.Logf("bound: accept %d: %d jobs, %d round trips", i, n, got)
		if n != want.jobs {
			t.Fatalf("bound: accept %d took %d jobs, want %d (%d running, bound 25)", i, n, want.jobs, total)
		}
		if want.trips > 0 && got > want.trips {
			t.Errorf("bound: accept %d took %d round trips, want at most %d", i, got, want.trips)
		}
	}
}

// TestWaitingAcceptReturnsTheHead: an accept whose caller waits for jobs
// (AcceptParams.Wait) and finds no other due job hands out what its first
// claim took, in one round trip, rather than claim again for other groups
// (and read the next run apart). In front of a backlog (another group's
// job due) it fills its batch from every group, as an accept that does not
// wait does: a waiting remote worker was otherwise handed one group's head
// per request (the TypeScript worker's test: 601 accepts for 600 jobs).
func TestWaitingAcceptReturnsTheHead(t *testing.T) {
	rt := &roundTrips{}
	st := openIn(t, newSchema(t), postgres.WithTracer(postgres.Config{MaxConns: 1}, rt))
	ctx := t.Context()
	add := func(groups ...string) {
		t.Helper()
		ps := make([]store.AddParams, len(groups))
		for i, g := range groups {
			ps[i] = store.AddParams{Type: "w", Group: g}
		}
		if _, err := st.Add(ctx, ps); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 { // the first accept of a connection prepares its statements
		add("a")
		before := rt.n.Load()
		res, err := st.Accept(context.WithValue(ctx, counted{}, true), store.AcceptParams{Types: []string{"w"}, Limit: 10, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got := rt.n.Load() - before
		t.Logf("accept %d: %d jobs, %d round trips", i, len(res.Jobs), got)
		if len(res.Jobs) != 1 {
			t.Fatalf("a waiting accept took %d jobs, want the 1 there is", len(res.Jobs))
		}
		if !res.NextRunAt.IsZero() {
			t.Fatalf("next run %v, want none: no job is left", res.NextRunAt)
		}
		if i > 0 && got != 1 {
			t.Errorf("a waiting accept that found jobs took %d round trips, want 1", got)
		}
	}
	for _, wait := range []time.Duration{time.Second, 0} {
		add("a", "b", "c")
		res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"w"}, Limit: 10, Wait: wait})
		if err != nil || len(res.Jobs) != 3 {
			t.Fatalf("an accept (wait %v) in front of three groups' due jobs took %d (%v), want all 3", wait, len(res.Jobs), err)
		}
	}
}
