package engine

import (
	"fmt"
	"slices"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// BatchTx is the part of Tx that keeps batches (store.Batch).
type BatchTx interface {
	// CreateBatch inserts batch b (normalized: check.Batch) with no
	// member, its groups and types those of r (lifecycle.NewBatchReach),
	// and returns its id. Stores call it through engine.CreateBatch.
	CreateBatch(b *store.NewBatch, r store.Batch) (int64, error)
	// LockBatch reads batch id and locks its row until the transaction
	// ends; nil when it does not exist.
	LockBatch(id int64) (*store.Batch, error)
	// MoveBatch adds d to the counts of batch id, and closes it when
	// close, unless it is done; it locks the row and returns the batch as
	// it now is, nil when it is done or does not exist.
	MoveBatch(id int64, d store.BatchCounts, close bool) (*store.Batch, error)
	// EndBatch marks batch id done, at the transaction's time, with the
	// jobs its callbacks added (0: none).
	EndBatch(id int64, completeJob, successJob int64) error
	// AddJobs adds jobs (normalized, with their data) as the store's Add
	// does, in this transaction: a done batch's callbacks.
	AddJobs(jobs []store.AddParams, datas [][]byte) ([]store.AddResult, error)
	// WidenBatch writes the groups and types of batch id's members and
	// callbacks (store.Batch's Groups, Types, Wide), its row locked.
	WidenBatch(id int64, groups, types []string, wide bool) error
}

// batchTx is the store's BatchTx under tx, which may be a wrapper of
// the engine's own (deferDeps, during a batch of finishes).
func batchTx(tx Tx) (BatchTx, bool) {
	if d, ok := tx.(*deferDeps); ok {
		tx = d.Tx
	}
	bt, ok := tx.(BatchTx)
	return bt, ok
}

// batchMember counts the move of r, a member of a batch (from, to:
// lifecycle.Moves), in its batch, and adds the batch's callbacks when the
// move makes it done. It reports whether it added them. A job outside a
// batch costs one comparison.
func batchMember(tx Tx, r *lifecycle.Row, from, to *lifecycle.Place) (bool, error) {
	if r.Batch == 0 {
		return false, nil
	}
	if from != nil && to != nil && (from.Type != to.Type || from.Group != to.Group) {
		if err := widenBatch(tx, r.Batch, to); err != nil {
			return false, err
		}
	}
	d, ok := lifecycle.BatchMove(from, to)
	if !ok {
		return false, nil
	}
	return moveBatch(tx, r.Batch, d, false)
}

// moveBatch adds d to batch id's counts (closing it when close) and, when
// that makes it done, adds its callbacks (lifecycle.BatchCallbacks) and
// marks it done, in the same transaction: the batch's row lock makes the
// member that ends it, on any node, the one that adds them.
func moveBatch(tx Tx, id int64, d store.BatchCounts, close bool) (bool, error) {
	bt, ok := batchTx(tx)
	if !ok {
		return false, fmt.Errorf("batch %d: this store keeps no batches", id)
	}
	b, err := bt.MoveBatch(id, d, close)
	if err != nil || b == nil || !lifecycle.BatchDone(b) {
		return false, err
	}
	adds, which, err := lifecycle.BatchCallbacks(b)
	if err != nil {
		return false, err
	}
	var complete, success int64
	if len(adds) > 0 {
		gone, err := callbackAfter(tx, adds)
		if err != nil {
			return false, fmt.Errorf("batch %d: callback: %w", id, err)
		}
		adds, datas, err := check.Adds(adds)
		if err != nil {
			return false, fmt.Errorf("batch %d: callback: %w", id, err)
		}
		res, err := bt.AddJobs(adds, datas)
		if err != nil {
			return false, fmt.Errorf("batch %d: callback: %w", id, err)
		}
		for i, name := range which {
			if err := callbackDepGone(tx, &adds[i], res[i], gone[i]); err != nil {
				return false, fmt.Errorf("batch %d: callback: %w", id, err)
			}
			if name == lifecycle.CallbackComplete {
				complete = res[i].Job.ID
			} else {
				success = res[i].Job.ID
			}
		}
	}
	return true, bt.EndBatch(id, complete, success)
}

// callbackAfter leaves out of each callback's dependencies the jobs that
// no longer exist (lifecycle.CallbackAfter), and returns the first gone
// of each (nil: none), so that a callback whose dependency was removed
// while the batch ran is still added, under its policy, and the finish
// that ends the batch is not refused for it.
func callbackAfter(tx Tx, adds []store.AddParams) ([]*lifecycle.Ended, error) {
	gone := make([]*lifecycle.Ended, len(adds))
	for i := range adds {
		p := &adds[i]
		if len(p.After) == 0 {
			continue
		}
		rows, err := tx.Lock(p.After)
		if err != nil {
			return nil, err
		}
		p.After, gone[i] = lifecycle.CallbackAfter(p.After, rows)
	}
	return gone, nil
}

// callbackDepGone applies a callback's policy to a dependency gone before
// it was added (lifecycle.Settle): under DepCancel it is cancelled, saying
// which; under DepRun it waits for the rest only, as it was added.
func callbackDepGone(tx Tx, p *store.AddParams, res store.AddResult, gone *lifecycle.Ended) error {
	if gone == nil || p.OnDepFailure != store.DepCancel || res.Job.State.Terminal() {
		return nil
	}
	id := res.Job.ID
	rs, err := tx.Lock([]int64{id})
	if err != nil {
		return err
	}
	now, err := tx.Now()
	if err != nil {
		return err
	}
	r := rs[id]
	plan, ok := lifecycle.Settle(r, gone, now)
	if !ok {
		return nil
	}
	_, _, err = apply(tx, r, &plan, Change{})
	return err
}

// widenBatch adds the type and group a member moves to (an update) to its
// batch's (lifecycle.BatchWiden), so that the batch leaves the reach of
// tokens that do not reach the member any more.
func widenBatch(tx Tx, id int64, to *lifecycle.Place) error {
	bt, ok := batchTx(tx)
	if !ok {
		return fmt.Errorf("batch %d: this store keeps no batches", id)
	}
	b, err := bt.LockBatch(id)
	if err != nil || b == nil || !lifecycle.BatchWiden(b, to.Type, to.Group) {
		return err
	}
	return bt.WidenBatch(id, b.Groups, b.Types, b.Wide)
}

// JoinBatches locks the batches jobs join (AddParams.Batch), in id order,
// and refuses the add when one of them is done, does not exist or is out
// of reach (lifecycle.JoinBatch; reach nil: everything). It adds the
// joining jobs' groups and types to their batch's (lifecycle.BatchWiden),
// a write only when they bring one it did not have. Every add that may
// name a batch calls it before it inserts, and Joined after.
func JoinBatches(tx Tx, jobs []store.AddParams, reach *store.Reach) error {
	ids := batchesOf(jobs)
	if len(ids) == 0 {
		return nil
	}
	bt, ok := batchTx(tx)
	if !ok {
		return fmt.Errorf("batch %d: this store keeps no batches", ids[0])
	}
	for _, id := range ids {
		b, err := bt.LockBatch(id)
		if err != nil {
			return err
		}
		if err := lifecycle.JoinBatch(id, b, reach); err != nil {
			return err
		}
		widened := false
		for i := range jobs {
			if jobs[i].Batch == id && lifecycle.BatchWiden(b, jobs[i].Type, jobs[i].Group) {
				widened = true
			}
		}
		if widened {
			if err := bt.WidenBatch(id, b.Groups, b.Types, b.Wide); err != nil {
				return err
			}
		}
	}
	return nil
}

func batchesOf(jobs []store.AddParams) []int64 {
	var ids []int64
	for i := range jobs {
		if id := jobs[i].Batch; id != 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Joined counts, in their batches, the jobs an add inserted (out, by
// item): a job the add found instead (a re-add, a unique match) is not a
// member. One update per batch, however many joined.
func Joined(tx Tx, jobs []store.AddParams, out []store.AddResult) error {
	ids := batchesOf(jobs)
	for _, id := range ids {
		var n int64
		for i := range jobs {
			if jobs[i].Batch == id && out[i].Outcome == store.Inserted {
				n++
			}
		}
		if n == 0 {
			continue
		}
		if _, err := moveBatch(tx, id, lifecycle.BatchJoined(n), false); err != nil {
			return err
		}
	}
	return nil
}

// BatchesCompleted counts the plain completions of batch members by the
// stores' set-based completions: n[id] members of batch id completed.
// Batches are taken in id order, so that concurrent completions cannot
// deadlock on them.
func BatchesCompleted(tx Tx, n map[int64]int64) error {
	ids := make([]int64, 0, len(n))
	for id := range n {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if _, err := moveBatch(tx, id, lifecycle.BatchCompleted(n[id]), false); err != nil {
			return err
		}
	}
	return nil
}

// SettleBatch closes batch id when close, and makes it done when no
// member remains (a new batch whose jobs all ended or were found rather
// than inserted, or none; a batch closed after its members ended).
func SettleBatch(tx Tx, id int64, close bool) error {
	_, err := moveBatch(tx, id, store.BatchCounts{}, close)
	return err
}
