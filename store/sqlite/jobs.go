package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rotajobs/rota/store"
)

// This file holds every state transition of the SQLite store. Each runs
// inside a writeTx: the writer's group-commit transaction, or a caller's
// own transaction (AddTx, FinishTx).

// row is the part of a job that transitions decide on.
type row struct {
	id          int64
	typ, grp    string
	state       store.State
	token       string
	attempt     int
	maxAttempts int
	base, maxB  time.Duration
	resubmit    bool
	resubmitAt  sql.NullInt64
	nextData    []byte
	runAt       int64
	leaseLen    time.Duration
}

const rowColumns = `id, type, grp, state, coalesce(token, ''), attempt, max_attempts, backoff_base, backoff_max,
	resubmit, resubmit_at, next_data, run_at, coalesce(lease_timeout, 0)`

func (w *writeTx) load(id int64) (row, bool, error) {
	var r row
	var state int
	var base, maxB, lease int64
	err := w.queryRow(`SELECT `+rowColumns+` FROM rota_jobs WHERE id = ?`, id).Scan(
		&r.id, &r.typ, &r.grp, &state, &r.token, &r.attempt, &r.maxAttempts, &base, &maxB,
		&r.resubmit, &r.resubmitAt, &r.nextData, &r.runAt, &lease)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("sqlite: load job %d: %w", id, err)
	}
	r.state = store.State(state)
	r.base, r.maxB = time.Duration(base)*time.Microsecond, time.Duration(maxB)*time.Microsecond
	r.leaseLen = time.Duration(lease) * time.Microsecond
	return r, true, nil
}

func (w *writeTx) changed(r row, state store.State, runAt int64) {
	w.changes = append(w.changes, store.Event{ID: r.id, Type: r.typ, Group: r.grp, State: state, RunAt: fromMicros(runAt), Lease: store.LeaseTag(r.token)})
}

// fence applies the worker-call rule (store.Fence) to a loaded row.
func fence(r row, found bool, token string) error {
	return store.Fence(r.id, found, r.state, r.token, token)
}

// ---- producer side ----

