package fair

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

func TestTurnsWon(t *testing.T) {
	cases := []struct {
		turn       float64
		grp        string
		weight     float64
		rivalTurn  float64
		rivalGrp   string
		want, wins int64
	}{
		{0, "a", 1, 0, "b", 10, 1},       // a tie goes to the smaller name
		{0, "b", 1, 0, "a", 10, 1},       // the popped group always wins its first turn
		{0, "b", 1, 1, "a", 10, 1},       // 0 < 1, then 1 ties and a wins
		{0, "a", 1, 1, "b", 10, 2},       // 0, and 1 wins the tie
		{0, "a", 3, 1, "b", 10, 4},       // 0, 1/3, 2/3, 1
		{1.0 / 3, "b", 3, 1, "a", 10, 2}, // 1/3, 2/3; 1 ties and a wins
		{0, "a", 1, 100, "b", 5, 5},      // bounded by want
	}
	for _, c := range cases {
		if got := TurnsWon(c.turn, c.grp, c.weight, c.rivalTurn, c.rivalGrp, c.want); got != c.wins {
			t.Errorf("TurnsWon(%v, %q, w%v, vs %v %q, want %d) = %d, want %d", c.turn, c.grp, c.weight, c.rivalTurn, c.rivalGrp, c.want, got, c.wins)
		}
	}
	if !TurnBefore(0, "b", 1, "a") || !TurnBefore(1, "a", 1, "b") || TurnBefore(1, "b", 1, "b") {
		t.Error("TurnBefore orders by turn, then name, strictly")
	}
}

// table is an in-memory turn index: a type's groups, read in (turn, name)
// order a page at a time, as the stores' tables are.
type table struct {
	groups map[string]*Group // as stored: turns move only when saved
	reads  int
}

func (tb *table) page(first bool, turn float64, name string, limit int) ([]*Group, error) {
	tb.reads++
	var all []*Group
	for _, g := range tb.groups {
		if g.Pending > 0 && (first || TurnBefore(turn, name, g.Turn, g.Name)) {
			c := *g
			all = append(all, &c)
		}
	}
	sort.Slice(all, func(i, j int) bool { return TurnBefore(all[i].Turn, all[i].Name, all[j].Turn, all[j].Name) })
	return all[:min(limit, len(all))], nil
}

// serve runs n picks of the round robin over q, taking as many turns from
// a group as it wins in a row, and returns the groups in pick order.
func serve(t *testing.T, q *Queue, n int64) []string {
	t.Helper()
	var out []string
	for int64(len(out)) < n {
		g, err := q.Next()
		if err != nil {
			t.Fatal(err)
		}
		if g == nil {
			break
		}
		k := min(q.Wins(g, n-int64(len(out))), g.Pending, g.Room(nil))
		if k == 0 {
			continue
		}
		for range k {
			out = append(out, g.Name)
		}
		g.Serve(k)
		q.Push(g)
	}
	return out
}

