package postgres

import (
	"fmt"
	"sort"
)

// The group counts (rota.groups: pending and running jobs per type and
// group, see migration 0002) are kept by the statements that change jobs,
// not by triggers:
//
//   - a statement that runs by itself (a claim, a batch of completions, a
//     batch insert) applies its own counts in a CTE of the same statement;
//   - a transaction of several statements (finish, cancel, remove,
//     resubmit, keyed adds, lease expiry, the caller's transactions of
//     AddTx and FinishTx) collects them in txn.counts and applies them in
//     one statement at its end (flushCounts).
//
// Either way, a transaction changes group rows in one statement, locking
// them in (type, grp) order, and after every job row it waits for: so no
// two transactions can wait for each other's group rows (see "Fairness" in
// docs/postgres.md). Row triggers would update a group row once per job (a
// claim of 1000 jobs of one group would write its row 1000 times), and
// statement triggers with transition tables cannot be limited to the
// columns that matter, so they would run for every heartbeat, and they
// could not keep the order of the locks across a transaction's statements.

type groupKey struct{ typ, grp string }

type groupDelta struct{ pending, running int64 }

// count records a change of the group counts, applied at the end of the
// transaction.
func (t *txn) count(typ, grp string, dp, dr int64) {
	if dp == 0 && dr == 0 {
		return
	}
	if t.counts == nil {
		t.counts = map[groupKey]*groupDelta{}
	}
	k := groupKey{typ, grp}
	d := t.counts[k]
	if d == nil {
		d = &groupDelta{}
		t.counts[k] = d
	}
	d.pending += dp
	d.running += dr
}

// countState records that a job of typ and grp left state from (dir −1) or
// entered it (dir +1).
func (t *txn) countState(typ, grp string, state int16, dir int64) {
	switch state {
	case 0:
		t.count(typ, grp, dir, 0)
	case 1:
		t.count(typ, grp, 0, dir)
	}
}

// clockOf is the virtual clock of a type, where a group that becomes
// backlogged again starts: the smallest turn among its backlogged groups,
// or the clock kept in rota.types when none is.
func clockOf(typ string) string {
	return `coalesce((SELECT min(x.turn) FROM rota.groups x WHERE x.type = ` + typ + ` AND x.pending > 0),
		(SELECT y.vclock FROM rota.types y WHERE y.name = ` + typ + `), 0)`
}

// upsertCounts is an INSERT into rota.groups of the rows of src (with
// columns type, grp, dp, dr: changes of the pending and running counts), in
// (type, grp) order so that the group rows are locked in that order. A
// group whose pending count rises from zero starts at its type's clock.
func upsertCounts(src string) string {
	return `INSERT INTO rota.groups AS g (type, grp, pending, running, turn)
	SELECT c.type, c.grp, c.dp, c.dr, CASE WHEN c.dp > 0 THEN ` + clockOf("c.type") + ` ELSE 0 END
	FROM (` + src + `) c ORDER BY c.type COLLATE "C", c.grp COLLATE "C"
	ON CONFLICT (type, grp) DO UPDATE SET
		turn = CASE WHEN g.pending = 0 AND excluded.pending > 0 THEN greatest(g.turn, excluded.turn) ELSE g.turn END,
		pending = g.pending + excluded.pending, running = g.running + excluded.running`
}

// countsCTE is a CTE (named cnt) that applies the counts of the rows of
// the CTE src: each row adds dp to its group's pending count and dr to its
// running count.
func countsCTE(src, dp, dr string) string {
	return `cnt AS (` + upsertCounts(`SELECT type, grp, sum(`+dp+`)::bigint AS dp, sum(`+dr+`)::bigint AS dr FROM `+src+` GROUP BY type, grp`) + ` RETURNING 1)`
}

var flushCountsSQL = upsertCounts(`SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS u(type, grp, dp, dr)`)

// flushCounts applies the collected counts in one statement.
func (t *txn) flushCounts() error {
	if len(t.counts) == 0 {
		return nil
	}
	keys := make([]groupKey, 0, len(t.counts))
	for k, d := range t.counts {
		if d.pending != 0 || d.running != 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].typ != keys[j].typ {
			return keys[i].typ < keys[j].typ
		}
		return keys[i].grp < keys[j].grp
	})
	types, grps := make([]string, len(keys)), make([]string, len(keys))
	dps, drs := make([]int64, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		types[i], grps[i], dps[i], drs[i] = k.typ, k.grp, t.counts[k].pending, t.counts[k].running
	}
	t.counts = nil
	if len(keys) == 0 {
		return nil
	}
	if _, err := t.exec(flushCountsSQL, types, grps, dps, drs); err != nil {
		return fmt.Errorf("group counts: %w", err)
	}
	return nil
}
