package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// This file is SQLite's side of internal/engine, which runs every job
// operation: txn is engine.Tx, in the writer's group-commit
// transaction or a caller's own (AddTx, FinishTx), with one statement per
// kind of plan (Apply). Every statement that moves jobs into or out of a
// group's pending or running count counts them in rota_groups in the same
// transaction (count, enter, move); no trigger does, since a row trigger's
// mere presence slows every claim and completion.

const rowColumns = `id, type, grp, state, coalesce(token, ''), attempt, max_attempts, backoff_base, backoff_max,
	resubmit, resubmit_at, run_at, coalesce(lease_timeout, 0), coalesce(repeat, ''), missed, slot, started_at,
	coalesce(retry_after, 0), lease_until, coalesce(parent_id, 0), has_children, coalesce(run_limit, run_timeout, 0), expires_at,
	has_deps, deps_waiting, dep_policy, has_dependants, coalesce(batch_id, 0)`

// Lock reads the rows of jobs ids: the writer's transaction holds the
// whole database, so a row read is a row locked. It keeps each job's own
// lease length, when it has one, for heartbeats (leaseOf).
func (w *txn) Lock(ids []int64) (map[int64]*lifecycle.Row, error) {
	out := make(map[int64]*lifecycle.Row, len(ids))
	for _, id := range ids {
		if _, ok := out[id]; ok {
			continue
		}
		r, lease, err := w.readRow(id)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		out[id] = r
		switch {
		case lease > 0:
			if w.leases == nil {
				w.leases = map[int64]time.Duration{}
			}
			w.leases[id] = lease
		case w.leases != nil:
			delete(w.leases, id)
		}
	}
	return out, nil
}

// leaseOf is the length of job r's lease: its own, or its type's.
func (w *txn) leaseOf(r *lifecycle.Row) time.Duration {
	if d := w.leases[r.ID]; d > 0 {
		return d
	}
	return w.s.leaseFor(r.Type, 0)
}

// Now is the writer's clock, read when the transaction began.
func (w *txn) Now() (time.Time, error) { return w.now, nil }

// readRow reads job id's row, nil when it does not exist, with its lease
// length (zero: the type's).
func (w *txn) readRow(id int64) (*lifecycle.Row, time.Duration, error) {
	var r lifecycle.Row
	var state int
	var base, maxB, runAt, lease int64
	var resubmitAt, slot, started, leaseUntil, expiresAt sql.NullInt64
	var retryAfter, timeout int64
	err := w.row("read_row", id).Scan(
		&r.ID, &r.Type, &r.Group, &state, &r.Token, &r.Attempt, &r.MaxAttempts, &base, &maxB,
		&r.Resubmit, &resubmitAt, &runAt, &lease, &r.Schedule, &r.Missed, &slot, &started, &retryAfter, &leaseUntil,
		&r.Parent, &r.HasChildren, &timeout, &expiresAt, &r.HasDeps, &r.DepsWaiting, &r.DepPolicy, &r.HasDependants, &r.Batch)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: read job %d: %w", id, err)
	}
	r.State = store.State(state)
	r.BackoffBase, r.BackoffMax = time.Duration(base)*time.Microsecond, time.Duration(maxB)*time.Microsecond
	r.RunAt, r.ResubmitAt = fromMicros(runAt), fromNullMicros(resubmitAt)
	r.Slot, r.StartedAt = fromNullMicros(slot), fromNullMicros(started)
	r.RetryAfter, r.LeaseUntil = time.Duration(retryAfter)*time.Microsecond, fromNullMicros(leaseUntil)
	r.Timeout = time.Duration(timeout) * time.Microsecond
	r.ExpiresAt = fromNullMicros(expiresAt)
	return &r, time.Duration(lease) * time.Microsecond, nil
}

// optTime is t in microseconds, NULL when zero.
func optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return micros(t)
}

// scheduleArgs are the arguments that set a schedule in updateSQL,
// markResubmitSQL and reviveSQL: whether to set it, to what, and the
// policy (NULL: keep).
func scheduleArgs(a *lifecycle.Readd) []any {
	var text, missed any
	if a.Schedule != nil && *a.Schedule != "" {
		text = *a.Schedule
	}
	if a.Missed != nil {
		missed = int(*a.Missed)
	}
	return []any{a.Schedule != nil, text, missed}
}

