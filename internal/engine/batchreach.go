package engine

import (
	"fmt"

	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// CreateBatch inserts batch nb (checked: check.Batch), with no member
// yet, for a caller with reach: the jobs its callbacks name must be in
// reach (lifecycle.CallbackNames), and it starts with its callbacks'
// groups and types, or the caller's patterns (lifecycle.NewBatchReach).
// Both stores' AddBatch call it in their transaction.
func CreateBatch(tx Tx, nb *store.NewBatch, reach *store.Reach) (int64, error) {
	bt, ok := batchTx(tx)
	if !ok {
		return 0, fmt.Errorf("this store keeps no batches")
	}
	for _, cb := range []struct {
		what string
		p    *store.AddParams
	}{{"on_complete", nb.OnComplete}, {"on_success", nb.OnSuccess}} {
		if cb.p == nil {
			continue
		}
		if len(cb.p.After) == 0 {
			continue
		}
		rows, err := tx.Lock(cb.p.After)
		if err != nil {
			return 0, err
		}
		if err := lifecycle.CallbackNames(cb.what, cb.p, rows, reach); err != nil {
			return 0, err
		}
	}
	return bt.CreateBatch(nb, lifecycle.NewBatchReach(nb, reach))
}
