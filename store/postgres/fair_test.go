package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// checkCounts compares the groups' pending counts, with the changes not
// folded into them yet, with the jobs table.
func checkCounts(t *testing.T, s *postgres.Store, schema string) {
	t.Helper()
	q := fmt.Sprintf(`SELECT coalesce(g.type, j.type), coalesce(g.grp, j.grp), coalesce(g.pending, 0), coalesce(j.n, 0)
		FROM (SELECT type, grp, sum(n) AS pending FROM (SELECT type, grp, pending AS n FROM %[1]s.groups
			UNION ALL SELECT type, grp, n FROM %[1]s.pending_changes) x GROUP BY type, grp) g FULL JOIN (SELECT type, grp, count(*) AS n FROM %[1]s.jobs WHERE state = 0 GROUP BY type, grp) j
		ON j.type = g.type AND j.grp = g.grp
		WHERE coalesce(g.pending, 0) <> coalesce(j.n, 0)`, pgx.Identifier{schema}.Sanitize())
	rows, err := s.Pool().Query(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, grp string
		var counted, real int64
		if err := rows.Scan(&typ, &grp, &counted, &real); err != nil {
			t.Fatal(err)
		}
		t.Errorf("type %q group %q: %d pending counted, %d pending jobs", typ, grp, counted, real)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCounts runs every kind of transition, from two nodes at once,
// and checks that the groups' pending counts match the jobs.
func TestGroupCounts(t *testing.T) {
	schema := newSchema(t)
	nodes := []*postgres.Store{openIn(t, schema, postgres.Config{}), openIn(t, schema, postgres.Config{})}
	ctx := t.Context()
	groups := []string{"a", "b", "c", ""}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 6 {
		s := nodes[w%2]
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			grp := func() string { return groups[r.IntN(len(groups))] }
			for i := range 60 {
				// Adds: batches, keyed re-adds that move jobs between
				// groups, and adds in the caller's transaction.
				ps := []store.AddParams{{Type: "t", Group: grp()}, {Type: "u", Group: grp(), Priority: r.IntN(3) - 1},
					{Type: "t", Group: grp(), Key: fmt.Sprintf("k%d", r.IntN(20))}}
				if _, err := s.Add(ctx, ps); err != nil {
					errs <- fmt.Errorf("add: %w", err)
					return
				}
				if i%10 == 0 {
					tx, err := s.Pool().Begin(ctx)
					if err == nil {
						_, err = s.AddPgxTx(ctx, tx, []store.AddParams{{Type: "t", Group: grp()}, {Type: "t", Group: grp(), Key: "tx"}})
						if err == nil && r.IntN(2) == 0 {
							err = tx.Commit(ctx)
						} else {
							tx.Rollback(ctx)
						}
					}
					if err != nil {
						errs <- fmt.Errorf("add in a transaction: %w", err)
						return
					}
				}
				res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t", "u"}[:1+r.IntN(2)], Limit: 1 + r.IntN(4)})
				if err != nil {
					errs <- fmt.Errorf("accept: %w", err)
					return
				}
				for _, j := range res.Jobs {
					var err error
					switch r.IntN(9) {
					case 0:
						_, err = s.Finish(ctx, []store.FinishParams{{Lease: j.Lease(), As: store.Fail, Error: "x"}})
					case 1:
						_, err = s.Finish(ctx, []store.FinishParams{{Lease: j.Lease(), As: store.Snooze, RunAt: time.Now().Add(time.Millisecond)}})
					case 2:
						_, err = s.Finish(ctx, []store.FinishParams{{Lease: j.Lease(), As: store.Release}})
					case 3:
						_, err = s.Cancel(ctx, []int64{j.ID})
					case 4:
						_, err = s.Remove(ctx, []int64{j.ID})
					case 5:
						_, _, err = s.Resubmit(ctx, []store.ResubmitParams{{ID: j.ID}})
					case 6:
						var tx pgx.Tx
						if tx, err = s.Pool().Begin(ctx); err == nil {
							if _, err = s.FinishPgxTx(ctx, tx, []store.FinishParams{{Lease: j.Lease(), As: store.Fail, Error: "tx"}}); err == nil {
								err = tx.Commit(ctx)
							} else {
								tx.Rollback(ctx)
							}
						}
					case 7: // left running, for the lease sweep
					default:
						_, err = s.Finish(ctx, []store.FinishParams{{Lease: j.Lease(), As: store.Complete}})
					}
					if err != nil {
						errs <- fmt.Errorf("finish: %w", err)
						return
					}
				}
				switch r.IntN(6) {
				case 0: // pending jobs cancelled, removed, re-added by id
					l, err := s.List(ctx, store.ListParams{States: []store.State{store.Pending}, Limit: 3})
					if err == nil && len(l.Jobs) > 0 {
						_, err = s.Cancel(ctx, []int64{l.Jobs[0].ID})
						if err == nil && len(l.Jobs) > 1 {
							_, err = s.Remove(ctx, []int64{l.Jobs[1].ID})
						}
					}
					if err != nil {
						errs <- fmt.Errorf("cancel or remove pending: %w", err)
						return
					}
				case 1: // ended jobs run again
					l, err := s.List(ctx, store.ListParams{States: []store.State{store.Completed, store.Cancelled}, Limit: 2})
					if err == nil && len(l.Jobs) > 0 {
						_, _, err = s.Resubmit(ctx, []store.ResubmitParams{{ID: l.Jobs[0].ID}})
					}
					if err != nil {
						errs <- fmt.Errorf("resubmit ended: %w", err)
						return
					}
				case 2:
					if _, _, err := s.ExpireLeases(ctx, time.Now().Add(time.Hour)); err != nil {
						errs <- fmt.Errorf("expire: %w", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkCounts(t, nodes[0], schema)
	// And after draining everything.
	for {
		res, err := nodes[1].Accept(ctx, store.AcceptParams{Types: []string{"*"}, Limit: 100, DueBy: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) == 0 {
			break
		}
		ps := make([]store.FinishParams, len(res.Jobs))
		for i, j := range res.Jobs {
			ps[i] = store.FinishParams{Lease: j.Lease(), As: store.Complete}
		}
		if _, err := nodes[0].Finish(ctx, ps); err != nil {
			t.Fatal(err)
		}
	}
	checkCounts(t, nodes[0], schema)
	var left int
	if err := nodes[0].Pool().QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "groups"}.Sanitize()+` WHERE pending <> 0`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d groups with pending jobs after the drain (%v), want none", left, err)
	}
}

// TestGroupBoundAcrossNodes: three nodes (stores with pools of their own on
// one schema) accept concurrently, in single and multi-type accepts; no
// group ever runs more than its bounds, per type and across types.
func TestGroupBoundAcrossNodes(t *testing.T) {
	schema := newSchema(t)
	nodes := []*postgres.Store{openIn(t, schema, postgres.Config{}), openIn(t, schema, postgres.Config{}), openIn(t, schema, postgres.Config{})}
	ctx := t.Context()
	// Bounds set through node 0 only.
	const perType, across = 3, 4
	for _, c := range []store.GroupConfig{
		{Group: "a", Type: "t", MaxRunning: perType}, {Group: "b", Type: "t", MaxRunning: perType},
		{Group: "a", MaxRunning: across}, {Group: "c", MaxRunning: across},
	} {
		if err := nodes[0].SetGroupConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodes[0].SetTypeConfig(ctx, store.TypeConfig{Type: "u", GroupMaxRunning: perType}); err != nil {
		t.Fatal(err)
	}
	var ps []store.AddParams
	for range 40 {
		for _, g := range []string{"a", "b", "c", "d"} {
			ps = append(ps, store.AddParams{Type: "t", Group: g}, store.AddParams{Type: "u", Group: g})
		}
	}
	if _, err := nodes[1].Add(ctx, ps); err != nil {
		t.Fatal(err)
	}
	type key struct{ typ, grp string }
	var mu sync.Mutex
	running := map[key]int{}
	bound := func(k key) (int, int) { // per type, across types; 0: none
		per := 0
		switch {
		case k.typ == "t" && (k.grp == "a" || k.grp == "b"):
			per = perType
		case k.typ == "u":
			per = perType
		}
		all := 0
		if k.grp == "a" || k.grp == "c" {
			all = across
		}
		return per, all
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	var total int
	for w := range 12 {
		s := nodes[w%3]
		types := [][]string{{"t"}, {"u"}, {"t", "u"}, {"*"}}[w%4]
		wg.Go(func() {
			for idle := 0; idle < 300; {
				res, err := s.Accept(ctx, store.AcceptParams{Types: types, Limit: 1 + w%3})
				if err != nil {
					errs <- err
					return
				}
				if len(res.Jobs) == 0 {
					idle++
					time.Sleep(time.Millisecond)
					continue
				}
				mu.Lock()
				total += len(res.Jobs)
				for _, j := range res.Jobs {
					k := key{j.Type, j.Group}
					running[k]++
					per, all := bound(k)
					if per > 0 && running[k] > per {
						errs <- fmt.Errorf("group %s runs %d jobs of type %s, bound %d", k.grp, running[k], k.typ, per)
					}
					if n := running[key{"t", k.grp}] + running[key{"u", k.grp}]; all > 0 && n > all {
						errs <- fmt.Errorf("group %s runs %d jobs of all types, bound %d", k.grp, n, all)
					}
				}
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // run
				fps := make([]store.FinishParams, len(res.Jobs))
				mu.Lock()
				for i, j := range res.Jobs {
					running[key{j.Type, j.Group}]-- // before the finish commits: never above the store's count
					fps[i] = store.FinishParams{Lease: j.Lease(), As: store.Complete}
				}
				mu.Unlock()
				if _, err := nodes[(w+1)%3].Finish(ctx, fps); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if total != len(ps) {
		t.Errorf("%d jobs accepted, want each of the %d once", total, len(ps))
	}
}

// TestTypeBoundAcrossNodes: three nodes accept one type with a bound on
// its running jobs, in single and multi-type accepts, with a bound per
// group and across types besides; the type never runs more than its bound,
// and every job runs once.
func TestTypeBoundAcrossNodes(t *testing.T) {
	schema := newSchema(t)
	nodes := []*postgres.Store{openIn(t, schema, postgres.Config{}), openIn(t, schema, postgres.Config{}), openIn(t, schema, postgres.Config{})}
	ctx := t.Context()
	const bound = 5
	if err := nodes[0].SetTypeConfig(ctx, store.TypeConfig{Type: "t", MaxRunning: bound}); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].SetGroupConfig(ctx, store.GroupConfig{Group: "a", MaxRunning: 2}); err != nil {
		t.Fatal(err)
	}
	var ps []store.AddParams
	for range 30 {
		for _, g := range []string{"a", "b", "c", "d"} {
			ps = append(ps, store.AddParams{Type: "t", Group: g}, store.AddParams{Type: "u", Group: g})
		}
	}
	if _, err := nodes[1].Add(ctx, ps); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	running, most, total := 0, 0, 0
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 12 {
		s := nodes[w%3]
		types := [][]string{{"t"}, {"t", "u"}, {"*"}}[w%3]
		wg.Go(func() {
			for idle := 0; idle < 300; {
				res, err := s.Accept(ctx, store.AcceptParams{Types: types, Limit: 1 + w%4})
				if err != nil {
					errs <- err
					return
				}
				if len(res.Jobs) == 0 {
					idle++
					time.Sleep(time.Millisecond)
					continue
				}
				mu.Lock()
				total += len(res.Jobs)
				for _, j := range res.Jobs {
					if j.Type == "t" {
						running++
					}
				}
				if running > bound {
					errs <- fmt.Errorf("type t runs %d jobs, bound %d", running, bound)
				}
				most = max(most, running)
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // run
				fps := make([]store.FinishParams, len(res.Jobs))
				mu.Lock()
				for i, j := range res.Jobs {
					if j.Type == "t" {
						running-- // before the finish commits: never above the store's count
					}
					fps[i] = store.FinishParams{Lease: j.Lease(), As: store.Complete}
				}
				mu.Unlock()
				if _, err := nodes[(w+1)%3].Finish(ctx, fps); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if total != len(ps) {
		t.Errorf("%d jobs accepted, want each of the %d once", total, len(ps))
	}
	if most < 3 {
		t.Errorf("at most %d jobs of t ran at once, bound %d: the accepts did not overlap", most, bound)
	}
}

// TestSettingsAcrossNodes: settings made through one node apply to the
// next accept on another.
func TestSettingsAcrossNodes(t *testing.T) {
	schema := newSchema(t)
	a, b := openIn(t, schema, postgres.Config{}), openIn(t, schema, postgres.Config{})
	ctx := t.Context()
	groupsOf := func(s *postgres.Store, typ string, limit int) string {
		t.Helper()
		res, err := s.Accept(ctx, store.AcceptParams{Types: []string{typ}, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, j := range res.Jobs {
			out += j.Group
		}
		return out
	}
	add := func(s *postgres.Store, ps ...store.AddParams) {
		t.Helper()
		if _, err := s.Add(ctx, ps); err != nil {
			t.Fatal(err)
		}
	}
	var ps []store.AddParams
	for range 30 {
		ps = append(ps, store.AddParams{Type: "w", Group: "x"}, store.AddParams{Type: "w", Group: "y"})
	}
	add(a, ps...)

	// A weight set on A: B's accepts give x two turns for each of y's.
	if err := a.SetGroupConfig(ctx, store.GroupConfig{Group: "x", Weight: 2}); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(b, "w", 6); got != "xxyxxy" && got != "xyxxyx" {
		t.Errorf("accept on B after weight 2 for x on A: %q, want x twice for each y", got)
	}
	// A bound set on B: A's next accept respects it.
	if err := b.SetGroupConfig(ctx, store.GroupConfig{Group: "y", Type: "w", MaxRunning: 2}); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(a, "w", 20); countOf(got, 'y') != 0 {
		t.Errorf("accept on A after bound 2 for y on B, with 2 of y running: %q, want no y", got)
	}
	// Removed on A: B serves y again.
	if err := a.SetGroupConfig(ctx, store.GroupConfig{Group: "y", Type: "w"}); err != nil {
		t.Fatal(err)
	}
	if got := groupsOf(b, "w", 5); countOf(got, 'y') == 0 {
		t.Errorf("accept on B after the bound was removed on A: %q, want y among them", got)
	}
	// A counting scheme set on B applies on A.
	if err := b.SetTypeConfig(ctx, store.TypeConfig{Type: "p", Bands: store.Bands{High: 1, Low: 2}}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		add(b, store.AddParams{Type: "p", Priority: 9}, store.AddParams{Type: "p", Priority: 0})
	}
	var bands string
	for range 6 {
		res, err := a.Accept(ctx, store.AcceptParams{Types: []string{"p"}})
		if err != nil || len(res.Jobs) != 1 {
			t.Fatalf("Accept(p) on A = %v, %v", res.Jobs, err)
		}
		if res.Jobs[0].Priority > 0 {
			bands += "H"
		} else {
			bands += "L"
		}
	}
	if bands != "HLLHLL" {
		t.Errorf("bands 1,2 set on B, accepts on A: %s, want HLLHLL", bands)
	}
	// A type's bound per group set on A applies on B.
	if err := a.SetTypeConfig(ctx, store.TypeConfig{Type: "q", GroupMaxRunning: 1}); err != nil {
		t.Fatal(err)
	}
	add(a, store.AddParams{Type: "q", Group: "g"}, store.AddParams{Type: "q", Group: "g"}, store.AddParams{Type: "q", Group: "h"})
	if got := groupsOf(b, "q", 10); got != "gh" {
		t.Errorf("accept on B with a bound of 1 per group set on A: %q, want gh", got)
	}
}

func countOf(s string, c byte) int {
	n := 0
	for i := range len(s) {
		if s[i] == c {
			n++
		}
	}
	return n
}

// TestLeaseAcrossNodes: changes that reach other nodes carry their lease.
func TestLeaseAcrossNodes(t *testing.T) {
	schema := newSchema(t)
	a, b := openIn(t, schema, postgres.Config{}), openIn(t, schema, postgres.Config{})
	ctx := t.Context()
	got := make(chan store.Event, 100)
	stop := b.Watch(func(cs []store.Event) {
		for _, c := range cs {
			if c.State == store.Cancelled {
				got <- c
			}
		}
	})
	defer stop()
	if _, err := a.Add(ctx, []store.AddParams{{Type: "l"}}); err != nil {
		t.Fatal(err)
	}
	res, err := a.Accept(ctx, store.AcceptParams{Types: []string{"l"}})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("Accept = %v, %v", res.Jobs, err)
	}
	if _, err := a.Cancel(ctx, []int64{res.Jobs[0].ID}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-got:
		if want := store.LeaseTag(res.Jobs[0].Token); c.Lease != want {
			t.Errorf("node B got the cancel with lease %q, want %q", c.Lease, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("node B did not hear of the cancel within 10s")
	}
}