func TestRoundRobin(t *testing.T) {
	typeBound := &Bound{Max: 4, Running: 1}
	typeBound2 := &Bound{Max: 3}
	tests := []struct {
		name   string
		groups []*Group
		n      int64
		want   string
	}{
		{"equal weights alternate, ties by name", []*Group{{Name: "b", Pending: 3}, {Name: "a", Pending: 3}}, 6, "a b a b a b"},
		{"weight 2 gets twice the turns", []*Group{{Name: "a", Pending: 10, Weight: 2}, {Name: "b", Pending: 10}}, 6, "a b a a b a"}, // turns a 0 .5 1 1.5, b 0 1: ties to a
		{"a group that runs out leaves the round", []*Group{{Name: "a", Pending: 1}, {Name: "b", Pending: 5}}, 4, "a b b b"},
		{"turns carried from earlier accepts count", []*Group{{Name: "a", Pending: 5, Turn: 2}, {Name: "b", Pending: 5}}, 4, "b b a b"},
		{"a bound per group", []*Group{{Name: "a", Pending: 5, Limit: 1}, {Name: "b", Pending: 5}}, 4, "a b b b"},
		{"a bound across types", []*Group{{Name: "a", Pending: 5, Cross: &Bound{Max: 3, Running: 2}}, {Name: "b", Pending: 5}}, 4, "a b b b"},
		{"a bound on the whole type is shared by its groups", []*Group{{Name: "a", Pending: 5, TypeBound: typeBound}, {Name: "b", Pending: 5, TypeBound: typeBound}}, 6, "a b a"},
		{"a type's bound and a group's: the tighter holds", []*Group{{Name: "a", Pending: 5, Limit: 1, TypeBound: typeBound2}, {Name: "b", Pending: 5, TypeBound: typeBound2}}, 6, "a b b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &table{groups: map[string]*Group{}}
			for _, g := range tt.groups {
				g.Type = "t"
				tb.groups[g.Name] = g
			}
			q := NewQueue("t", store.Bands{}, 1, tb.page)
			if got := strings.Join(serve(t, q, tt.n), " "); got != tt.want {
				t.Fatalf("picks %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPaging checks that reading the turn index a page at a time gives the
// order of reading it all at once, with many groups.
func TestPaging(t *testing.T) {
	tb := &table{groups: map[string]*Group{}}
	for i := range 300 {
		name := fmt.Sprintf("g%03d", i)
		tb.groups[name] = &Group{Type: "t", Name: name, Pending: 2, Turn: float64(i % 7), Weight: float64(1 + i%3)}
	}
	whole := &table{groups: tb.groups}
	want := serve(t, NewQueue("t", store.Bands{}, 1000, whole.page), 200)
	got := serve(t, NewQueue("t", store.Bands{}, 5, tb.page), 200)
	if !slices.Equal(got, want) {
		t.Fatalf("paged order differs:\n%v\n%v", got[:20], want[:20])
	}
	if tb.reads < 2 || whole.reads != 1 {
		t.Fatalf("reads: paged %d, whole %d", tb.reads, whole.reads)
	}
	// A small accept reads only the front of the index.
	tb.reads = 0
	serve(t, NewQueue("t", store.Bands{}, 3, tb.page), 2)
	if tb.reads != 1 {
		t.Fatalf("an accept of 2 read %d pages", tb.reads)
	}
}

func TestBands(t *testing.T) {
	b := store.Bands{High: 2, Low: 1}
	var got []Band
	for pos := range int64(6) {
		got = append(got, BandOf(b, pos))
	}
	if want := []Band{HighBand, HighBand, LowBand, HighBand, HighBand, LowBand}; !slices.Equal(got, want) {
		t.Fatalf("bands %v, want %v", got, want)
	}
	if BandOf(store.Bands{}, 3) != AnyBand || HighBand.Other() != LowBand || LowBand.Other() != HighBand {
		t.Fatal("no scheme, or fallback, is wrong")
	}
	if lo, hi := HighBand.Range(); lo != 1 || hi < 1<<62 {
		t.Fatalf("high band %d..%d", lo, hi)
	}
	if lo, hi := LowBand.Range(); hi != 0 || lo > -1<<62 {
		t.Fatalf("low band %d..%d", lo, hi)
	}
}

func TestBetter(t *testing.T) {
	now := time.Now()
	cs := []Candidate{
		{ID: 5, Priority: 0, RunAt: now},
		{ID: 4, Priority: 9, RunAt: now},
		{ID: 3, Priority: 0, RunAt: now.Add(-time.Second)},
		{ID: 2, Retry: true, Priority: -5, RunAt: now},
		{ID: 1, Priority: 0, RunAt: now},
	}
	slices.SortFunc(cs, Compare)
	var ids []int64
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	if want := []int64{2, 4, 3, 1, 5}; !slices.Equal(ids, want) {
		t.Fatalf("order %v, want %v (retries, priority, run time, id)", ids, want)
	}
}

// TestPlanSettle: a store that plans turns and claims fewer ends where
// serving what it claimed would have left the group, its bound across
// types included, and LastTurn is the turn of its last job.
func TestPlanSettle(t *testing.T) {
	for _, w := range []float64{0.5, 1, 3, 4} {
		cross := &Bound{Max: 10, Running: 2}
		g := &Group{Name: "g", Turn: 1.5, Weight: w, Pending: 5, Running: 1, BandCount: 7, Cross: cross}
		want := *g
		wantCross := *cross
		want.Cross = &wantCross
		want.Serve(2)

		m := g.Mark()
		g.Plan(3)
		g.Plan(1)
		if cross.Running != 2 || g.Served != 0 {
			t.Errorf("weight %v: planning moved the bound across types to %d, Served to %d", w, cross.Running, g.Served)
		}
		g.Settle(m, 2)
		if g.Turn != want.Turn || g.Pending != want.Pending || g.Running != want.Running || g.BandCount != want.BandCount ||
			g.Served != want.Served || cross.Running != wantCross.Running {
			t.Errorf("weight %v: settled to %+v (cross %d), want %+v (cross %d)", w, *g, cross.Running, want, wantCross.Running)
		}
		if got := g.LastTurn(); got != 1.5+1/w {
			t.Errorf("weight %v: LastTurn = %v, want %v", w, got, 1.5+1/w)
		}
	}
}

// TestRoom checks the room a group has under each bound, and under the
// jobs planned but not claimed under the shared ones.
func TestRoom(t *testing.T) {
	cross, typ := &Bound{Max: 10, Running: 4}, &Bound{Max: 8, Running: 5}
	tests := []struct {
		name    string
		g       Group
		planned map[*Bound]int64
		want    int64
	}{
		{"no bound", Group{}, nil, math.MaxInt64},
		{"paused", Group{Paused: true}, nil, 0},
		{"its own bound", Group{Limit: 5, Running: 2}, nil, 3},
		{"over its own bound", Group{Limit: 2, Running: 3}, nil, 0},
		{"cross-type bound", Group{Cross: cross}, nil, 6},
		{"the type's bound", Group{TypeBound: typ}, nil, 3},
		{"the type's bound with planned jobs", Group{TypeBound: typ}, map[*Bound]int64{typ: 2}, 1},
		{"planned under another bound leave the type's", Group{TypeBound: typ, Cross: cross}, map[*Bound]int64{cross: 1}, 3},
		{"the tightest of all", Group{Limit: 9, Running: 7, Cross: cross, TypeBound: typ}, nil, 2},
		{"the type's bound reached", Group{TypeBound: &Bound{Max: 2, Running: 2}}, nil, 0},
	}
	for _, tt := range tests {
		if got := tt.g.Room(tt.planned); got != tt.want {
			t.Errorf("%s: room %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestServeTypeBound checks that serving a group counts its jobs under its
// type's bound, which every group of the type shares.
func TestServeTypeBound(t *testing.T) {
	b := &Bound{Max: 5}
	a, c := &Group{Name: "a", Weight: 1, Pending: 9, TypeBound: b}, &Group{Name: "c", Weight: 1, Pending: 9, TypeBound: b}
	a.Serve(2)
	if c.Room(nil) != 3 {
		t.Fatalf("after a served 2 of 5, c's room is %d, want 3", c.Room(nil))
	}
	m := c.Mark()
	c.Plan(3)
	if b.Running != 2 {
		t.Fatalf("planned jobs counted under the type's bound before they were claimed: %d", b.Running)
	}
	c.Settle(m, 1)
	if b.Running != 3 || c.Bounded() {
		t.Fatalf("settled 1: type running %d, want 3 (own bound %v)", b.Running, c.Bounded())
	}
}

func TestRefill(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := Rate{N: 10, Per: time.Second, Burst: 5}
	tests := []struct {
		name    string
		tokens  float64
		at, now time.Time
		want    float64
		wantAt  time.Time
	}{
		{"a bucket never refilled is full", 0, time.Time{}, t0, 5, t0},
		{"one token per 100ms", 0, t0, t0.Add(250 * time.Millisecond), 2.5, t0.Add(250 * time.Millisecond)},
		{"never above the burst", 1, t0, t0.Add(time.Hour), 5, t0.Add(time.Hour)},
		{"a clock behind the last refill refills nothing and keeps its time", 1.5, t0, t0.Add(-time.Millisecond), 1.5, t0},
		{"a smaller burst than the tokens held caps them", 9, t0, t0, 5, t0},
	}
	for _, tt := range tests {
		got, at := r.Refill(tt.tokens, tt.at, tt.now)
		if math.Abs(got-tt.want) > 1e-9 || !at.Equal(tt.wantAt) {
			t.Errorf("%s: %v tokens at %v, want %v at %v", tt.name, got, at, tt.want, tt.wantAt)
		}
	}
	if w := (Rate{N: 3, Per: time.Minute, Burst: 1}).Wait(0.5); w != 10*time.Second {
		t.Errorf("half a token at 3/m: next in %v, want 10s", w)
	}
	if w := r.Wait(1); w != 0 {
		t.Errorf("a whole token: wait %v, want 0", w)
	}
}

func TestBucket(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := Rate{N: 4, Per: time.Second, Burst: 4}
	b := OpenBucket(r, 1.5, t0, t0.Add(100*time.Millisecond)) // 1.9 tokens
	if b.Max != 1 {
		t.Fatalf("1.9 tokens: budget %d, want 1", b.Max)
	}
	g := &Group{Name: "a", Weight: 1, Pending: 5, TypeRate: b}
	if g.Room(nil) != 1 || g.Bounded() {
		t.Fatalf("room %d (bounded %v), want 1 under the type's rate, which is not the group's own", g.Room(nil), g.Bounded())
	}
	g.Serve(1)
	if g.Room(nil) != 0 || math.Abs(b.Left()-0.9) > 1e-9 {
		t.Fatalf("after a start: room %d, %v tokens left; want 0 and 0.9", g.Room(nil), b.Left())
	}
	if got, want := b.NextToken(), t0.Add(125*time.Millisecond); !got.Equal(want) {
		t.Fatalf("next token at %v, want %v (0.1 token at 4/s)", got, want)
	}
	if got := NextToken([]*Bucket{b, OpenBucket(r, 0, t0, t0)}); !got.Equal(t0.Add(125 * time.Millisecond)) {
		t.Fatalf("earliest next token %v", got)
	}
	own := &Group{Name: "b", Weight: 1, Pending: 5, Rate: OpenBucket(r, 0, time.Time{}, t0), TypeRate: b}
	if !own.Bounded() || own.Room(nil) != 0 {
		t.Fatalf("a group's own rate: bounded %v, room %d (the type's bucket is empty)", own.Bounded(), own.Room(nil))
	}
}

// TestRateShared simulates accepts every 10ms for 10s against a type at
// 100/s whose groups flood it: the jobs its bucket allows go in turn
// order, so by weight, and a group with nothing due leaves its share to
// the others.
func TestRateShared(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := Rate{N: 100, Per: time.Second, Burst: 100}
	run := func(weights map[string]float64, idle string) map[string]int {
		tb := &table{groups: map[string]*Group{}}
		for name, w := range weights {
			tb.groups[name] = &Group{Type: "t", Name: name, Weight: w, Pending: 1 << 40}
		}
		got := map[string]int{}
		var tokens float64
		var at time.Time
		for i := range 1000 {
			now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
			if idle != "" {
				tb.groups[idle].Pending = 0
			}
			b := OpenBucket(r, tokens, at, now)
			for _, g := range tb.groups {
				g.TypeRate = b
			}
			q := NewQueue("t", store.Bands{}, 2, tb.page)
			for _, name := range serve(t, q, 1000) {
				got[name]++
			}
			for name, g := range q.loaded {
				tb.groups[name].Turn, tb.groups[name].Pending = g.Turn, g.Pending
			}
			tokens, at = b.Left(), b.At
		}
		return got
	}
	got := run(map[string]float64{"a": 3, "b": 1}, "")
	if total := got["a"] + got["b"]; total < 1080 || total > 1100 {
		t.Errorf("%d jobs in 10s at 100/s with a burst of 100, want 1000 plus the burst", total)
	}
	if share := float64(got["a"]) / float64(got["a"]+got["b"]); math.Abs(share-0.75) > 0.01 {
		t.Errorf("weights 3:1 got %v: a's share %.3f, want 0.75", got, share)
	}
	got = run(map[string]float64{"a": 3, "b": 1}, "b")
	if got["a"] < 1080 {
		t.Errorf("b idle: a started %d, want b's share too (1000 plus the burst)", got["a"])
	}
}
