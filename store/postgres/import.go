package postgres

import (
	"context"
	"slices"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// Import adds jobs in the states they had in another system, in one
// transaction: each is added pending, then given its parent, Bedrock id
// and creation time, and moved to its state (an ended one to the table of
// ended jobs), with the group counts it leaves.
func (s *Store) Import(ctx context.Context, jobs []store.ImportJob) ([]int64, error) {
	ps, datas, err := check.Imports(jobs)
	if err != nil {
		return nil, err
	}
	var types []string
	for _, p := range ps {
		types = append(types, p.Type)
	}
	slices.Sort(types)
	types = slices.Compact(types)
	ids := make([]int64, len(jobs))
	err = s.inTx(ctx, "import", func(t *txn) error {
		res, err := t.add(ps, datas, types)
		if err != nil {
			return err
		}
		for i, r := range res {
			ids[i] = r.Job.ID
		}
		for i, j := range jobs {
			var parent, bid *int64
			if j.ParentIndex >= 0 {
				parent = &ids[j.ParentIndex]
				if _, err := t.run("mark_parent", *parent); err != nil {
					return err
				}
			}
			if j.BedrockID != 0 {
				bid = &jobs[i].BedrockID
			}
			if _, err := t.run("import_job",
				ids[i], parent, bid, optTime(j.CreatedAt), optString(j.LastError)); err != nil {
				return err
			}
		}
		// The states last: an ended job leaves the hot table.
		for i, j := range jobs {
			switch {
			case j.State == store.Paused:
				if _, err := t.run("import_paused", ids[i]); err != nil {
					return err
				}
			case j.State.Terminal():
				if _, err := t.run("end", ids[i], int16(j.State), nil, nil, false, true, false, false); err != nil {
					return err
				}
			default:
				continue
			}
			t.move(&lifecycle.Place{Type: j.Type, Group: j.Group, State: store.Pending}, nil)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}
