package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/rotajobs/rota/store"
)

// The rules of batches (store.Batch): what counts as a member's ending,
// when a batch is done, what its callbacks are, and who may join it.
// internal/engine applies them for both stores: after every plan that
// moves a member (BatchMove), after the set-based completions of members,
// and when a batch is added or closed (BatchDone, BatchCallbacks).

// memberEnded says whether a job in state s has ended, as a batch counts it:
// completed, failed for good or cancelled. A job pending again for a
// retry has not.
func memberEnded(s store.State) bool { return s.Terminal() }

// BatchMove is how a move of a member from one place to another
// (Moves; to nil: the job is removed) changes its batch's counts: a
// member that ends leaves Remaining for the count of its ending, one
// removed before it ended counts as Removed, and one that runs again
// after it ended (a re-add, a resubmit) is Remaining again. ok is false
// when the counts do not change.
func BatchMove(from, to *Place) (d store.BatchCounts, ok bool) {
	if from == nil {
		return d, false
	}
	was := memberEnded(from.State)
	switch {
	case to == nil && !was:
		return store.BatchCounts{Remaining: -1, Removed: 1}, true
	case to == nil:
		return d, false // an ended member's removal: it ended before
	case !was && memberEnded(to.State):
		d = endedAs(to.State, 1)
		d.Remaining = -1
		return d, true
	case was && !memberEnded(to.State):
		d = endedAs(from.State, -1)
		d.Remaining = 1
		return d, true
	}
	return d, false
}

func endedAs(s store.State, n int64) store.BatchCounts {
	switch s {
	case store.Completed:
		return store.BatchCounts{Completed: n}
	case store.Failed:
		return store.BatchCounts{Failed: n}
	default:
		return store.BatchCounts{Cancelled: n}
	}
}

// BatchCompleted is the change of n members' plain completions (the
// stores' set-based completions: running → completed).
func BatchCompleted(n int64) store.BatchCounts {
	return store.BatchCounts{Remaining: -n, Completed: n}
}

// BatchJoined is the change of n jobs joining a batch.
func BatchJoined(n int64) store.BatchCounts {
	return store.BatchCounts{Total: n, Remaining: n}
}

// BatchDone says whether batch b, as it now is, becomes done: it is
// closed, no member remains, and it was not done before.
func BatchDone(b *store.Batch) bool {
	return !b.Done && !b.Open && b.Counts.Remaining == 0
}

// JoinBatch refuses a job joining batch id, b as locked (nil: no such
// batch), when the batch is done, and as missing when it is out of the
// caller's reach (Reach.HasBatch).
func JoinBatch(id int64, b *store.Batch, reach *store.Reach) error {
	if b == nil || !reach.HasBatch(b) {
		return fmt.Errorf("batch %d does not exist: %w", id, store.ErrNotFound)
	}
	if b.Done {
		return fmt.Errorf("batch %d is done (its callbacks ran), it takes no more jobs: %w", id, store.ErrFinished)
	}
	return nil
}

// BatchWiden adds the group and type of a job joining batch b, or of a
// callback, to the batch's (Batch.Groups, Types), and reports whether
// they changed. Past store.MaxBatchReach of either the batch is Wide and
// keeps neither.
func BatchWiden(b *store.Batch, typ, group string) bool {
	if b.Wide {
		return false
	}
	changed := false
	if slices.ContainsFunc(b.Groups, store.IsBatchOwner) || slices.ContainsFunc(b.Types, store.IsBatchOwner) {
		// The first job replaces the owner's patterns (store.BatchOwner).
		b.Groups = slices.DeleteFunc(slices.Clone(b.Groups), store.IsBatchOwner)
		b.Types = slices.DeleteFunc(slices.Clone(b.Types), store.IsBatchOwner)
		changed = true
	}
	if !slices.Contains(b.Groups, group) {
		b.Groups, changed = append(b.Groups, group), true
	}
	if !slices.Contains(b.Types, typ) {
		b.Types, changed = append(b.Types, typ), true
	}
	if len(b.Groups) > store.MaxBatchReach || len(b.Types) > store.MaxBatchReach {
		b.Groups, b.Types, b.Wide = nil, nil, true
	}
	return changed
}

// NewBatchReach is the groups and types a new batch added by a caller
// with reach starts with: its callbacks' (its members' join as they are
// added), or, with no callback, the caller's patterns (store.BatchOwner).
func NewBatchReach(nb *store.NewBatch, reach *store.Reach) store.Batch {
	var b store.Batch
	for _, cb := range []*store.AddParams{nb.OnComplete, nb.OnSuccess} {
		if cb != nil {
			BatchWiden(&b, cb.Type, cb.Group)
		}
	}
	if len(b.Groups) == 0 {
		b.Groups, b.Types = store.BatchOwner(reach)
	}
	return b
}

// Callback names which callback a job is, in its data.
const (
	CallbackComplete = "complete"
	CallbackSuccess  = "success"
)

// BatchCallbacks are the adds batch b's callbacks make when it is done:
// OnComplete whatever its members' endings, OnSuccess when every member
// completed (so also when it has none). Each carries the batch in its
// data (store.BatchCallbackField). which says which callback each is.
func BatchCallbacks(b *store.Batch) (adds []store.AddParams, which []string, err error) {
	for _, c := range []struct {
		p    *store.AddParams
		name string
		ok   bool
	}{
		{b.OnComplete, CallbackComplete, true},
		{b.OnSuccess, CallbackSuccess, b.Counts.Completed == b.Counts.Total},
	} {
		if c.p == nil || !c.ok {
			continue
		}
		p := *c.p
		p.Batch = 0 // a callback is not a member
		if p.Data, err = withBatch(p.Data, b, c.name); err != nil {
			return nil, nil, err
		}
		adds = append(adds, p)
		which = append(which, c.name)
	}
	return adds, which, nil
}

// batchInfo is what a callback learns of its batch.
type batchInfo struct {
	ID       int64             `json:"id"`
	Counts   store.BatchCounts `json:"counts"`
	Callback string            `json:"callback"`
}

// withBatch adds the batch to a callback's data (a JSON object, nil for
// {}), as its last field.
func withBatch(data []byte, b *store.Batch, name string) ([]byte, error) {
	info, err := json.Marshal(batchInfo{ID: b.ID, Counts: b.Counts, Callback: name})
	if err != nil {
		return nil, err
	}
	field := append([]byte(`"`+store.BatchCallbackField+`":`), info...)
	obj := trimSpace(data)
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		if len(obj) != 0 && string(obj) != "null" {
			return nil, fmt.Errorf("batch %d: callback data is not a JSON object", b.ID)
		}
		obj = []byte("{}")
	}
	out := []byte{'{'}
	if inner := trimSpace(obj[1 : len(obj)-1]); len(inner) > 0 {
		out = append(append(out, inner...), ',')
	}
	out = append(out, field...)
	return append(out, '}'), nil
}

func trimSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
