package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
	"github.com/rotajobs/rota/store/sqlite"
	"github.com/rotajobs/rota/store/storetest"
)

// TestSameOrderAsSQLite runs the same random scenarios on this store and
// on store/sqlite, one call at a time, and compares which jobs every accept
// hands out, in which order: groups with weights and bounds, counting
// schemes, single and multi-type accepts of random sizes, completions that
// free bounded groups, and jobs added as it goes, so that groups that ran
// out come back. TestSameAsSQLite runs every other operation too.
func TestSameOrderAsSQLite(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			pg := open(t)
			lite, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer lite.Close()
			stores := []store.Store{pg, lite}
			ctx := t.Context()
			r := rand.New(rand.NewPCG(seed, 99))
			both := func(what string, fn func(s store.Store) error) {
				t.Helper()
				for _, s := range stores {
					if err := fn(s); err != nil {
						t.Fatalf("%s on %T: %v", what, s, err)
					}
				}
			}
			types := []string{"t", "u"}
			groups := []string{"a", "b", "c", "d", "e"}
			for _, typ := range types {
				c := store.TypeConfig{Type: typ}
				if r.IntN(3) == 0 {
					c.Bands = store.Bands{High: 1 + r.IntN(3), Low: 1 + r.IntN(2)}
				}
				if r.IntN(4) == 0 {
					c.GroupMaxRunning = 2 + r.IntN(3)
				}
				both("SetTypeConfig", func(s store.Store) error { return s.SetTypeConfig(ctx, c) })
			}
			for _, g := range groups {
				c := store.GroupConfig{Group: g}
				if r.IntN(3) == 0 {
					c.Weight = []float64{0.5, 2, 4}[r.IntN(3)] // powers of 2: turns add up exactly on both stores
				}
				if r.IntN(4) == 0 {
					c.MaxRunning = 1 + r.IntN(4)
				}
				if r.IntN(3) == 0 || c.MaxRunning > 0 {
					// Not a bound across types: store/sqlite does not keep
					// one within a multi-type accept (see docs/postgres.md).
					c.Type = types[r.IntN(2)]
				}
				both("SetGroupConfig", func(s store.Store) error { return s.SetGroupConfig(ctx, c) })
			}
			var ps []store.AddParams
			for range 150 {
				ps = append(ps, store.AddParams{Type: types[r.IntN(2)], Group: groups[r.IntN(len(groups))],
					Priority: r.IntN(5) - 2, RunAt: time.Now().Add(-time.Duration(r.IntN(1000)) * time.Second)})
			}
			both("Add", func(s store.Store) error { _, err := s.Add(ctx, ps); return err })
			running := [2][]store.Job{}
			for step := 0; ; step++ {
				p := store.AcceptParams{Types: [][]string{{"t"}, {"u"}, {"t", "u"}}[r.IntN(3)], Limit: 1 + r.IntN(8)}
				last := len(running[0]) == 0
				if last {
					p.Types = types // nothing runs: the last accepts take whatever is left
				}
				var got [2][]int64
				for i, s := range stores {
					res, err := s.Accept(ctx, p)
					if err != nil {
						t.Fatalf("Accept on %T: %v", s, err)
					}
					for _, j := range res.Jobs {
						got[i] = append(got[i], j.ID)
					}
					running[i] = append(running[i], res.Jobs...)
				}
				if !slices.Equal(got[0], got[1]) {
					desc := func(ids []int64) string {
						js, _ := lite.Get(ctx, ids)
						out := ""
						for _, j := range js {
							out += fmt.Sprintf(" %d:%s/%s/p%d", j.ID, j.Type, j.Group, j.Priority)
						}
						return out
					}
					tc, _ := lite.TypeConfigs(ctx)
					gc, _ := lite.GroupConfigs(ctx)
					t.Fatalf("step %d: Accept(%v, limit %d) gave\n%v on PostgreSQL,\n%v on SQLite\ntypes %+v\ngroups %+v", step, p.Types, p.Limit, desc(got[0]), desc(got[1]), tc, gc)
				}
				// Add a few jobs now and then: groups that ran out return.
				if !last && r.IntN(3) == 0 {
					var more []store.AddParams
					for range 1 + r.IntN(4) {
						more = append(more, store.AddParams{Type: types[r.IntN(2)], Group: groups[r.IntN(len(groups))],
							Priority: r.IntN(5) - 2, RunAt: time.Now().Add(-time.Duration(r.IntN(1000)) * time.Second)})
					}
					both("Add", func(s store.Store) error { _, err := s.Add(ctx, more); return err })
				}
				// Finish a random part of what runs, the same on both.
				var done []int
				for k := range running[0] {
					if r.IntN(3) == 0 {
						done = append(done, k)
					}
				}
				for i, s := range stores {
					var fps []store.FinishParams
					for _, k := range done {
						fps = append(fps, store.FinishParams{Lease: running[i][k].Lease(), As: store.Complete})
					}
					if len(fps) > 0 {
						errs, err := s.Finish(ctx, fps)
						if err != nil {
							t.Fatalf("Finish on %T: %v", s, err)
						}
						for k, err := range errs {
							if err != nil {
								t.Fatalf("Finish of job %d on %T: %v", fps[k].ID, s, err)
							}
						}
					}
					for n, k := range done {
						running[i] = slices.Delete(running[i], k-n, k-n+1)
					}
				}
				if last && len(got[0]) == 0 {
					break
				}
			}
			var left int
			for _, s := range stores {
				l, err := s.List(ctx, store.ListParams{States: []store.State{store.Pending}})
				if err != nil {
					t.Fatal(err)
				}
				left += len(l.Jobs)
			}
			if left != 0 {
				l, _ := lite.List(ctx, store.ListParams{States: []store.State{store.Pending}})
				desc := ""
				for _, j := range l.Jobs {
					desc += fmt.Sprintf(" %d:%s/%s/p%d", j.ID, j.Type, j.Group, j.Priority)
				}
				tc, _ := lite.TypeConfigs(ctx)
				gc, _ := lite.GroupConfigs(ctx)
				t.Errorf("%d jobs left pending:%s\ntypes %+v\ngroups %+v", left, desc, tc, gc)
			}
		})
	}
}