// Apply writes plan p for the job r with the statement for its kind,
// counts its move and queues its event (engine.Tx). It returns no job:
// the engine reads it when it needs it.
func (w *txn) Apply(r *lifecycle.Row, p *lifecycle.Plan, c engine.Change) (*store.Job, error) {
	now := micros(w.now)
	var err error
	if p.Touch.Any() && p.Kind != lifecycle.KindKeep {
		if _, err := w.run("touch", p.Touch.Data, p.Touch.Priority, p.Touch.EndSchedule, now, r.ID); err != nil {
			return nil, fmt.Errorf("sqlite: %s job %d: set what the finish changes: %w", p.Kind, r.ID, err)
		}
	}
	switch p.Kind {
	case lifecycle.KindKeep:
	case lifecycle.KindComplete:
		_, err = w.run("complete", p.Result, now, now, r.ID)
	case lifecycle.KindRetry, lifecycle.KindDiscard:
		var finished any
		if p.Kind == lifecycle.KindDiscard {
			finished = now
		}
		_, err = w.run("fail", int(p.State), micros(p.RunAt), p.Error, w.now.Format(time.RFC3339Nano), p.Error,
			finished, now, p.DropToken, r.ID)
	case lifecycle.KindRequeue:
		var rename any
		if p.Type != "" {
			if err := w.registerType(p.Type); err != nil {
				return nil, err
			}
			rename = p.Type
		}
		_, err = w.run("requeue", micros(p.RunAt), p.Attempt, rename, now, r.ID)
	case lifecycle.KindCancelRun:
		_, err = w.run("cancel_run", p.Error, now, now, r.ID)
	case lifecycle.KindRunAgain:
		_, err = w.run("run_again", micros(p.RunAt), optTime(p.Slot), p.DropToken, optTime(p.ExpiresAt), now, r.ID)
	case lifecycle.KindCancel:
		var why any
		if p.Error != "" {
			why = p.Error
		}
		_, err = w.run("cancel", p.CancelRequested, why, now, now, r.ID)
	case lifecycle.KindUpdate, lifecycle.KindRevive:
		a := &p.Set
		var rename any
		if p.Type != "" {
			if err := w.registerType(p.Type); err != nil {
				return nil, err
			}
			rename = p.Type
		}
		args := []any{micros(a.RunAt), a.Data, a.Priority, rename, nonZero(int64(a.MaxAttempts)),
			nonZero(a.BackoffBase.Microseconds()), nonZero(a.BackoffMax.Microseconds()), backend.MetaJSON(a.Meta)}
		args = append(append(args, scheduleArgs(a)...), optTime(p.Slot), optTime(a.ExpiresAt), now, r.ID)
		if p.Kind == lifecycle.KindRevive {
			_, err = w.run("revive", args...)
		} else {
			_, err = w.run("update", args...)
		}
	case lifecycle.KindMarkResubmit:
		args := append([]any{optTime(p.Set.RunAt), p.Set.Data}, scheduleArgs(&p.Set)...)
		_, err = w.run("mark_resubmit", append(args, now, r.ID)...)
	case lifecycle.KindRecur:
		var errText any
		if p.Error != "" {
			errText = p.Error
		}
		_, err = w.run("recur", micros(p.RunAt), optTime(p.Slot), p.Result, errText, now, now, p.DropToken, optTime(p.ExpiresAt), r.ID)
	case lifecycle.KindEdit:
		a := &p.Set
		args := append([]any{a.Data, a.Priority}, scheduleArgs(a)...)
		_, err = w.run("edit", append(args, optTime(p.Slot), micros(p.RunAt), now, r.ID)...)
	case lifecycle.KindWait:
		_, err = w.run("wait", micros(p.RunAt), p.Result, now, r.ID)
	case lifecycle.KindResume:
		_, err = w.run("resume", micros(p.RunAt), now, r.ID)
	case lifecycle.KindSkipSlots:
		_, err = w.run("skip_slots", micros(p.RunAt), optTime(p.Slot), p.Attempt, optTime(p.ExpiresAt), now, r.ID)
	case lifecycle.KindLapse:
		var finished any
		if p.State.Terminal() {
			finished = now
		}
		_, err = w.run("lapse", int(p.State), micros(p.RunAt), optTime(p.Slot), optTime(p.ExpiresAt), p.Error, p.State.Terminal(),
			finished, now, r.ID)
	case lifecycle.KindRemove:
		if _, err = w.run("remove", r.ID); err == nil {
			err = w.removeLogs([]int64{r.ID})
		}
		if err == nil && r.HasDeps {
			_, err = w.run("drop_deps", "["+strconv.FormatInt(r.ID, 10)+"]")
		}
	case lifecycle.KindDepsDone:
		_, err = w.run("deps_done", int(p.State), micros(p.RunAt), p.DepsWaiting, now, r.ID)
	case lifecycle.KindExtend:
		var prog any
		if c.Progress != nil {
			prog = *c.Progress
		}
		_, err = w.run("extend", micros(p.LeaseUntil), c.Data, prog, now, r.ID)
	default:
		err = fmt.Errorf("unknown plan %s", p.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s job %d: %w", p.Kind, r.ID, err)
	}
	if !r.ExpiresAt.IsZero() || !p.ExpiresAt.IsZero() || !p.Set.ExpiresAt.IsZero() {
		w.s.deadlineAdds.Add(1) // the job may be pending with a deadline now
	}
	if err := w.move(c.From, c.To); err != nil {
		return nil, err
	}
	if p.Kind != lifecycle.KindKeep {
		w.applied = append(w.applied, r.ID)
	}
	if p.Event.ID != 0 {
		w.changes = append(w.changes, p.Event)
	}
	return nil, nil
}

// Children lists the ids of job parent's children of kin (engine.Tx).
func (w *txn) Children(parent int64, kin engine.Kin) ([]int64, error) {
	switch kin {
	case engine.Paused:
		return w.ids(w.rows("children_paused", parent))
	case engine.All:
		return w.ids(w.rows("children_all", parent))
	}
	return w.ids(w.rows("children", parent))
}

// DropEnded deletes job parent's ended children in one statement
// (engine.Tx): ended jobs are in no count.
func (w *txn) DropEnded(parent int64, keepFailed bool) error {
	rows, err := w.rows("drop_ended", parent, keepFailed)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		ev := store.Event{Removed: true}
		if err := rows.Scan(&ev.ID, &ev.Type, &ev.Group, &ev.State); err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		w.changes = append(w.changes, ev)
		ids = append(ids, ev.ID)
	}
	// The statement's own failure (a trigger's abort, say) comes with the
	// rows' end, not with Close.
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return w.removeLogs(ids)
}