// Add adds jobs, or re-adds existing ones by (type, key).
func (s *Store) Add(ctx context.Context, jobs []store.AddParams) ([]store.AddResult, error) {
	jobs, datas, err := store.CheckAdds(jobs)
	if err != nil {
		return nil, err
	}
	var out []store.AddResult
	err = s.write(ctx, true, func(w *writeTx) error {
		var err error
		out, err = w.add(jobs, datas)
		return err
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
	jobs, datas, err := store.CheckAdds(jobs)
	if err != nil {
		return nil, err
	}
	w := &writeTx{s: s, db: tx, now: s.cfg.Clock().UTC()}
	return w.add(jobs, datas)
}

func (w *writeTx) add(jobs []store.AddParams, datas [][]byte) ([]store.AddResult, error) {
	out := make([]store.AddResult, len(jobs))
	now := micros(w.now)
	seen := map[string]bool{}
	for i := range jobs {
		p := &jobs[i]
		if !seen[p.Type] {
			seen[p.Type] = true
			if err := w.registerType(p.Type); err != nil {
				return nil, err
			}
		}
		runAt := now
		if !p.RunAt.IsZero() {
			runAt = micros(p.RunAt)
		}
		if p.Key != "" {
			var id int64
			err := w.queryRow(`SELECT id FROM rota_jobs WHERE type = ? AND key = ?`, p.Type, p.Key).Scan(&id)
			if err == nil {
				r, _, err := w.load(id)
				if err != nil {
					return nil, err
				}
				res, err := w.readd(r, readd{
					runAt: runAt, data: datas[i], priority: &p.Priority, group: &p.Group,
					maxAttempts: p.MaxAttempts, base: p.BackoffBase, maxB: p.BackoffMax,
				})
				if err != nil {
					return nil, err
				}
				out[i] = res
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("sqlite: add: %w", err)
			}
		}
		var key any
		if p.Key != "" {
			key = p.Key
		}
		res, err := w.exec(`INSERT INTO rota_jobs (type, key, grp, priority, state, run_at, data, max_attempts,
			backoff_base, backoff_max, created_at, updated_at) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
			p.Type, key, p.Group, p.Priority, runAt, datas[i], p.MaxAttempts,
			p.BackoffBase.Microseconds(), p.BackoffMax.Microseconds(), now, now)
		if err != nil {
			return nil, fmt.Errorf("sqlite: add: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("sqlite: add: %w", err)
		}
		j := store.Job{
			ID: id, Type: p.Type, Key: p.Key, Group: p.Group, Priority: p.Priority, State: store.Pending,
			RunAt: fromMicros(runAt), Data: datas[i], MaxAttempts: p.MaxAttempts,
			BackoffBase: p.BackoffBase.Truncate(time.Microsecond), BackoffMax: p.BackoffMax.Truncate(time.Microsecond),
			CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now),
		}
		out[i] = store.AddResult{Job: j, Outcome: store.Inserted}
		w.changes = append(w.changes, store.Event{ID: id, Type: p.Type, Group: p.Group, State: store.Pending, RunAt: j.RunAt})
	}
	return out, nil
}

func (w *writeTx) registerType(name string) error {
	// Always write the row, even for a type already in memory: the memory
	// entry may come from a transaction that rolled back (a caller's AddTx,
	// or a failed request), and a type missing from rota_types is unknown
	// to patterns after a restart. The insert is a no-op when the row exists.
	if _, err := w.exec(`INSERT OR IGNORE INTO rota_types (name, lease_timeout, updated_at) VALUES (?, 0, ?)`, name, micros(w.now)); err != nil {
		return fmt.Errorf("sqlite: register type %q: %w", name, err)
	}
	w.s.typesMu.Lock()
	if _, ok := w.s.types[name]; !ok {
		w.s.types[name] = typeConfig{}
	}
	w.s.typesMu.Unlock()
	return nil
}

// readd holds what a re-add (by key) or resubmit (by id) asks for. Nil
// pointers and zero values keep what the job has.
type readd struct {
	runAt       int64 // 0: keep a pending job's run time; now otherwise
	data        []byte
	priority    *int
	group       *string
	maxAttempts int
	base, maxB  time.Duration
}

// readd is couch_jobs' resubmit, without its bugs: a pending job takes the
// new data and time; a running one is marked to run again when its worker
// ends; an ended one is pending again.
func (w *writeTx) readd(r row, a readd) (store.AddResult, error) {
	now := micros(w.now)
	var outcome store.Outcome
	var err error
	switch {
	case r.state == store.Pending || r.state == store.Paused:
		outcome = store.Updated
		runAt := r.runAt
		if a.runAt != 0 {
			runAt = a.runAt
		}
		_, err = w.exec(`UPDATE rota_jobs SET run_at = ?, data = coalesce(?, data), priority = coalesce(?, priority),
			grp = coalesce(?, grp), max_attempts = coalesce(?, max_attempts), backoff_base = coalesce(?, backoff_base),
			backoff_max = coalesce(?, backoff_max), updated_at = ? WHERE id = ?`,
			runAt, a.data, a.priority, a.group, nonZero(int64(a.maxAttempts)), nonZero(a.base.Microseconds()),
			nonZero(a.maxB.Microseconds()), now, r.id)
		if a.group != nil {
			r.grp = *a.group
		}
		w.changed(r, r.state, runAt)
	case r.state == store.Running:
		outcome = store.Resubmitted
		runAt := a.runAt
		if runAt == 0 {
			runAt = now
		}
		_, err = w.exec(`UPDATE rota_jobs SET resubmit = 1, resubmit_at = ?, next_data = coalesce(?, next_data), updated_at = ? WHERE id = ?`,
			runAt, a.data, now, r.id)
	default: // ended
		outcome = store.Requeued
		runAt := a.runAt
		if runAt == 0 {
			runAt = now
		}
		_, err = w.exec(`UPDATE rota_jobs SET state = 0, run_at = ?, data = coalesce(?, data), priority = coalesce(?, priority),
			grp = coalesce(?, grp), max_attempts = coalesce(?, max_attempts), backoff_base = coalesce(?, backoff_base),
			backoff_max = coalesce(?, backoff_max), attempt = 0, errors = NULL, last_error = NULL, result = NULL,
			progress = 0, finished_at = NULL, lease_until = NULL, cancel_requested = 0, updated_at = ? WHERE id = ?`,
			runAt, a.data, a.priority, a.group, nonZero(int64(a.maxAttempts)), nonZero(a.base.Microseconds()),
			nonZero(a.maxB.Microseconds()), now, r.id)
		if a.group != nil {
			r.grp = *a.group
		}
		w.changed(r, store.Pending, runAt)
	}
	if err != nil {
		return store.AddResult{}, fmt.Errorf("sqlite: re-add job %d: %w", r.id, err)
	}
	j, err := scanJob(w.queryRow(`SELECT `+jobColumns+` FROM rota_jobs WHERE id = ?`, r.id))
	if err != nil {
		return store.AddResult{}, fmt.Errorf("sqlite: re-add job %d: %w", r.id, err)
	}
	return store.AddResult{Job: j, Outcome: outcome}, nil
}

func nonZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// Resubmit asks for jobs to run again.
func (s *Store) Resubmit(ctx context.Context, ps []store.ResubmitParams) ([]store.AddResult, []error, error) {
	datas, err := store.CheckResubmits(ps)
	if err != nil {
		return nil, nil, err
	}
	out := make([]store.AddResult, len(ps))
	errs := make([]error, len(ps))
	err = s.write(ctx, true, func(w *writeTx) error {
		for i, p := range ps {
			r, found, err := w.load(p.ID)
			if err != nil {
				return err
			}
			if !found {
				errs[i] = fmt.Errorf("job %d: %w", p.ID, store.ErrNotFound)
				continue
			}
			var runAt int64
			if !p.RunAt.IsZero() {
				runAt = micros(p.RunAt)
			}
			if out[i], err = w.readd(r, readd{runAt: runAt, data: datas[i]}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, errs, nil
}

// Cancel cancels jobs that have not ended. A running job's worker learns
// of it on its next call, which fails with ErrCanceled.
func (s *Store) Cancel(ctx context.Context, ids []int64) ([]error, error) {
	if err := store.CheckIDs(ids); err != nil {
		return nil, err
	}
	errs := make([]error, len(ids))
	err := s.write(ctx, true, func(w *writeTx) error {
		now := micros(w.now)
		for i, id := range ids {
			r, found, err := w.load(id)
			if err != nil {
				return err
			}
			switch {
			case !found:
				errs[i] = fmt.Errorf("job %d: %w", id, store.ErrNotFound)
				continue
			case r.state == store.Cancelled:
				continue
			case r.state.Terminal():
				errs[i] = fmt.Errorf("job %d is %s: %w", id, r.state, store.ErrFinished)
				continue
			}
			if _, err := w.exec(`UPDATE rota_jobs SET state = 5, cancel_requested = ?, lease_until = NULL, resubmit = 0,
				finished_at = ?, updated_at = ? WHERE id = ?`, r.state == store.Running, now, now, id); err != nil {
				return fmt.Errorf("sqlite: cancel job %d: %w", id, err)
			}
			w.changed(r, store.Cancelled, r.runAt)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// Remove deletes jobs in any state.
func (s *Store) Remove(ctx context.Context, ids []int64) ([]error, error) {
	if err := store.CheckIDs(ids); err != nil {
		return nil, err
	}
	errs := make([]error, len(ids))
	err := s.write(ctx, true, func(w *writeTx) error {
		for i, id := range ids {
			r, found, err := w.load(id)
			if err != nil {
				return err
			}
			if !found {
				errs[i] = fmt.Errorf("job %d: %w", id, store.ErrNotFound)
				continue
			}
			if _, err := w.exec(`DELETE FROM rota_jobs WHERE id = ?`, id); err != nil {
				return fmt.Errorf("sqlite: remove job %d: %w", id, err)
			}
			w.changes = append(w.changes, store.Event{ID: id, Type: r.typ, Group: r.grp, State: r.state, Removed: true, Lease: store.LeaseTag(r.token)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// ---- worker side ----

// Accept leases due jobs to a worker, fairly across groups (accept.go).
func (s *Store) Accept(ctx context.Context, p store.AcceptParams) (store.AcceptResult, error) {
	pats, err := store.CheckAccept(&p)
	if err != nil {
		return store.AcceptResult{}, err
	}
	var res store.AcceptResult
	err = s.write(ctx, false, func(w *writeTx) error {
		var err error
		res, err = w.accept(p, s.resolve(pats))
		return err
	})
	return res, err
}

// Heartbeat extends leases and optionally updates data and progress.
func (s *Store) Heartbeat(ctx context.Context, ps []store.HeartbeatParams) ([]store.HeartbeatResult, error) {
	datas, err := store.CheckHeartbeats(ps)
	if err != nil {
		return nil, err
	}
	out := make([]store.HeartbeatResult, len(ps))
	durable := false
	for _, p := range ps {
		durable = durable || p.Data != nil
	}
	err = s.write(ctx, durable, func(w *writeTx) error {
		now := micros(w.now)
		for i, p := range ps {
			r, found, err := w.load(p.ID)
			if err != nil {
				return err
			}
			if err := fence(r, found, p.Token); err != nil {
				out[i].Err = err
				continue
			}
			lease := r.leaseLen
			if lease <= 0 {
				lease = w.s.leaseFor(r.typ, 0)
			}
			until := now + lease.Microseconds()
			var progress any
			if p.Progress != nil {
				progress = *p.Progress
			}
			if _, err := w.exec(`UPDATE rota_jobs SET lease_until = ?, data = coalesce(?, data), progress = coalesce(?, progress),
				updated_at = ? WHERE id = ?`, until, datas[i], progress, now, p.ID); err != nil {
				return fmt.Errorf("sqlite: heartbeat job %d: %w", p.ID, err)
			}
			out[i] = store.HeartbeatResult{LeaseUntil: fromMicros(until), Resubmit: r.resubmit}
			if p.Progress != nil || p.Data != nil {
				c := store.Event{ID: r.id, Type: r.typ, Group: r.grp, State: store.Running, Lease: store.LeaseTag(r.token)}
				if p.Progress != nil {
					c.Progress = *p.Progress
				}
				w.changes = append(w.changes, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Finish ends leases: complete, fail, snooze, release or cancel.
func (s *Store) Finish(ctx context.Context, ps []store.FinishParams) ([]error, error) {
	results, err := store.CheckFinishes(ps)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(ps))
	err = s.write(ctx, true, func(w *writeTx) error {
		done, err := w.completeMany(ps, results)
		if err != nil {
			return err
		}
		for i := range ps {
			if done != nil && done[i] {
				continue
			}
			if errs[i], err = w.finish(&ps[i], results[i]); err != nil {
				return err
			}
		}
		return nil
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
	results, err := store.CheckFinishes(ps)
	if err != nil {
		return nil, err
	}
	w := &writeTx{s: s, db: tx, now: s.cfg.Clock().UTC()}
	errs := make([]error, len(ps))
	for i := range ps {
		if errs[i], err = w.finish(&ps[i], results[i]); err != nil {
			return nil, err
		}
	}
	return errs, nil
}

// completeMany is the common case of finish in one statement: it completes
// every item that asks to complete a job that is running under the item's
// token and was not resubmitted meanwhile, and reports which items it
// handled (nil: none). The others (other endings, fencing failures,
// repeats, resubmits, ids that appear more than once) are left to finish,
// which classifies them; for a handled item, finish would have made
// exactly this update and reported exactly this change.
func (w *writeTx) completeMany(ps []store.FinishParams, results [][]byte) ([]bool, error) {
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
		if p.As != store.Complete || idx[p.ID] != i {
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
	rows, err := w.query(completeManyQuery, micros(w.now), micros(w.now), string(buf))
	if err != nil {
		return nil, fmt.Errorf("sqlite: finish: %w", err)
	}
	defer rows.Close()
	done := make([]bool, len(ps))
	ended := map[groupKey]int{}
	for rows.Next() {
		var id, runAt int64
		var typ, grp string
		if err := rows.Scan(&id, &typ, &grp, &runAt); err != nil {
			return nil, fmt.Errorf("sqlite: finish: %w", err)
		}
		i := idx[id]
		done[i] = true
		ended[groupKey{grp, typ}]++
		w.changes = append(w.changes, store.Event{ID: id, Type: typ, Group: grp, State: store.Completed,
			RunAt: fromMicros(runAt), Lease: store.LeaseTag(ps[i].Token)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: finish: %w", err)
	}
	rows.Close()
	// The statement flipped bulk, so the trigger did not count (0003).
	for k, n := range ended {
		if err := w.countBulk(k.typ, k.grp, 0, -n); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// countBulk adds to a group's counts for jobs moved by a statement that
// flipped their bulk column, which the update trigger does not count.
func (w *writeTx) countBulk(typ, grp string, pending, running int) error {
	if _, err := w.exec(`UPDATE rota_groups SET pending = pending + ?, running = running + ? WHERE type = ? AND grp = ?`,
		pending, running, typ, grp); err != nil {
		return fmt.Errorf("sqlite: count jobs of group %q: %w", grp, err)
	}
	return nil
}

// completeManyQuery completes in one statement. "+state" keeps SQLite from
// driving the join from the state index (which scans every running job
// for each item); each item is a rowid lookup. It flips bulk, so the
// caller counts the jobs (migration 0003).
const completeManyQuery = `UPDATE rota_jobs SET state = 3, result = unhex(j.value->>2), lease_until = NULL,
	finished_at = ?, updated_at = ?, bulk = NOT bulk
	FROM json_each(?) AS j
	WHERE rota_jobs.id = j.value->>0 AND rota_jobs.token = j.value->>1 AND +rota_jobs.state = 1 AND rota_jobs.resubmit = 0
	RETURNING rota_jobs.id, rota_jobs.type, rota_jobs.grp, rota_jobs.run_at`

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

// finish is the one fenced transition out of running. The first result is
// the item's own error (fencing), the second a failure of the store.
func (w *writeTx) finish(p *store.FinishParams, result []byte) (error, error) {
	r, found, err := w.load(p.ID)
	if err != nil {
		return nil, err
	}
	if found && r.state == store.Completed && r.token == p.Token && p.As == store.Complete {
		// Already completed by this lease (for example inside the
		// caller's transaction): the same finish again is a success.
		w.changed(r, store.Completed, r.runAt)
		return nil, nil
	}
	if err := fence(r, found, p.Token); err != nil {
		return err, nil
	}
	now := micros(w.now)
	var errText any
	if p.As == store.Fail || p.As == store.Cancel {
		errText = p.Error
		if p.Error == "" {
			errText = p.As.String()
		}
	}
	if r.resubmit && p.As != store.Cancel {
		return nil, w.runAgain(r)
	}
	switch p.As {
	case store.Complete:
		_, err = w.exec(`UPDATE rota_jobs SET state = 3, result = ?, lease_until = NULL, finished_at = ?, updated_at = ?
			WHERE id = ?`, result, now, now, r.id)
		w.changed(r, store.Completed, r.runAt)
	case store.Fail:
		if !p.Permanent && r.attempt < r.maxAttempts {
			runAt := now + store.Backoff(r.base, r.maxB, r.attempt).Microseconds()
			err = w.failTo(r, store.Pending, runAt, errText)
		} else {
			err = w.failTo(r, store.Failed, r.runAt, errText)
		}
	case store.Snooze, store.Release:
		// A released job is due at once; it keeps an earlier run_at, and
		// with it its place in the queue.
		runAt := min(r.runAt, now)
		if p.As == store.Snooze {
			runAt = now
			if !p.RunAt.IsZero() {
				runAt = micros(p.RunAt)
			}
		}
		_, err = w.exec(`UPDATE rota_jobs SET state = 0, run_at = ?, attempt = max(attempt - 1, 0), lease_until = NULL,
			updated_at = ? WHERE id = ?`, runAt, now, r.id)
		w.changed(r, store.Pending, runAt)
	case store.Cancel:
		_, err = w.exec(`UPDATE rota_jobs SET state = 5, last_error = ?, lease_until = NULL, resubmit = 0,
			finished_at = ?, updated_at = ? WHERE id = ?`, errText, now, now, r.id)
		w.changed(r, store.Cancelled, r.runAt)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: finish job %d: %w", r.id, err)
	}
	return nil, nil
}

// failTo records an attempt's error and moves the job to pending (a retry
// at runAt) or failed.
func (w *writeTx) failTo(r row, state store.State, runAt int64, errText any) error {
	now := micros(w.now)
	var finished any
	if state == store.Failed {
		finished = now
	}
	_, err := w.exec(`UPDATE rota_jobs SET state = ?, run_at = ?, last_error = ?,
		errors = json_insert(coalesce(errors, '[]'), '$[#]', json_object('attempt', attempt, 'at', ?, 'error', ?)),
		lease_until = NULL, finished_at = ?, updated_at = ? WHERE id = ?`,
		int(state), runAt, errText, w.now.Format(time.RFC3339Nano), errText, finished, now, r.id)
	w.changed(r, state, runAt)
	return err
}

// runAgain ends a run whose job was resubmitted meanwhile: it is pending
// again at the requested time, with the requested data, as a new cycle.
func (w *writeTx) runAgain(r row) error {
	now := micros(w.now)
	runAt := now
	if r.resubmitAt.Valid {
		runAt = r.resubmitAt.Int64
	}
	_, err := w.exec(`UPDATE rota_jobs SET state = 0, run_at = ?, data = coalesce(next_data, data), next_data = NULL,
		resubmit = 0, resubmit_at = NULL, attempt = 0, result = NULL, last_error = NULL, errors = NULL, progress = 0,
		lease_until = NULL, updated_at = ? WHERE id = ?`, runAt, now, r.id)
	if err != nil {
		return fmt.Errorf("sqlite: requeue job %d: %w", r.id, err)
	}
	w.changed(r, store.Pending, runAt)
	return nil
}

// ExpireLeases takes back running jobs whose lease ended before now.
func (s *Store) ExpireLeases(ctx context.Context, now time.Time) (int, time.Time, error) {
	var n int
	var next time.Time
	err := s.write(ctx, true, func(w *writeTx) error {
		n, next = 0, time.Time{}
		rows, err := w.query(`SELECT id FROM rota_jobs WHERE state = 1 AND lease_until < ? ORDER BY lease_until LIMIT 1000`, micros(now))
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
		for _, id := range ids {
			r, found, err := w.load(id)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			const reason = "lease expired: no heartbeat within the lease timeout"
			switch {
			case r.resubmit:
				err = w.runAgain(r)
			case r.attempt < r.maxAttempts:
				err = w.failTo(r, store.Pending, micros(w.now), reason)
			default:
				err = w.failTo(r, store.Failed, r.runAt, reason)
			}
			if err == nil {
				// The expired lease is dead: no finish with its token may be
				// taken for a repeat of an earlier one.
				_, err = w.exec(`UPDATE rota_jobs SET token = NULL WHERE id = ?`, id)
			}
			if err != nil {
				return fmt.Errorf("sqlite: expire job %d: %w", id, err)
			}
			n++
		}
		var v sql.NullInt64
		if err := w.queryRow(`SELECT min(lease_until) FROM rota_jobs WHERE state = 1`).Scan(&v); err != nil {
			return err
		}
		if v.Valid {
			next = fromMicros(v.Int64)
		}
		return nil
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("sqlite: expire leases: %w", err)
	}
	return n, next, nil
}
