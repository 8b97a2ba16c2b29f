package engine

import (
	"fmt"

	"github.com/rotajobs/rota/internal/rules/lifecycle"
)

// DepsTx is the part of Tx that writes, set-based, what the ends of
// dependencies do to the jobs that wait for them. A store without it
// applies each plan with Apply.
type DepsTx interface {
	// DepsDone writes plans ps (each lifecycle.KindDepsDone) for the
	// locked jobs rs in one statement, moves each job between the group
	// counts (cs, as Apply does) and queues the plans' events.
	DepsDone(rs []*lifecycle.Row, ps []lifecycle.Plan, cs []Change) error
}

// depsTx is the store's DepsTx under tx, which may be a wrapper of the
// engine's own (deferDeps).
func depsTx(tx Tx) (DepsTx, bool) {
	if d, ok := tx.(*deferDeps); ok {
		tx = d.Tx
	}
	dt, ok := tx.(DepsTx)
	return dt, ok
}

// countDown collects the plans of DependantsEnded that only count a
// waiting job's dependencies down (or make it pending), to write them in
// one statement: a fan-out of n jobs released by one end costs one
// write, not n. A plan with work beyond its own row (a cancel ends the
// job for its dependants; a child or parent has a family) is applied
// one at a time, after the collected ones are written.
type countDown struct {
	tx    Tx
	rows  []*lifecycle.Row
	plans []lifecycle.Plan
	moves []Change
}

// take collects plan p for job r when it can be written with the others;
// false leaves it to apply.
func (c *countDown) take(r *lifecycle.Row, p lifecycle.Plan) bool {
	if p.Kind != lifecycle.KindDepsDone || r.Parent != 0 || r.HasChildren {
		return false
	}
	if _, ok := depsTx(c.tx); !ok {
		return false
	}
	var m Change
	m.From, m.To = lifecycle.Moves(r, &p)
	c.rows, c.plans, c.moves = append(c.rows, r), append(c.plans, p), append(c.moves, m)
	return true
}

// flush writes the collected plans, then counts their jobs' moves in
// their batches as apply does (a waiting job that becomes pending
// changes no batch count: BatchMove).
func (c *countDown) flush() error {
	if len(c.rows) == 0 {
		return nil
	}
	dt, _ := depsTx(c.tx)
	if err := dt.DepsDone(c.rows, c.plans, c.moves); err != nil {
		return fmt.Errorf("count down the dependencies of %d jobs: %w", len(c.rows), err)
	}
	for i, r := range c.rows {
		if _, err := batchMember(c.tx, r, c.moves[i].From, c.moves[i].To); err != nil {
			return err
		}
	}
	c.rows, c.plans, c.moves = c.rows[:0], c.plans[:0], c.moves[:0]
	return nil
}