// Dependants lists the jobs added after each of jobs ids (engine.Tx).
func (w *txn) Dependants(ids []int64) (map[int64][]int64, error) {
	rows, err := w.rows("dependants", idList(ids))
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	out := map[int64][]int64{}
	for rows.Next() {
		var of, d int64
		if err := rows.Scan(&of, &d); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out[of] = append(out[of], d)
	}
	return out, rows.Err()
}

// AddDeps records job id's dependencies (engine.Tx).
func (w *txn) AddDeps(id int64, deps, unended []int64, policy store.DepPolicy) error {
	if _, err := w.run("add_deps", id, idList(deps)); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if len(unended) > 0 {
		if _, err := w.run("mark_dependants", idList(unended)); err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
	}
	if _, err := w.run("set_deps", len(unended), int(policy), id); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

// MarkParent records that job id has children (engine.Tx).
func (w *txn) MarkParent(id int64) error {
	_, err := w.run("mark_parent", id)
	return err
}

// Job reads job id as it now is (engine.Tx).
func (w *txn) Job(id int64) (store.Job, error) {
	j, err := scanJob(w.row("job", id))
	if err != nil {
		return store.Job{}, fmt.Errorf("sqlite: read job %d: %w", id, err)
	}
	return j, nil
}

// Unfinished reports whether any of a parent's children is pending,
// running or paused. It runs after every child's end, so it must not count
// them all (that made a fan-out of n children cost n² index steps): it
// looks from the newest child back, and children mostly end oldest first,
// so the first it meets is usually unfinished.
func (w *txn) Unfinished(id int64) (bool, error) {
	var child int64
	err := w.row("unfinished", id).Scan(&child)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: look for unfinished children of job %d: %w", id, err)
	}
	return true, nil
}