// TestSameAsSQLite runs random sequences of every kind of operation on
// this store and on store/sqlite and requires the same answers and the
// same final jobs (storetest.Same). ROTA_SAME_SEEDS runs more seeds and
// ROTA_SAME_OPS longer sequences (100 seeds of 250 operations take a
// couple of minutes).
func TestSameAsSQLite(t *testing.T) {
	n, ops := uint64(24), 100
	if v, err := strconv.ParseUint(os.Getenv("ROTA_SAME_SEEDS"), 10, 64); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("ROTA_SAME_OPS")); err == nil && v > 0 {
		ops = v
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	storetest.Same(t, seeds, ops, func(t *testing.T) storetest.SamePair {
		lite, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lite.Close() })
		pg := open(t)
		return storetest.SamePair{Stores: [2]store.Store{pg, lite}, Dump: func() string {
			return "groups on PostgreSQL (type, group, pending, turn, bands; vclocks):\n" +
				dumpRows(t, pg, `SELECT type, grp, pending, turn, band_count FROM rota.groups ORDER BY type, turn, grp`) +
				dumpRows(t, pg, `SELECT name, vclock FROM rota.types ORDER BY name`) +
				"pending jobs on PostgreSQL (id, type, group, priority, attempt, run_at, lease_until):\n" +
				dumpRows(t, pg, `SELECT id, type, grp, priority, attempt, run_at, lease_until FROM rota.jobs WHERE state = 0 ORDER BY id`) +
				"groups on SQLite:\n" +
				dumpSQLite(t, lite, `SELECT type, grp, pending, turn, band_count FROM rota_groups ORDER BY type, turn, grp`) +
				dumpSQLite(t, lite, `SELECT name, vclock FROM rota_types ORDER BY name`) +
				"pending jobs on SQLite:\n" +
				dumpSQLite(t, lite, `SELECT id, type, grp, priority, attempt, run_at, lease_until FROM rota_jobs WHERE state = 0 ORDER BY id`)
		}}
	})
}

// dumpRows shows the rows of a query on s, one a line.
func dumpRows(t *testing.T, s *postgres.Store, q string) string {
	q = strings.ReplaceAll(q, "rota.", pgx.Identifier{s.Schema()}.Sanitize()+".")
	rows, err := s.Pool().Query(context.Background(), q)
	if err != nil {
		return err.Error() + "\n"
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		vs, err := rows.Values()
		if err != nil {
			return err.Error() + "\n"
		}
		fmt.Fprintln(&b, " ", vs)
	}
	return b.String()
}

func dumpSQLite(t *testing.T, s *sqlite.Store, q string) string {
	db, err := s.DB()
	if err != nil {
		return err.Error() + "\n"
	}
	rows, err := db.Query(q)
	if err != nil {
		return err.Error() + "\n"
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vs := make([]any, len(cols))
		ps := make([]any, len(cols))
		for i := range vs {
			ps[i] = &vs[i]
		}
		if err := rows.Scan(ps...); err != nil {
			return err.Error() + "\n"
		}
		fmt.Fprintln(&b, " ", vs)
	}
	return b.String()
}
