package postgres

import (
	"fmt"
	"github.com/jackc/pgx/v5"
	"sort"

	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// The pending counts of the groups (rota.groups, see migration 0002) are
// kept by the statements that change jobs, not by triggers, and appended
// rather than applied (migration 0022):
//
//   - an add that is a transaction of its own appends its groups' changes
//     to rota.pending_changes in a CTE of its insert (insert_counted);
//   - a transaction of several statements (finish, cancel, remove,
//     resubmit, keyed adds, lease expiry, the caller's transactions of
//     AddTx and FinishTx) collects them in txn.counts and appends them in
//     one statement at its end (flushCounts);
//   - claims, which read the counts, fold the changes of their types into
//     rota.groups first (queueFold), in a transaction of their own, and
//     update the rows of the groups they served in their own statement.
//
// So only claims and folds lock group rows, and they commit without
// waiting for the WAL flush: an add never holds a group's row through its
// synchronous commit, which claims of the group and other adds of it
// waited for when adds updated the row themselves
// (TestAddsDoNotWaitForEachOther). Folds and claims lock group rows in
// (type, grp) order after every job row they wait for, so no two
// transactions wait for each other's (see "Fairness" in docs/postgres.md).
// Row triggers would update a group row once per job (a claim of 1000 jobs
// of one group would write its row 1000 times), and statement triggers
// with transition tables cannot be limited to the columns that matter, so
// they would run for every heartbeat.
//
// Running jobs are not counted in rota.groups: accepts count them in the
// jobs table (index jobs_running) for bounded groups only, so that
// completions, which do not change pending counts, never touch a group row.

type groupKey struct{ typ, grp string }

// count records a change of a group's pending count, appended at the end
// of the transaction.
func (t *txn) count(typ, grp string, dp int64) {
	if dp == 0 {
		return
	}
	if t.counts == nil {
		t.counts = map[groupKey]int64{}
	}
	t.counts[groupKey{typ, grp}] += dp
}

// move counts a job that left place from (nil: none) and entered place
// to (nil: none, as when it was removed): only pending jobs are counted.
func (t *txn) move(from, to *lifecycle.Place) {
	if from != nil && from.State == store.Pending {
		t.count(from.Type, from.Group, -1)
	}
	if to != nil && to.State == store.Pending {
		t.count(to.Type, to.Group, 1)
	}
}

// flushCounts appends the collected counts to rota.pending_changes in one
// statement.
func (t *txn) flushCounts() error {
	if len(t.counts) == 0 {
		return nil
	}
	keys := make([]groupKey, 0, len(t.counts))
	for k, d := range t.counts {
		if d != 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].typ != keys[j].typ {
			return keys[i].typ < keys[j].typ
		}
		return keys[i].grp < keys[j].grp
	})
	types, grps, dps := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		types[i], grps[i], dps[i] = k.typ, k.grp, t.counts[k]
	}
	t.counts = nil
	if len(keys) == 0 {
		return nil
	}
	if _, err := t.run("flush_counts", types, grps, dps); err != nil {
		return fmt.Errorf("group counts: %w", err)
	}
	return nil
}

// queueFold queues on b the fold of the types' pending changes into their
// groups (under the types' fold locks, fold_lock: fold_pending_one, a plain
// statement for one transaction's changes, or else fold_pending, migration
// 0022's function, for several) in a transaction of its own, so
// that the claims after it in the same round trip read the counts whole
// while the fold holds no group row through them. It returns how many
// results readFold reads: none when types is nil.
func (s *Store) queueFold(b *pgx.Batch, types []string) int {
	if types == nil {
		return 0
	}
	b.Queue("BEGIN")
	b.Queue(s.stmt("fold_lock"), types)
	b.Queue(s.stmt("fold_pending_one"), types)
	b.Queue(s.stmt("fold_pending"), types)
	b.Queue("COMMIT")
	return 5
}

// readFold reads the n results of queueFold.
func readFold(br pgx.BatchResults, n int) error {
	for range n {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("fold the pending counts: %w", err)
		}
	}
	return nil
}
