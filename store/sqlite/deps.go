package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// This file is SQLite's set-based side of dependencies: the completions
// of jobs with dependants, which completeMany leaves, and the count-down
// of the jobs that wait for them. A finish so costs one statement per
// kind of work, however many of its jobs have dependants.

var _ engine.DepsTx = (*txn)(nil)

// completeDependencies completes, set-based, the items among rest that
// complete a job with dependants (what completeMany leaves for that
// reason), counts them, and returns the items it left and the jobs it
// completed (for engine.Finish to apply their ends to their dependants).
func (w *txn) completeDependencies(ps []store.FinishParams, results [][]byte, rest []int) ([]int, []int64, error) {
	if len(rest) == 0 { // the plain drain's finishes
		return rest, nil, nil
	}
	idx := make(map[int64]int, len(rest)) // id → item, -1 when the id repeats
	for _, i := range rest {
		if _, ok := idx[ps[i].ID]; ok {
			idx[ps[i].ID] = -1
		} else {
			idx[ps[i].ID] = i
		}
	}
	var buf []byte
	for _, i := range rest {
		p := &ps[i]
		if p.As != store.Complete || !p.Plain() || idx[p.ID] != i {
			continue
		}
		if buf == nil {
			buf = append(make([]byte, 0, 64*len(rest)), '[')
		} else {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = strconv.AppendInt(buf, p.ID, 10)
		buf = append(buf, ',')
		buf = appendJSONString(buf, p.Token)
		if results[i] != nil {
			buf = append(buf, ',', '"')
			buf = hex.AppendEncode(buf, results[i])
			buf = append(buf, '"')
		}
		buf = append(buf, ']')
	}
	if buf == nil {
		return rest, nil, nil
	}
	buf = append(buf, ']')
	rows, err := w.rows("complete_dependencies", micros(w.now), micros(w.now), string(buf))
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: finish: %w", err)
	}
	defer rows.Close()
	var ended []int64
	done := map[int64]bool{}
	running := map[groupKey]int{}
	var batches map[int64]int64 // members completed, by batch
	c := newColumns("id", "type", "grp", "run_at", "batch_id")
	for rows.Next() {
		if err := c.scan(rows); err != nil {
			return nil, nil, fmt.Errorf("sqlite: finish: %w", err)
		}
		id, typ, grp, runAt := c.int64(0), c.str(1), c.str(2), c.int64(3)
		if b := c.int64(4); b != 0 {
			if batches == nil {
				batches = map[int64]int64{}
			}
			batches[b]++
		}
		if c.err != nil {
			return nil, nil, fmt.Errorf("sqlite: finish: %w", c.err)
		}
		done[id] = true
		ended = append(ended, id)
		running[groupKey{grp, typ}]++
		w.changes = append(w.changes, lifecycle.CompletedEvent(id, typ, grp, fromMicros(runAt), ps[idx[id]].Token))
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("sqlite: finish: %w", err)
	}
	rows.Close()
	for k, n := range running {
		if err := w.count(k.typ, k.grp, 0, -n); err != nil {
			return nil, nil, err
		}
	}
	if batches != nil {
		if err := engine.BatchesCompleted(w, batches); err != nil {
			return nil, nil, fmt.Errorf("sqlite: finish: %w", err)
		}
	}
	left := rest[:0:0]
	for _, i := range rest {
		if !done[ps[i].ID] {
			left = append(left, i)
		}
	}
	return left, ended, nil
}

// DepsDone writes the count-downs of waiting jobs in one statement, and
// their moves between the group counts one statement per group
// (engine.DepsTx).
func (w *txn) DepsDone(rs []*lifecycle.Row, ps []lifecycle.Plan, cs []engine.Change) error {
	buf := append(make([]byte, 0, 48*len(rs)), '[')
	for i, r := range rs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = strconv.AppendInt(buf, r.ID, 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(ps[i].State), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, micros(ps[i].RunAt), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(ps[i].DepsWaiting), 10)
		buf = append(buf, ']')
	}
	buf = append(buf, ']')
	res, err := w.run("deps_done_many", micros(w.now), string(buf))
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(rs)) {
		return fmt.Errorf("sqlite: count down the dependencies of %d jobs: %d rows changed (%v)", len(rs), n, err)
	}
	// The moves, summed by place: a waiting job is in no count, and a
	// pending one in its group's.
	if err := w.inserted.save(w); err != nil {
		return err
	}
	pending := map[groupKey]int{}
	var order []groupKey
	for i, r := range rs {
		if from := cs[i].From; from != nil && (from.State == store.Pending || from.State == store.Running) {
			return fmt.Errorf("sqlite: job %d: a count-down of a job that is %s", r.ID, from.State)
		}
		if to := cs[i].To; to != nil && to.State == store.Pending {
			k := groupKey{to.Group, to.Type}
			if pending[k] == 0 {
				order = append(order, k)
			}
			pending[k]++
		}
		if !r.ExpiresAt.IsZero() {
			w.s.deadlineAdds.Add(1) // the job may be pending with a deadline now
		}
		w.applied = append(w.applied, r.ID)
		if ps[i].Event.ID != 0 {
			w.changes = append(w.changes, ps[i].Event)
		}
	}
	for _, k := range order {
		if err := w.enter(k.typ, k.grp, pending[k], 0); err != nil {
			return err
		}
	}
	return nil
}

// depsOfClaimed gives the jobs among jobs that were added after others
// their dependencies' outcomes, read in one statement for all of them;
// the plain claim pays nothing for them.
func (s *Store) depsOfClaimed(ctx context.Context, jobs []store.Job) error {
	var ids []int64
	for i := range jobs {
		if jobs[i].HasDeps {
			ids = append(ids, jobs[i].ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.reader.QueryContext(ctx, stmt("deps_of_many"), idList(ids))
	if err != nil {
		return s.readErr(err)
	}
	defer rows.Close()
	deps := make(map[int64][]store.Dep, len(ids))
	for rows.Next() {
		var of int64
		var d store.Dep
		var state int
		var key, lastErr sql.NullString
		var result []byte
		if err := rows.Scan(&of, &d.ID, &d.Removed, &d.Type, &key, &d.Group, &state, &result, &lastErr); err != nil {
			return s.readErr(err)
		}
		d.State, d.Key = store.State(state), key.String
		if len(result) > 0 {
			d.Result = result
		}
		if d.State != store.Completed {
			d.Error = lastErr.String
		}
		deps[of] = append(deps[of], d)
	}
	if err := rows.Err(); err != nil {
		return s.readErr(err)
	}
	for i := range jobs {
		if jobs[i].HasDeps {
			jobs[i].Deps = deps[jobs[i].ID]
		}
	}
	return nil
}
