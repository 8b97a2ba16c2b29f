package postgres

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// This file is PostgreSQL's set-based side of dependencies and batch
// members: the completions of jobs with dependants or in a batch, which
// the plain completion (completeFast) leaves, and the count-down of the
// jobs that wait for them. A finish so costs one statement per kind of
// work, however many of its jobs have dependants or belong to a batch.

var _ engine.DepsTx = (*txn)(nil)

// completeWorkflow completes, set-based, the items among rest that
// complete a job with dependants or a member of a batch (what
// completeFast leaves for that reason). It returns the items it left, the
// jobs with dependants it completed (for engine.Finish to apply their
// ends to their dependants) and how many members of each batch it
// completed (for engine.BatchesCompleted to count).
func (t *txn) completeWorkflow(ps []store.FinishParams, results [][]byte, rest []int) (left []int, ended []int64, batches map[int64]int64, err error) {
	var ids []int64
	tokens, res := newIDMap(), newIDMap()
	byID := map[int64]string{}
	for _, i := range rest {
		p := &ps[i]
		if p.As != store.Complete || !p.Plain() || !utf8.Valid(results[i]) || !pgText(p.Token) {
			continue
		}
		ids = append(ids, p.ID)
		byID[p.ID] = p.Token
		tokens.add(p.ID, []byte(p.Token))
		if results[i] != nil {
			res.add(p.ID, results[i])
		}
	}
	if len(ids) == 0 {
		return rest, nil, nil, nil
	}
	r, err := t.rows("complete_workflow", ids, tokens.json(), res.json())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("complete jobs with dependants or in a batch: %w", err)
	}
	defer r.Close()
	done := map[int64]bool{}
	var id, batch int64
	var typ, grp string
	var runAt time.Time
	var dependants bool
	for r.Next() {
		if err := r.Scan(&id, &typ, &grp, &runAt, &batch, &dependants); err != nil {
			return nil, nil, nil, err
		}
		done[id] = true
		if batch != 0 {
			if batches == nil {
				batches = map[int64]int64{}
			}
			batches[batch]++
		}
		if dependants {
			ended = append(ended, id)
		}
		t.changed(lifecycle.CompletedEvent(id, typ, grp, runAt.UTC(), byID[id]))
	}
	if err := r.Err(); err != nil {
		return nil, nil, nil, err
	}
	r.Close()
	left = rest[:0:0]
	for _, i := range rest {
		if !done[ps[i].ID] {
			left = append(left, i)
		}
	}
	return left, ended, batches, nil
}

// DepsDone writes the count-downs of waiting jobs in one statement
// (engine.DepsTx).
func (t *txn) DepsDone(rs []*lifecycle.Row, ps []lifecycle.Plan, cs []engine.Change) error {
	ids, states := make([]int64, len(rs)), make([]int16, len(rs))
	runAts, left := make([]time.Time, len(rs)), make([]int32, len(rs))
	for i, r := range rs {
		ids[i], states[i], runAts[i], left[i] = r.ID, int16(ps[i].State), ps[i].RunAt, int32(ps[i].DepsWaiting)
	}
	n, err := t.run("deps_done_many", ids, states, runAts, left)
	if err == nil && n != int64(len(rs)) {
		err = fmt.Errorf("%d rows changed, want %d", n, len(rs))
	}
	if err != nil {
		return err
	}
	for i := range rs {
		t.move(cs[i].From, cs[i].To)
		if ps[i].Event.ID != 0 {
			t.changed(ps[i].Event)
		}
	}
	return nil
}
