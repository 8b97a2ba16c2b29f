package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/internal/rules/fair"
)

// TestHeadTurnsWon runs the head step's choice in SQL (headTurnsSQL)
// against fair's on random groups: which group goes first, and how many
// turns in a row it wins (fair.TurnsWon), with weights that are and are
// not powers of two, turns that tie, and groups without pending jobs.
func TestHeadTurnsWon(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	tbl := func(name string) string { return pgx.Identifier{s.Schema(), name}.Sanitize() }
	weights := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 7}
	names := []string{"", "a", "b", "c", "g1", "g10", "g2", "B"}
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 3))
		typ := fmt.Sprint("t", seed)
		type group struct {
			name    string
			turn, w float64
			pending int64
		}
		var gs []group
		// Weights for every type are shared: start each seed without any.
		if _, err := s.Pool().Exec(ctx, `DELETE FROM `+tbl("group_config")); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if r.IntN(3) == 0 {
				continue
			}
			g := group{name: name, w: weights[r.IntN(len(weights))], pending: int64(r.IntN(4))}
			// Turns are sums of 1/weight, so that ties and near ties occur.
			step := weights[1+r.IntN(len(weights)-1)]
			g.turn = float64(r.IntN(6)) / step
			gs = append(gs, g)
			if _, err := s.Pool().Exec(ctx, `INSERT INTO `+tbl("groups")+` (type, grp, pending, turn) VALUES ($1, $2, $3, $4)`,
				typ, g.name, g.pending, g.turn); err != nil {
				t.Fatal(err)
			}
			if g.w > 0 {
				ctype := typ
				if r.IntN(2) == 0 {
					ctype = "" // a weight for every type
				}
				if _, err := s.Pool().Exec(ctx, `INSERT INTO `+tbl("group_config")+` (grp, type, weight) VALUES ($1, $2, $3)
					ON CONFLICT (grp, type) DO UPDATE SET weight = excluded.weight`, g.name, ctype, g.w); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range gs {
			if gs[i].w == 0 {
				gs[i].w = 1
			}
		}
		// fair's choice: the first group in turn order with pending jobs,
		// against the next one.
		var backlogged []group
		for _, g := range gs {
			if g.pending > 0 {
				backlogged = append(backlogged, g)
			}
		}
		slices.SortFunc(backlogged, func(a, b group) int {
			if fair.TurnBefore(a.turn, a.name, b.turn, b.name) {
				return -1
			}
			return 1
		})
		want := int64(1 + r.IntN(8))
		grp, n, ok, err := s.HeadTurns(ctx, typ, want)
		if err != nil {
			t.Fatal(err)
		}
		if len(backlogged) == 0 {
			if ok {
				t.Errorf("seed %d: SQL serves group %q with no pending jobs", seed, grp)
			}
			continue
		}
		g := backlogged[0]
		wantN := min(want, g.pending)
		if len(backlogged) > 1 {
			rival := backlogged[1]
			wantN = min(fair.TurnsWon(g.turn, g.name, g.w, rival.turn, rival.name, want), g.pending)
		}
		if !ok || grp != g.name || n != wantN {
			t.Errorf("seed %d (want %d): SQL serves %q for %d turns (ok %v); fair serves %q for %d\ngroups %+v", seed, want, grp, n, ok, g.name, wantN, gs)
		}
	}
}