// ids reads rows of one id column.
func (w *txn) ids(rows *sql.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ---- producer side ----

// Add adds jobs, or re-adds existing ones by (type, group, key).
func (s *Store) Add(ctx context.Context, jobs []store.AddParams) ([]store.AddResult, error) {
	jobs, datas, err := check.Adds(jobs)
	if err != nil {
		return nil, err
	}
	var out []store.AddResult
	err = s.write(ctx, true, func(w *txn) error {
		var err error
		if out, err = w.add(jobs, datas, store.ReachOf(ctx)); err != nil {
			return err
		}
		return withBedrockIDs(jobs, out, w.bedrockIDs)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AddTx adds jobs inside the caller's transaction on the database returned
// by DB, so that they exist only if that transaction commits. Acceptors
// waiting in this process learn of them at their next poll.
func (s *Store) AddTx(ctx context.Context, tx *sql.Tx, jobs []store.AddParams) ([]store.AddResult, error) {
	jobs, datas, err := check.Adds(jobs)
	if err != nil {
		return nil, err
	}
	w := &txn{s: s, db: tx, now: s.cfg.Clock().UTC()}
	out, err := w.add(jobs, datas, store.ReachOf(ctx))
	if err != nil {
		return nil, err
	}
	return out, withBedrockIDs(jobs, out, w.bedrockIDs)
}

// add adds jobs for a caller with reach (nil: everything), which a parent
// must be in (engine.Add). The pending jobs it inserts are counted once
// per group (inserted), before anything else changes a count and at the
// end.
func (w *txn) add(jobs []store.AddParams, datas [][]byte, reach *store.Reach) (_ []store.AddResult, err error) {
	defer func() {
		switch {
		case err == nil:
		case w.own:
			// The request rolls back, inserts and all; after an error
			// that ended the transaction, a count would commit by itself.
			w.inserted.reset()
		default:
			// Count what was inserted even so: a caller of AddTx that
			// commits after an error keeps the jobs, and the counts must
			// hold them.
			w.inserted.save(w)
		}
	}()
	seen := map[string]bool{}
	for i := range jobs {
		if typ := jobs[i].Type; !seen[typ] {
			seen[typ] = true
			if err := w.registerType(typ); err != nil {
				return nil, err
			}
		}
	}
	out, err := engine.Add(w, jobs, datas, reach)
	if err != nil {
		return nil, err
	}
	if err := w.inserted.save(w); err != nil {
		return nil, err
	}
	return out, nil
}

// KeyHolder finds the job that holds p's key in its type and group
// (engine.Inserter); the writer serialises adds.
func (w *txn) KeyHolder(p *store.AddParams) (int64, bool, error) {
	var id int64
	err := w.row("key_holder", p.Type, p.Group, p.Key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: add: %w", err)
	}
	return id, true, nil
}

// Insert inserts a job (engine.Inserter). Its count waits in inserted,
// with the others of its group.
func (w *txn) Insert(p *store.AddParams, data []byte, state store.State) (store.AddResult, error) {
	now := micros(w.now)
	runAt := micros(cmp.Or(p.RunAt, w.now))
	var key, parent, batch any
	if p.Key != "" {
		key = p.Key
	}
	if p.Batch != 0 {
		batch = p.Batch
	}
	if p.Parent != 0 {
		parent = p.Parent
	}
	var repeat, slot any
	if p.Schedule != "" {
		repeat, slot = p.Schedule, runAt
	}
	res, err := w.run("insert", p.Type, key, p.Group, p.Priority, int(state), runAt, data, p.MaxAttempts,
		p.BackoffBase.Microseconds(), p.BackoffMax.Microseconds(), now, now, backend.MetaJSON(p.Meta), repeat, int(p.Missed), slot,
		nonZero(p.RetryAfter.Microseconds()), parent, nonZero(p.Timeout.Microseconds()), optTime(p.ExpiresAt),
		nonZero(p.UniqueFor.Microseconds()), nonZero(p.Debounce.Microseconds()), batch)
	if !p.ExpiresAt.IsZero() {
		w.s.deadlineAdds.Add(1)
	}
	if err != nil {
		return store.AddResult{}, fmt.Errorf("sqlite: add: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return store.AddResult{}, fmt.Errorf("sqlite: add: %w", err)
	}
	j := store.Job{
		ID: id, Type: p.Type, Key: p.Key, Group: p.Group, Priority: p.Priority, State: state, Parent: p.Parent,
		RunAt: fromMicros(runAt), Data: data, MaxAttempts: p.MaxAttempts, Meta: p.Meta,
		BackoffBase: p.BackoffBase.Truncate(time.Microsecond), BackoffMax: p.BackoffMax.Truncate(time.Microsecond),
		CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now), Schedule: p.Schedule, Missed: p.Missed,
		RetryAfter: p.RetryAfter, Timeout: p.Timeout, ExpiresAt: p.ExpiresAt,
		UniqueFor: p.UniqueFor.Truncate(time.Microsecond), Debounce: p.Debounce.Truncate(time.Microsecond), Batch: p.Batch,
	}
	if p.Schedule != "" {
		j.Slot = j.RunAt
	}
	w.changes = append(w.changes, store.Event{ID: id, Type: p.Type, Group: p.Group, State: state, RunAt: j.RunAt})
	if state == store.Pending {
		w.inserted.add(p.Type, p.Group)
	}
	return store.AddResult{Job: j, Outcome: store.Inserted}, nil
}

// addCounts counts the pending jobs an add inserted, by type and group,
// in the order the groups first came, for rota_groups: one count per
// group and add, rather than one per job.
type addCounts struct {
	index  map[[2]string]int // type and group → groups[i]
	groups []groupCount
}

type groupCount struct {
	typ, grp string
	n        int
}

func (c *addCounts) add(typ, grp string) {
	k := [2]string{typ, grp}
	i, ok := c.index[k]
	if !ok {
		if c.index == nil {
			c.index = map[[2]string]int{}
		}
		i = len(c.groups)
		c.index[k] = i
		c.groups = append(c.groups, groupCount{typ: typ, grp: grp})
	}
	c.groups[i].n++
}

// reset forgets the counts.
func (c *addCounts) reset() {
	clear(c.index)
	c.groups = c.groups[:0]
}

// save adds the counts to rota_groups (enter) and starts counting again
// from none.
func (c *addCounts) save(w *txn) error {
	if len(c.groups) == 0 {
		return nil
	}
	defer c.reset()
	for _, g := range c.groups {
		if err := w.enter(g.typ, g.grp, g.n, 0); err != nil {
			return fmt.Errorf("sqlite: add: %w", err)
		}
	}
	return nil
}

// SameData finds the jobs of p's type and group with data created after
// since (engine.Inserter); the writer serialises adds.
func (w *txn) SameData(p *store.AddParams, data []byte, since time.Time) ([]int64, error) {
	rs, err := w.rows("same_data", p.Type, p.Group, data, micros(since))
	if err != nil {
		return nil, fmt.Errorf("sqlite: unique window: %w", err)
	}
	defer rs.Close()
	var ids []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite: unique window: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rs.Err()
}

// FindUnique finds the job a unique add of p's type and group finds
// (engine.Tx); the writer serialises unique adds.
func (w *txn) FindUnique(p *store.AddParams) (int64, bool, error) {
	var id int64
	err := w.row("unique", p.Type, p.Group).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: unique add: %w", err)
	}
	return id, true, nil
}

func (w *txn) registerType(name string) error {
	// Always write the row, even for a type already in memory: the memory
	// entry may come from a transaction that rolled back (a caller's AddTx,
	// or a failed request), and a type missing from rota_types is unknown
	// to patterns after a restart. The insert is a no-op when the row exists.
	if _, err := w.run("register_type", name, micros(w.now)); err != nil {
		return fmt.Errorf("sqlite: register type %q: %w", name, err)
	}
	w.s.typesMu.Lock()
	if _, ok := w.s.types[name]; !ok {
		w.s.types[name] = typeConfig{}
	}
	w.s.typesMu.Unlock()
	return nil
}

func nonZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// Resubmit asks for jobs to run again.
func (s *Store) Resubmit(ctx context.Context, ps []store.ResubmitParams) ([]store.AddResult, []error, error) {
	datas, err := check.Resubmits(ps)
	if err != nil {
		return nil, nil, err
	}
	var out []store.AddResult
	var errs []error
	err = s.write(ctx, true, func(w *txn) error {
		var err error
		out, errs, err = engine.Resubmit(w, ps, datas, engine.CallerOf(ctx))
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, errs, nil
}

// Cancel cancels jobs that have not ended. A running job's worker learns
// of it on its next call, which fails with ErrCanceled.
func (s *Store) Cancel(ctx context.Context, ids []int64) ([]error, error) {
	if err := check.IDs(ids); err != nil {
		return nil, err
	}
	return s.decide(ctx, ids, engine.Cancel)
}

// Remove deletes jobs in any state.
func (s *Store) Remove(ctx context.Context, ids []int64) ([]error, error) {
	if err := check.IDs(ids); err != nil {
		return nil, err
	}
	return s.decide(ctx, ids, engine.Remove)
}

// decide runs a producer's operation on jobs by id (engine.Cancel,
// engine.Remove) in one transaction, with per-item errors.
func (s *Store) decide(ctx context.Context, ids []int64, op func(engine.Tx, []int64, engine.Caller) ([]error, error)) ([]error, error) {
	var errs []error
	err := s.write(ctx, true, func(w *txn) error {
		var err error
		errs, err = op(w, ids, engine.CallerOf(ctx))
		return err
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// ---- worker side ----

// Accept leases due jobs to a worker, fairly across groups (accept.go).
func (s *Store) Accept(ctx context.Context, p store.AcceptParams) (store.AcceptResult, error) {
	pats, err := check.Accept(&p)
	if err != nil {
		return store.AcceptResult{}, err
	}
	// The claimed jobs are read off the writer (readClaimed) as soon as
	// their claim has committed, while the answer waits for earlier
	// fsyncs.
	var res store.AcceptResult
	var read struct {
		done chan struct{}
		jobs []store.Job
		err  error
	}
	err = s.write(ctx, false, func(w *txn) error {
		var err error
		if res, err = w.accept(p, s.resolve(pats)); err != nil || len(res.Jobs) == 0 {
			return err
		}
		jobs, done := res.Jobs, make(chan struct{})
		read.done = done
		if !w.readAfter(func(snapshot func()) {
			defer close(done)
			read.jobs, read.err = s.readClaimed(bg, jobs, snapshot)
		}) {
			return errors.New("sqlite: accept outside the writer's transaction")
		}
		return nil
	})
	if read.done == nil {
		if err != nil {
			// The claim failed part-way and its savepoint rolled back:
			// the jobs it took are pending again, not leased.
			return store.AcceptResult{}, err
		}
		return res, nil
	}
	// The read runs whenever the claim ran (readAfter). It finds the
	// jobs leased if the claim committed, which the error of a later step
	// (an earlier batch's failed fsync) does not undo: then the jobs come
	// with that error, whole, as they always have; it finds none of them
	// if the claim was rolled back.
	<-read.done
	if read.err != nil {
		// The jobs are leased: give them back rather than leave them to
		// expire.
		back := make([]store.FinishParams, len(res.Jobs))
		for i, j := range res.Jobs {
			back[i] = store.FinishParams{Lease: j.Lease(), As: store.Release}
		}
		_, ferr := s.Finish(context.WithoutCancel(ctx), back)
		return store.AcceptResult{}, errors.Join(err, read.err, ferr)
	}
	res.Jobs = read.jobs
	return res, err
}

// Heartbeat extends leases and optionally updates data and progress.
func (s *Store) Heartbeat(ctx context.Context, ps []store.HeartbeatParams) ([]store.HeartbeatResult, error) {
	datas, err := check.Heartbeats(ps)
	if err != nil {
		return nil, err
	}
	out := make([]store.HeartbeatResult, len(ps))
	durable := false
	for _, p := range ps {
		durable = durable || p.Data != nil
	}
	err = s.write(ctx, durable, func(w *txn) error {
		return engine.Heartbeat(w, ps, datas, w.leaseOf, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Finish ends leases: complete, fail, snooze, release or cancel.
func (s *Store) Finish(ctx context.Context, ps []store.FinishParams) ([]error, error) {
	results, err := check.Finishes(ps)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(ps))
	err = s.write(ctx, true, func(w *txn) error {
		done, err := w.completeMany(ps, results)
		if err != nil {
			return err
		}
		var rest []int
		for i := range ps {
			if done == nil || !done[i] {
				rest = append(rest, i)
			}
		}
		rest, ended, err := w.completeDependencies(ps, results, rest) // deps.go
		if err != nil {
			return err
		}
		return engine.Finish(w, ps, results, rest, errs, ended...)
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// FinishTx ends leases inside the caller's transaction on the database
// returned by DB, so that a job's effect and its completion commit or roll
// back together. It returns one error per item; a stale token gives
// ErrWorkerConflict, and the caller should then roll back.
func (s *Store) FinishTx(ctx context.Context, tx *sql.Tx, ps []store.FinishParams) ([]error, error) {
	results, err := check.Finishes(ps)
	if err != nil {
		return nil, err
	}
	w := &txn{s: s, db: tx, now: s.cfg.Clock().UTC()}
	errs := make([]error, len(ps))
	items := make([]int, len(ps))
	for i := range items {
		items[i] = i
	}
	if err := engine.Finish(w, ps, results, items, errs); err != nil {
		return nil, err
	}
	return errs, nil
}

// completeMany is the common case of finish in one statement: it completes
// every item for which lifecycle.Completes holds (the item completes a job
// running under its token, not resubmitted meanwhile), with that condition
// in the statement's WHERE, and reports which items it handled (nil: none). The others (other endings, fencing failures,
// repeats, resubmits, ids that appear more than once) are left to finish,
// which classifies them; for a handled item, finish would have made
// exactly this update and reported exactly this change.
func (w *txn) completeMany(ps []store.FinishParams, results [][]byte) ([]bool, error) {
	// Items are [id, "token"] or [id, "token", "hex of the result"]: hex,
	// so that a result's bytes are stored exactly as given (a blob, or NULL
	// when there is none).
	idx := make(map[int64]int, len(ps)) // id → item, -1 when the id repeats
	for i, p := range ps {
		if _, ok := idx[p.ID]; ok {
			idx[p.ID] = -1
		} else {
			idx[p.ID] = i
		}
	}
	buf := make([]byte, 0, 64*len(ps))
	buf = append(buf, '[')
	n := 0
	for i, p := range ps {
		if p.As != store.Complete || !p.Plain() || idx[p.ID] != i {
			continue
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		n++
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
	if n == 0 {
		return nil, nil
	}
	buf = append(buf, ']')
	rows, err := w.rows("complete_many", micros(w.now), micros(w.now), string(buf))
	if err != nil {
		return nil, fmt.Errorf("sqlite: finish: %w", err)
	}
	defer rows.Close()
	done := make([]bool, len(ps))
	ended := map[groupKey]int{}
	var batches map[int64]int64 // members completed, by batch
	c := newColumns("id", "type", "grp", "run_at", "batch_id")
	for rows.Next() {
		if err := c.scan(rows); err != nil {
			return nil, fmt.Errorf("sqlite: finish: %w", err)
		}
		id, typ, grp, runAt := c.int64(0), c.str(1), c.str(2), c.int64(3)
		if b := c.int64(4); b != 0 {
			if batches == nil {
				batches = map[int64]int64{}
			}
			batches[b]++
		}
		if c.err != nil {
			return nil, fmt.Errorf("sqlite: finish: %w", c.err)
		}
		i := idx[id]
		done[i] = true
		ended[groupKey{grp, typ}]++
		w.changes = append(w.changes, lifecycle.CompletedEvent(id, typ, grp, fromMicros(runAt), ps[i].Token))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: finish: %w", err)
	}
	rows.Close()
	for k, n := range ended {
		if err := w.count(k.typ, k.grp, 0, -n); err != nil {
			return nil, err
		}
	}
	if batches != nil {
		if err := engine.BatchesCompleted(w, batches); err != nil {
			return nil, fmt.Errorf("sqlite: finish: %w", err)
		}
	}
	return done, nil
}

// count adds to the counts of a group that has jobs in them already (so
// its row exists): jobs that leave a count, or move between pending and
// running.
func (w *txn) count(typ, grp string, pending, running int) error {
	if pending != 0 {
		if _, err := w.clock(typ); err != nil {
			return err
		}
	}
	if _, err := w.run("count",
		pending, running, typ, grp); err != nil {
		return fmt.Errorf("sqlite: count jobs of group %q: %w", grp, err)
	}
	return nil
}

// enter counts jobs that enter a group's pending or running count, making
// its row if it has none. A group that had no pending jobs takes its turn
// no earlier than its type's virtual clock (clock), so that it cannot have
// banked turns while idle.
func (w *txn) enter(typ, grp string, pending, running int) error {
	clock, err := w.clock(typ)
	if err != nil {
		return err
	}
	if _, err := w.run("enter", typ, grp, pending, running, clock); err != nil {
		return fmt.Errorf("sqlite: count jobs of group %q: %w", grp, err)
	}
	return nil
}

// clock is typ's virtual clock as the request began (fair's rule): the
// smallest turn among its groups with pending jobs, else the turn kept in
// rota_types. It is read before the request's first change to the type's
// pending counts, so that every group the request gives jobs starts from
// the same clock, whatever the order of its changes (PostgreSQL counts a
// transaction's changes in one statement at its end).
func (w *txn) clock(typ string) (float64, error) {
	if c, ok := w.clocks[typ]; ok {
		return c, nil
	}
	var c float64
	if err := w.row("clock", typ, typ).Scan(&c); err != nil {
		return 0, fmt.Errorf("sqlite: virtual clock of type %q: %w", typ, err)
	}
	if w.clocks == nil {
		w.clocks = map[string]float64{}
	}
	w.clocks[typ] = c
	return c, nil
}

// move counts a job that left place from (nil: none) and entered place to
// (nil: none, as when it was removed).
func (w *txn) move(from, to *lifecycle.Place) error {
	if from != nil && to != nil && *from == *to {
		return nil
	}
	// The move may concern a job this transaction inserted: its group's
	// row must hold its count first.
	if err := w.inserted.save(w); err != nil {
		return err
	}
	if from != nil && (from.State == store.Pending || from.State == store.Running) {
		if err := w.count(from.Type, from.Group, -b2i(from.State == store.Pending), -b2i(from.State == store.Running)); err != nil {
			return err
		}
	}
	if to != nil && (to.State == store.Pending || to.State == store.Running) {
		return w.enter(to.Type, to.Group, b2i(to.State == store.Pending), b2i(to.State == store.Running))
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendJSONString appends s as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b, _ := json.Marshal(s)
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// KeyTaken looks up job r's key and whether another job holds it in type
// typ and r's group (engine.Tx); the writer serialises renames and adds.
func (w *txn) KeyTaken(r *lifecycle.Row, typ string) (string, bool, error) {
	var key sql.NullString
	var other int64
	if err := w.row("key_of", r.ID).Scan(&key); err != nil {
		return "", false, fmt.Errorf("sqlite: rename job %d: %w", r.ID, err)
	}
	if !key.Valid {
		return "", false, nil
	}
	err := w.row("key_holder", typ, r.Group, key.String).Scan(&other)
	switch {
	case err == nil:
		return key.String, true, nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", false, fmt.Errorf("sqlite: rename job %d: %w", r.ID, err)
	}
	return key.String, false, nil
}

// ExpireLeases takes back running jobs whose lease ended before now, and
// ends pending jobs whose deadline passed (lapse).
func (s *Store) ExpireLeases(ctx context.Context, now time.Time) (int, time.Time, error) {
	var n int
	var next time.Time
	var none bool
	var adds int64
	err := s.write(ctx, true, func(w *txn) error {
		n, next, none = 0, time.Time{}, false
		adds = s.deadlineAdds.Load() // before the look: an add after it counts
		rows, err := w.rows("expired", micros(now))
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rs, err := w.Lock(ids)
		if err != nil {
			return err
		}
		expired := make([]*lifecycle.Row, 0, len(rs))
		for _, id := range ids {
			if r := rs[id]; r != nil {
				expired = append(expired, r)
			}
		}
		if n, err = engine.Expire(w, expired); err != nil {
			return err
		}
		lapsed, err := w.lapse(now)
		if err != nil {
			return err
		}
		n += lapsed
		var lease, deadline sql.NullInt64
		if err := w.row("next_lease").Scan(&lease); err != nil {
			return err
		}
		if err := w.row("next_deadline").Scan(&deadline); err != nil {
			return err
		}
		for _, v := range []sql.NullInt64{lease, deadline} {
			if t := fromMicros(v.Int64); v.Valid && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
		none = !deadline.Valid
		return nil
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("sqlite: expire leases: %w", err)
	}
	if none {
		// Committed with no pending job that has a deadline, and none
		// added since: claims skip the look (txn.deadlineSQL).
		s.deadlinesNone.Store(adds)
	} else {
		s.deadlinesNone.Store(-1) // whatever put them there
	}
	return n, next, nil
}

// lapse ends the pending jobs whose deadline is not after now (up to
// 1,000 a sweep; the sweep comes back at once for the rest).
func (w *txn) lapse(now time.Time) (int, error) {
	ids, err := w.ids(w.rows("lapsed", micros(now)))
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	rs, err := w.Lock(ids)
	if err != nil {
		return 0, err
	}
	rows := make([]*lifecycle.Row, 0, len(rs))
	for _, id := range ids {
		if r := rs[id]; r != nil {
			rows = append(rows, r)
		}
	}
	return engine.Lapse(w, rows, now)
}

// Retire deletes up to limit ended jobs past their type's retention.
func (s *Store) Retire(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int
	err := s.write(ctx, true, func(w *txn) error {
		rows, err := w.rows("retire", micros(now), store.DefaultRetention.Microseconds(), max(limit, 1))
		if err != nil {
			return fmt.Errorf("sqlite: retire ended jobs: %w", err)
		}
		defer rows.Close()
		var ids, withDeps []int64
		for rows.Next() {
			var id int64
			var hasDeps bool
			if err := rows.Scan(&id, &hasDeps); err != nil {
				return fmt.Errorf("sqlite: retire ended jobs: %w", err)
			}
			ids = append(ids, id)
			if hasDeps {
				withDeps = append(withDeps, id)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: retire ended jobs: %w", err)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("sqlite: retire ended jobs: %w", err)
		}
		n = len(ids)
		if len(withDeps) > 0 {
			if _, err := w.run("drop_deps", idList(withDeps)); err != nil {
				return fmt.Errorf("sqlite: retire ended jobs: %w", err)
			}
		}
		if err := w.removeLogs(ids); err != nil {
			return err
		}
		// The audit trail is bounded by its age, in the same sweep.
		if _, err := w.run("retire_audit", micros(now.Add(-store.AuditRetention)), max(limit, 1)); err != nil {
			return fmt.Errorf("sqlite: retire audit records: %w", err)
		}
		return nil
	})
	return n, err
}

// Update changes jobs in place (lifecycle.Update).
func (s *Store) Update(ctx context.Context, ps []store.UpdateParams) ([]store.Job, []error, error) {
	datas, err := check.Updates(ps)
	if err != nil {
		return nil, nil, err
	}
	var out []store.Job
	var errs []error
	err = s.write(ctx, true, func(w *txn) error {
		var err error
		out, errs, err = engine.Update(w, ps, datas, engine.CallerOf(ctx))
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, errs, nil
}
