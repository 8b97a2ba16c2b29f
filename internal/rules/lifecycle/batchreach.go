package lifecycle

import (
	"fmt"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// CallbackNames checks the jobs that batch callback cb (named what:
// on_complete, on_success) names, its dependencies (After) and its parent,
// with their rows as the batch's adder finds them (rows; nil for a missing
// one): each must be in the adder's reach, and one out of it is answered
// as a missing one, as an add's are (AddAfter, AddChild). The callback is
// added later, when the batch is done, by whoever ends its last member,
// so it is checked now, for the caller that adds the batch: ids are never
// reused and no job changes group, so what is in reach now stays so.
func CallbackNames(what string, cb *store.AddParams, rows map[int64]*Row, reach *store.Reach) error {
	if _, _, err := AddAfter(cb.After, rows, reach); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if cb.Parent != 0 && Reached(rows[cb.Parent], reach) == nil {
		return fmt.Errorf("%s: %w", what, check.JobErrorf(store.ErrNotFound, "parent job %d does not exist", cb.Parent))
	}
	return nil
}

// CallbackIDs are the jobs callback cb names (CallbackNames).
func CallbackIDs(cb *store.AddParams) []int64 {
	ids := append([]int64(nil), cb.After...)
	if cb.Parent != 0 {
		ids = append(ids, cb.Parent)
	}
	return ids
}
