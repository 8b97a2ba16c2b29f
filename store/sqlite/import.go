package sqlite

import (
	"context"
	"fmt"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// Import adds jobs in the states they had in another system, in one
// transaction: each is added pending, then set to its state, parent,
// Bedrock id and creation time (the group counts follow the state: add
// counts the jobs it inserts pending, and move their change of state).
func (s *Store) Import(ctx context.Context, jobs []store.ImportJob) ([]int64, error) {
	ps, datas, err := check.Imports(jobs)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(jobs))
	err = s.write(ctx, true, func(w *txn) error {
		res, err := w.add(ps, datas, nil)
		if err != nil {
			return err
		}
		for i, r := range res {
			ids[i] = r.Job.ID
		}
		now := micros(w.now)
		for i, j := range jobs {
			var parent, bid, finished, lastErr any
			if j.ParentIndex >= 0 {
				parent = ids[j.ParentIndex]
				if _, err := w.run("mark_parent", parent); err != nil {
					return err
				}
			}
			if j.BedrockID != 0 {
				bid = j.BedrockID
			}
			if j.State.Terminal() {
				finished = now
			}
			if j.LastError != "" {
				lastErr = j.LastError
			}
			created := now
			if !j.CreatedAt.IsZero() {
				created = micros(j.CreatedAt)
			}
			if _, err := w.run("import_job",
				int(j.State), parent, bid, created, finished, lastErr, ids[i]); err != nil {
				return fmt.Errorf("import %d: %w", i, err)
			}
			from := lifecycle.Place{Type: ps[i].Type, Group: ps[i].Group, State: store.Pending}
			to := from
			to.State = j.State
			if err := w.move(&from, &to); err != nil {
				return fmt.Errorf("import %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: import: %w", err)
	}
	return ids, nil
}
