package lifecycle

import (
	"fmt"

	"github.com/rotajobs/rota/store"
)

// CallbackNames checks the jobs that batch callback cb (named what:
// on_complete, on_success) names, its dependencies (After; a callback has
// no parent: check.Callback), with their rows as the batch's adder finds
// them (rows; nil for a missing one): each must be in the adder's reach,
// and one out of it is answered as a missing one, as an add's are
// (AddAfter). The callback is
// added later, when the batch is done, by whoever ends its last member,
// so it is checked now, for the caller that adds the batch: ids are never
// reused and no job changes group, so what is in reach now stays so.
func CallbackNames(what string, cb *store.AddParams, rows map[int64]*Row, reach *store.Reach) error {
	if _, _, err := AddAfter(cb.After, rows, reach); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// CallbackAfter splits the dependencies of a callback about to be added,
// when its batch is done (rows: theirs now, nil for a missing one), into
// those that still exist and the first that does not (nil: none). A job
// named when the batch was added may since have been removed, or retired
// after it ended: it counts as removed (Ended.Removed), so the callback's
// policy applies (Settle), where an add by a caller naming a missing job
// is refused (AddAfter).
func CallbackAfter(after []int64, rows map[int64]*Row) (kept []int64, gone *Ended) {
	for _, id := range after {
		if rows[id] == nil {
			if gone == nil {
				gone = &Ended{ID: id, Removed: true}
			}
			continue
		}
		kept = append(kept, id)
	}
	return kept, gone
}
