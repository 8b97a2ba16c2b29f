package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// This file is PostgreSQL's side of internal/engine, which runs every job
// operation: txn is engine.Tx. It locks the rows an operation concerns
// (FOR UPDATE, in id order, so that concurrent batches cannot deadlock)
// and applies each plan with the statement for its kind (Apply), moving a
// job to jobs_ended when it ends and back when it is revived. The hot
// paths (add, accept, heartbeat, complete) are set-based statements over
// arrays whose conditions are the rules' preconditions.
//
// Plans are timed by the transaction's now() (txn.Now), the time every
// statement of the transaction writes, so a plan's times and the
// database's agree.

const rowColumns = `id, type, grp, state, coalesce(token, ''), attempt, max_attempts, backoff_base, backoff_max,
	resubmit, resubmit_at, run_at, coalesce(repeat, ''), missed, slot, started_at, coalesce(retry_after, 0), lease_until,
	coalesce(parent_id, 0), has_children, coalesce(run_limit, run_timeout, 0), expires_at, has_deps, deps_waiting, dep_policy, has_dependants, coalesce(batch_id, 0), now()`

// Lock locks and reads the jobs with these ids (engine.Tx). A job moving between the
// hot and the ended table while this waits for its lock is looked for
// again in the other table, so a job that exists is always found.
func (t *txn) Lock(ids []int64) (map[int64]*lifecycle.Row, error) {
	want := slices.Clone(ids)
	slices.Sort(want)
	want = slices.Compact(want)
	found := make(map[int64]*lifecycle.Row, len(want))
	for pass := range 3 {
		if len(want) == 0 {
			break
		}
		var rs []*lifecycle.Row
		var err error
		if pass == 1 {
			rs, err = t.readRows(&t.at, "lock_ended", want)
		} else {
			rs, err = t.readRows(&t.at, "lock_hot", want)
		}
		if err != nil {
			return nil, fmt.Errorf("lock jobs: %w", err)
		}
		for _, x := range rs {
			found[x.ID] = x
		}
		want = slices.DeleteFunc(want, func(id int64) bool { return found[id] != nil })
	}
	return found, nil
}

// readRows runs the named statement, of rowColumns, and reads its rows
// (scanRows).
func (t *txn) readRows(at *time.Time, name string, args ...any) ([]*lifecycle.Row, error) {
	r, err := t.rows(name, args...)
	return scanRows(r, err, at)
}

// scanRows reads rows of rowColumns. Their last column is the
// transaction's now(), kept in at when at is not nil, so that a
// transaction that reads its rows knows its time without asking for it
// (txn.Now).
func scanRows(r rows, err error, at *time.Time) ([]*lifecycle.Row, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []*lifecycle.Row
	for r.Next() {
		x := new(lifecycle.Row)
		var state int16
		var attempt, maxAttempts, base, maxB int64
		var resubmitAt, slot, started, leaseUntil, expiresAt sql.NullTime
		var missed int16
		var retryAfter, timeout int64
		var depsWaiting int32
		var depPolicy int16
		var now time.Time
		if err := r.Scan(&x.ID, &x.Type, &x.Group, &state, &x.Token, &attempt, &maxAttempts,
			&base, &maxB, &x.Resubmit, &resubmitAt, &x.RunAt, &x.Schedule, &missed, &slot, &started, &retryAfter, &leaseUntil,
			&x.Parent, &x.HasChildren, &timeout, &expiresAt, &x.HasDeps, &depsWaiting, &depPolicy, &x.HasDependants, &x.Batch, &now); err != nil {
			return nil, err
		}
		if at != nil && at.IsZero() {
			*at = now.UTC()
		}
		x.State = store.State(state)
		x.Attempt, x.MaxAttempts = int(attempt), int(maxAttempts)
		x.BackoffBase, x.BackoffMax = time.Duration(base)*time.Microsecond, time.Duration(maxB)*time.Microsecond
		x.RunAt, x.ResubmitAt = x.RunAt.UTC(), nullTime(resubmitAt)
		x.Missed, x.Slot, x.StartedAt = store.Missed(missed), nullTime(slot), nullTime(started)
		x.RetryAfter, x.LeaseUntil = time.Duration(retryAfter)*time.Microsecond, nullTime(leaseUntil)
		x.Timeout = time.Duration(timeout) * time.Microsecond
		x.ExpiresAt = nullTime(expiresAt)
		x.DepsWaiting, x.DepPolicy = int(depsWaiting), store.DepPolicy(depPolicy)
		out = append(out, x)
	}
	return out, r.Err()
}

func us(d time.Duration) int64 { return d.Microseconds() }

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ---- producer side ----

// Add adds jobs, or re-adds existing ones by (type, group, key).
func (s *Store) Add(ctx context.Context, jobs []store.AddParams) ([]store.AddResult, error) {
	jobs, datas, err := check.Adds(jobs)
	if err != nil {
		return nil, err
	}
	newTypes := s.unknownTypes(jobs)
	var out []store.AddResult
	run := func(t *txn) error {
		var err error
		if out, err = t.add(jobs, datas, newTypes); err != nil {
			return err
		}
		return withBedrockIDs(jobs, out, t.bedrockIDs)
	}
	if slices.ContainsFunc(jobs, func(p store.AddParams) bool {
		return p.Key != "" || p.Unique || p.UniqueFor > 0 || p.Parent != 0 || p.BedrockID || len(p.After) > 0 || len(p.AfterKeys) > 0 || p.Batch != 0
	}) {
		if err := s.inTx(ctx, "add", run); err != nil {
			return nil, err
		}
		return out, nil
	}
	if s.closed.Load() {
		return nil, s.wrap("add", store.ErrClosed)
	}
	return s.addBatched(ctx, jobs, datas, newTypes) // one INSERT, shared with concurrent adds
}

// AddTx adds jobs inside the caller's database/sql transaction on this
// database (for example one begun on DB()), so that they exist only if it
// commits. Other nodes, and this one's acceptors, learn of them by a
// notification that PostgreSQL delivers when, and only if, it commits.
func (s *Store) AddTx(ctx context.Context, tx *sql.Tx, jobs []store.AddParams) ([]store.AddResult, error) {
	return s.addIn(ctx, sqlDB{tx}, jobs)
}

// AddPgxTx is AddTx for a pgx transaction, such as one begun on Pool().
func (s *Store) AddPgxTx(ctx context.Context, tx pgx.Tx, jobs []store.AddParams) ([]store.AddResult, error) {
	return s.addIn(ctx, pgxDB{tx}, jobs)
}

func (s *Store) addIn(ctx context.Context, d db, jobs []store.AddParams) ([]store.AddResult, error) {
	jobs, datas, err := check.Adds(jobs)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, s.wrap("add", store.ErrClosed)
	}
	t := &txn{s: s, ctx: ctx, db: d, user: true, deferCounts: true}
	// Every type of the batch is (re)registered: the known types must only
	// hold committed names, and this transaction may roll back.
	var types []string
	for _, j := range jobs {
		types = append(types, j.Type)
	}
	slices.Sort(types)
	out, err := t.add(jobs, datas, slices.Compact(types))
	if err == nil {
		err = withBedrockIDs(jobs, out, t.bedrockIDs)
	}
	if err == nil {
		err = t.flushCounts()
	}
	if err == nil {
		err = t.notifyInTx()
	}
	if err != nil {
		return nil, s.wrap("add", err)
	}
	return out, nil
}

// typeKey is what a key is unique within: a type and a group.
type typeKey struct{ typ, grp, key string }

func (t *txn) add(jobs []store.AddParams, datas [][]byte, newTypes []string) ([]store.AddResult, error) {
	if slices.ContainsFunc(jobs, func(p store.AddParams) bool {
		return p.Unique || p.UniqueFor > 0 || p.Debounce > 0 || p.Parent != 0 || len(p.After) > 0 || len(p.AfterKeys) > 0
	}) {
		return t.addInTurn(jobs, datas, newTypes)
	}
	out := make([]store.AddResult, len(jobs))
	// Items with a key that exists, or that an earlier item of the batch
	// inserts, re-add that job; the others are inserted.
	existing, err := t.lockKeys(jobs)
	if err != nil {
		return nil, err
	}
	// Lock the jobs that hold the keys, all at once and in id order (as
	// every transition does), before anything else: removals do not take
	// the key locks, so a job found by its key may be gone by now; then
	// its key is free, and the key lock keeps it free for this add.
	held := map[int64]*lifecycle.Row{}
	if len(existing) > 0 {
		ids := make([]int64, 0, len(existing))
		for _, id := range existing {
			ids = append(ids, id)
		}
		if held, err = t.Lock(ids); err != nil {
			return nil, err
		}
		for k, id := range existing {
			if held[id] == nil {
				delete(existing, k)
			}
		}
	}
	if err := engine.JoinBatches(t, jobs, store.ReachOf(t.ctx)); err != nil {
		return nil, err
	}
	target := make([]int64, len(jobs))   // the job an item re-adds
	insertedBy := make([]int, len(jobs)) // or the earlier item whose insert it re-adds, plus one
	first := map[typeKey]int{}
	var ins []int
	for i, p := range jobs {
		if p.Key != "" {
			k := typeKey{p.Type, p.Group, p.Key}
			if id, ok := existing[k]; ok {
				target[i] = id
				continue
			}
			if j, ok := first[k]; ok {
				insertedBy[i] = j + 1
				continue
			}
			first[k] = i
		}
		ins = append(ins, i)
	}
	if err := t.insert(jobs, datas, ins, newTypes, out, nil); err != nil {
		return nil, err
	}
	for i, p := range jobs {
		id := target[i]
		if insertedBy[i] > 0 {
			id = out[insertedBy[i]-1].Job.ID
		}
		if id == 0 {
			continue
		}
		r := held[id]
		if r == nil { // inserted by an earlier item of this batch
			rs, err := t.Lock([]int64{id})
			if err != nil {
				return nil, err
			}
			if r = rs[id]; r == nil {
				return nil, fmt.Errorf("job %d with key %q vanished", id, p.Key)
			}
			held[id] = r
		}
		if out[i], err = engine.Readd(t, r, &jobs[i], datas[i]); err != nil {
			return nil, err
		}
		delete(held, id) // an item after this one reads it as this one left it
	}
	if err := engine.Joined(t, jobs, out); err != nil {
		return nil, err
	}
	if !t.user {
		t.after = append(t.after, func() { t.s.addTypes(newTypes) })
	}
	return out, nil
}

// addInTurn adds a batch with unique adds or children one item at a time
// (engine.Add), so that each finds what the items before it added. They
// are rare, and each takes a lock anyway. The batch's new types are
// registered first, as the batched insert does.
func (t *txn) addInTurn(jobs []store.AddParams, datas [][]byte, newTypes []string) ([]store.AddResult, error) {
	if err := t.insert(nil, nil, nil, newTypes, nil, nil); err != nil {
		return nil, err
	}
	if !t.user {
		t.after = append(t.after, func() { t.s.addTypes(newTypes) })
	}
	return engine.Add(t, jobs, datas, store.ReachOf(t.ctx))
}

// KeyHolder finds the job that holds p's key in its type and group
// (engine.Inserter), under the key's lock (lockKeys).
func (t *txn) KeyHolder(p *store.AddParams) (int64, bool, error) {
	existing, err := t.lockKeys([]store.AddParams{*p})
	if err != nil {
		return 0, false, err
	}
	id, ok := existing[typeKey{p.Type, p.Group, p.Key}]
	return id, ok, nil
}

// Insert inserts one job in state (engine.Inserter).
func (t *txn) Insert(p *store.AddParams, data []byte, state store.State) (store.AddResult, error) {
	out := make([]store.AddResult, 1)
	if err := t.insert([]store.AddParams{*p}, [][]byte{data}, []int{0}, nil, out, []int16{int16(state)}); err != nil {
		return store.AddResult{}, err
	}
	return out[0], nil
}

// FindUnique finds the job a unique add of p's type and group finds
// (engine.Tx). A transaction-level lock per type and group serialises
// unique adds of a type in a group across nodes, so that two cannot both
// find none and insert.
func (t *txn) FindUnique(p *store.AddParams) (int64, bool, error) {
	if _, err := t.run("lock_unique", hash64("unique", t.s.cfg.Schema, p.Type, p.Group)); err != nil {
		return 0, false, fmt.Errorf("lock unique type %q in group %q: %w", p.Type, p.Group, err)
	}
	var id int64
	found, err := t.row("unique", []any{p.Type, p.Group}, &id)
	return id, found, err
}

// SameData finds the jobs of p's type and group with data created after
// since (engine.Inserter), in either table. A transaction-level lock on
// (type, group, data) serialises such adds across nodes, so that two
// cannot both find none and insert; adds of other data go on beside.
func (t *txn) SameData(p *store.AddParams, data []byte, since time.Time) ([]int64, error) {
	if _, err := t.run("lock_unique", hash64("unique_for", t.s.cfg.Schema, p.Type, p.Group, string(data))); err != nil {
		return nil, fmt.Errorf("lock unique window of type %q in group %q: %w", p.Type, p.Group, err)
	}
	rs, err := t.rows("same_data", p.Type, p.Group, data, since)
	if err != nil {
		return nil, fmt.Errorf("find jobs of type %q in group %q with the same data: %w", p.Type, p.Group, err)
	}
	defer rs.Close()
	var ids []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rs.Err()
}

// Job reads job id as it now is (engine.Tx).
func (t *txn) Job(id int64) (store.Job, error) {
	jobs, err := scanJobs(t.rows("job", id))
	if err != nil || len(jobs) != 1 {
		return store.Job{}, cmp.Or(err, fmt.Errorf("job %d vanished", id))
	}
	return jobs[0], nil
}

// lockKeys serialises adds of the same (type, group, key) across nodes with
// transaction-level advisory locks (taken in one order, so adds cannot
// deadlock), then finds the jobs that hold those keys. The unique indexes
// of each table back this up; the lock is what makes "look in both tables,
// then insert or re-add" safe against a concurrent add of the same key.
func (t *txn) lockKeys(jobs []store.AddParams) (map[typeKey]int64, error) {
	var locks []int64
	var types, grps, keys []string
	for _, p := range jobs {
		if p.Key != "" {
			locks = append(locks, hash64("key", t.s.cfg.Schema, p.Type, p.Group, p.Key))
			types, grps, keys = append(types, p.Type), append(grps, p.Group), append(keys, p.Key)
		}
	}
	if len(locks) == 0 {
		return nil, nil
	}
	slices.Sort(locks)
	if _, err := t.run("lock_keys", slices.Compact(locks)); err != nil {
		return nil, fmt.Errorf("lock keys: %w", err)
	}
	r, err := t.rows("find_keys", types, grps, keys)
	if err != nil {
		return nil, fmt.Errorf("find keys: %w", err)
	}
	defer r.Close()
	out := map[typeKey]int64{}
	for r.Next() {
		var k typeKey
		var id int64
		if err := r.Scan(&k.typ, &k.grp, &k.key, &id); err != nil {
			return nil, fmt.Errorf("find keys: %w", err)
		}
		out[k] = id
	}
	return out, r.Err()
}

// insert inserts the items ins of jobs; states gives each item's state
// (pending when nil: only children start otherwise).
func (t *txn) insert(jobs []store.AddParams, datas [][]byte, ins []int, newTypes []string, out []store.AddResult, states []int16) error {
	if len(ins) == 0 {
		if len(newTypes) > 0 {
			_, err := t.run("add_types", newTypes)
			return err
		}
		return nil
	}
	n := len(ins)
	types, grps := make([]string, n), make([]string, n)
	keys := make([]*string, n)
	prios, maxAtts, bases, maxBs := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	runAts := make([]*time.Time, n)
	ds := make([][]byte, n)
	metas := make([]*string, n)
	repeats, misseds, retryAfters := make([]*string, n), make([]int16, n), make([]int64, n)
	if states == nil {
		states = make([]int16, n)
	}
	parents, timeouts := make([]int64, n), make([]int64, n)
	deadlines := make([]*time.Time, n)
	uniqueFors, debounces, batches := make([]int64, n), make([]int64, n), make([]int64, n)
	for k, i := range ins {
		p := &jobs[i]
		repeats[k], misseds[k], retryAfters[k], parents[k] = optString(p.Schedule), int16(p.Missed), us(p.RetryAfter), p.Parent
		timeouts[k], deadlines[k] = us(p.Timeout), optTime(p.ExpiresAt)
		uniqueFors[k], debounces[k], batches[k] = us(p.UniqueFor), us(p.Debounce), p.Batch
		if err := engine.FirstRun(t, p); err != nil {
			return err
		}
		if m := backend.MetaJSON(p.Meta); m != nil {
			v := string(m)
			metas[k] = &v
		}
		types[k], keys[k], grps[k], prios[k] = p.Type, optString(p.Key), p.Group, int64(p.Priority)
		runAts[k], ds[k] = optTime(p.RunAt), datas[i]
		maxAtts[k], bases[k], maxBs[k] = int64(p.MaxAttempts), us(p.BackoffBase), us(p.BackoffMax)
	}
	if newTypes == nil {
		newTypes = []string{}
	}
	args := []any{newTypes, types, keys, grps, prios, runAts, ds, maxAtts, bases, maxBs, metas, repeats, misseds, retryAfters, states, parents, timeouts, deadlines,
		uniqueFors, debounces, batches}
	var r rows
	var err error
	if t.deferCounts {
		for k := range n {
			if states[k] == int16(store.Pending) {
				t.count(types[k], grps[k], 1)
			}
		}
		r, err = t.rows("insert", args...)
	} else {
		r, err = t.rows("insert_counted", args...)
	}
	if err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	defer r.Close()
	k := 0
	for r.Next() {
		if k == n {
			return fmt.Errorf("insert: more rows returned than inserted")
		}
		var id int64
		var runAt, created time.Time
		if err := r.Scan(&id, &runAt, &created); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		p := &jobs[ins[k]]
		j := store.Job{
			ID: id, Type: p.Type, Key: p.Key, Group: p.Group, Priority: p.Priority, State: store.State(states[k]), Parent: p.Parent,
			RunAt: runAt.UTC(), Data: ds[k], MaxAttempts: p.MaxAttempts, Meta: p.Meta,
			BackoffBase: p.BackoffBase.Truncate(time.Microsecond), BackoffMax: p.BackoffMax.Truncate(time.Microsecond),
			CreatedAt: created.UTC(), UpdatedAt: created.UTC(), Schedule: p.Schedule, Missed: p.Missed,
			RetryAfter: p.RetryAfter, Timeout: p.Timeout, ExpiresAt: p.ExpiresAt,
			UniqueFor: p.UniqueFor.Truncate(time.Microsecond), Debounce: p.Debounce.Truncate(time.Microsecond), Batch: p.Batch,
		}
		if p.Schedule != "" {
			j.Slot = j.RunAt
		}
		out[ins[k]] = store.AddResult{Job: j, Outcome: store.Inserted}
		t.changed(store.Event{ID: id, Type: p.Type, Group: p.Group, State: j.State, RunAt: j.RunAt})
		k++
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	if k != n {
		return fmt.Errorf("insert: %d rows returned for %d jobs", k, n)
	}
	return nil
}

// Resubmit asks for jobs to run again.
func (s *Store) Resubmit(ctx context.Context, ps []store.ResubmitParams) ([]store.AddResult, []error, error) {
	datas, err := check.Resubmits(ps)
	if err != nil {
		return nil, nil, err
	}
	var out []store.AddResult
	var errs []error
	err = s.inTx(ctx, "resubmit", func(t *txn) error {
		var err error
		out, errs, err = engine.Resubmit(t, ps, datas, engine.CallerOf(ctx))
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
	return s.decide(ctx, "cancel", ids, engine.Cancel)
}

// Remove deletes jobs in any state.
func (s *Store) Remove(ctx context.Context, ids []int64) ([]error, error) {
	if err := check.IDs(ids); err != nil {
		return nil, err
	}
	return s.decide(ctx, "remove", ids, engine.Remove)
}

// decide runs a producer's operation on jobs by id (engine.Cancel,
// engine.Remove) in one transaction, with per-item errors.
func (s *Store) decide(ctx context.Context, op string, ids []int64, run func(engine.Tx, []int64, engine.Caller) ([]error, error)) ([]error, error) {
	var errs []error
	err := s.inTx(ctx, op, func(t *txn) error {
		var err error
		errs, err = run(t, ids, engine.CallerOf(ctx))
		return err
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// ---- worker side ----

// Batched statements find their rows by primary key (id = ANY) and look
// each row's own values up in JSON objects keyed by id ($n::jsonb ->>
// id), rather than joining the input: a join would leave the plan to
// estimates, and on a table whose rows live for seconds the statistics are
// always stale (they may say no job runs while thousands do), which turns
// a join into a scan of every running job per input row. For the same
// reason they test the state as j.state + 0 = 1, which no partial index's
// predicate matches: written plainly, the planner ANDs the primary key
// with the bitmap of jobs_running (WHERE state = 1), which it believes
// tiny, and reads every running job's entry (dead ones included) per
// statement: a completion of 250 jobs read 32,000 entries of it, about a
// quarter of the database's CPU in a drain.

// Heartbeat extends leases and optionally updates data and progress.
func (s *Store) Heartbeat(ctx context.Context, ps []store.HeartbeatParams) ([]store.HeartbeatResult, error) {
	datas, err := check.Heartbeats(ps)
	if err != nil {
		return nil, err
	}
	out := make([]store.HeartbeatResult, len(ps))
	// Items for the same job run one after the other, as if sent apart.
	// Data that is not UTF-8 cannot travel in a JSON map; such items go
	// one by one.
	var batch, single []int
	for i := range ps {
		if utf8.Valid(datas[i]) {
			batch = append(batch, i)
		} else {
			single = append(single, i)
		}
	}
	for _, round := range rounds(len(batch), func(k int) int64 { return ps[batch[k]].ID }) {
		for k := range round {
			round[k] = batch[round[k]]
		}
		if err := s.heartbeat(ctx, ps, datas, round, out); err != nil {
			return nil, err
		}
	}
	for _, i := range single {
		if err := s.heartbeat(ctx, ps, datas, []int{i}, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pgText reports whether s can be a PostgreSQL text value (valid UTF-8, no
// NUL). A token that cannot is never current: it is fenced without asking
// the database.
func pgText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// cleanText makes free text (error messages, worker names) storable as
// PostgreSQL text.
func cleanText(s string) string {
	if pgText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// rounds splits the items 0..n-1 into runs in which no id repeats, keeping
// their order, so that set-based statements see each job once.
func rounds(n int, id func(int) int64) [][]int {
	var out [][]int
	seen := map[int64]bool{}
	start := 0
	for i := 0; i < n; i++ {
		if seen[id(i)] {
			out = append(out, seq(start, i))
			clear(seen)
			start = i
		}
		seen[id(i)] = true
	}
	if start < n {
		out = append(out, seq(start, n))
	}
	return out
}

func seq(from, to int) []int {
	s := make([]int, to-from)
	for i := range s {
		s[i] = from + i
	}
	return s
}

func (s *Store) heartbeat(ctx context.Context, ps []store.HeartbeatParams, datas [][]byte, items []int, out []store.HeartbeatResult) error {
	n := len(items)
	ids, tokens := make([]int64, n), make([]string, n)
	tokenMap, dataMap, progressMap := newIDMap(), newIDMap(), newIDMap()
	durable := false
	var oneData []byte // the data of a lone item that is not UTF-8
	for k, i := range items {
		p := ps[i]
		ids[k], tokens[k] = p.ID, p.Token
		if !pgText(p.Token) {
			continue
		}
		tokenMap.add(p.ID, []byte(p.Token))
		if !utf8.Valid(datas[i]) {
			oneData = datas[i]
		} else if datas[i] != nil {
			dataMap.add(p.ID, datas[i])
		}
		if p.Progress != nil {
			progressMap.add(p.ID, strconv.AppendFloat(nil, *p.Progress, 'g', -1, 64))
		}
		durable = durable || p.Data != nil
	}
	// Without data, losing the heartbeat in a database crash only ends the
	// lease early, so it need not wait for the WAL flush; data that is not
	// UTF-8 is one item's, sent as itself.
	args := []any{ids, tokenMap.json(), dataMap.json(), progressMap.json(), us(store.DefaultLeaseTimeout)}
	if oneData != nil {
		args[2] = oneData
	}
	done := map[int64]bool{}
	err := s.autocommit(ctx, "heartbeat", func(t *txn) error {
		var r rows
		var err error
		switch {
		case oneData != nil:
			r, err = t.rows("heartbeat_bytes", args...)
		case durable:
			r, err = t.rows("heartbeat", args...)
		default:
			r, err = t.rows("heartbeat_async", args...)
		}
		if err != nil {
			return err
		}
		defer r.Close()
		byID := map[int64]store.HeartbeatResult{}
		types := map[int64][2]string{}
		for r.Next() {
			var id int64
			var res store.HeartbeatResult
			var typ, grp string
			if err := r.Scan(&id, &res.LeaseUntil, &res.Resubmit, &typ, &grp); err != nil {
				return err
			}
			res.LeaseUntil = res.LeaseUntil.UTC()
			byID[id] = res
			types[id] = [2]string{typ, grp}
		}
		if err := r.Err(); err != nil {
			return err
		}
		for k, i := range items {
			res, ok := byID[ids[k]]
			if !ok {
				continue
			}
			out[i] = res
			done[ids[k]] = true
			if p := &ps[i]; p.Progress != nil || p.Data != nil {
				t.changed(lifecycle.HeartbeatEvent(p.ID, types[p.ID][0], types[p.ID][1], p))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(done) == n {
		return nil
	}
	// The others failed the fence; say why.
	var failed []int64
	for _, id := range ids {
		if !done[id] {
			failed = append(failed, id)
		}
	}
	rs, err := s.peek(ctx, "heartbeat", failed)
	if err != nil {
		return err
	}
	for k, i := range items {
		if !done[ids[k]] {
			out[i].Err = engine.Fenced(ids[k], rs[ids[k]], tokens[k])
		}
	}
	return nil
}

// peek reads jobs without locking them, to explain a failed fence.
func (s *Store) peek(ctx context.Context, op string, ids []int64) (map[int64]*lifecycle.Row, error) {
	out := map[int64]*lifecycle.Row{}
	err := s.read(ctx, op, func(t *txn) error {
		rs, err := t.readRows(nil, "peek_rows", ids)
		for _, x := range rs {
			out[x.ID] = x
		}
		return err
	})
	return out, err
}

// Finish ends leases: complete, fail, snooze, release or cancel.
func (s *Store) Finish(ctx context.Context, ps []store.FinishParams) ([]error, error) {
	results, err := check.Finishes(ps)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(ps))
	rest := seq(0, len(ps))
	// The common case, completions of running jobs, is one statement;
	// whatever it leaves (other endings, repeats, stale tokens, resubmitted
	// jobs) takes the general path in a transaction. (With a job named
	// twice in the batch, all of it takes the general path, which applies
	// the items in order.)
	fast := len(rounds(len(ps), func(i int) int64 { return ps[i].ID })) == 1
	if fast {
		if rest, err = s.completeFast(ctx, ps, results); err != nil {
			return nil, err
		}
		if len(rest) == 0 {
			return errs, nil
		}
	}
	err = s.inTx(ctx, "finish", func(t *txn) error {
		// Completions of jobs with dependants and of batch members are
		// set-based too, in this transaction (deps.go), which counts
		// them in their batches last.
		items, ended, batches := rest, []int64(nil), map[int64]int64(nil)
		if fast {
			var err error
			if items, ended, batches, err = t.completeWorkflow(ps, results, rest); err != nil {
				return err
			}
		}
		if err := engine.Finish(t, ps, results, items, errs, ended...); err != nil {
			return err
		}
		return engine.BatchesCompleted(t, batches)
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// hotPlanSQL sets the planner's settings for the hot statements (which
// find jobs by id or from the front of an index), for the implicit
// transaction of their batch or for their transaction: it keeps
// PostgreSQL from planning a sequential scan of rota.jobs for them. The table holds only live jobs, so under a steady
// flow it is a few rows in pages that held thousands since autovacuum's
// last pass (once a minute at most); the planner, which prices an index
// probe by the index's pages per live row, then takes reading every page
// for cheaper than a probe, and each claim and completion read a
// thousand pages where they need a dozen (measured: 17 ms instead of
// 0.2 ms per claim after a few minutes at 500 jobs/s). An index path
// costs the same few pages however bloated the table is.
//
// It also has them planned once, generically: PostgreSQL otherwise plans
// some of them anew at each call, which for nextRunSQL took 0.12 ms to
// run a statement of 0.01 ms (the index each uses does not depend on its
// arguments). And it turns JIT compilation off for them: with 10 million
// jobs queued the claim's estimated cost passes jit_above_cost, and
// compiling it took 83 ms of a claim that runs in 4.
const hotPlanSQL = `SELECT set_config('enable_seqscan', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('jit', 'off', true)`

// completeFast runs completeSQL and returns the items it did not complete.
func (s *Store) completeFast(ctx context.Context, ps []store.FinishParams, results [][]byte) ([]int, error) {
	var ids []int64
	tokens, res := newIDMap(), newIDMap()
	byID := map[int64]string{}
	for i, p := range ps {
		if p.As != store.Complete || !p.Plain() || !utf8.Valid(results[i]) || !pgText(p.Token) { // the general path takes it
			continue
		}
		ids = append(ids, p.ID)
		byID[p.ID] = p.Token
		tokens.add(p.ID, []byte(p.Token))
		if results[i] != nil {
			res.add(p.ID, results[i])
		}
	}
	done := map[int64]bool{}
	if len(ids) == 0 {
		return seq(0, len(ps)), nil
	}
	err := s.autocommit(ctx, "finish", func(t *txn) error {
		b := &pgx.Batch{}
		b.Queue(hotPlanSQL)
		b.Queue(s.stmt("complete"), ids, tokens.json(), res.json())
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		r, err := br.Query()
		if err != nil {
			return err
		}
		defer r.Close()
		t.changes = slices.Grow(t.changes, len(ids))
		var id int64
		var typ, grp string
		var runAt time.Time
		for r.Next() {
			if err := r.Scan(&id, &typ, &grp, &runAt); err != nil {
				return err
			}
			done[id] = true
			t.changed(lifecycle.CompletedEvent(id, typ, grp, runAt.UTC(), byID[id]))
		}
		if err := r.Err(); err != nil {
			return err
		}
		// The batch's commit comes after its rows: done only once it has.
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	var rest []int
	for i, p := range ps {
		if !done[p.ID] {
			rest = append(rest, i)
		}
	}
	return rest, nil
}

// idMap builds a JSON object from job ids to strings, for the batched
// statements' per-row lookups.
type idMap struct{ buf []byte }

func newIDMap() *idMap { return &idMap{buf: []byte{'{'}} }

func (m *idMap) add(id int64, value []byte) {
	if len(m.buf) > 1 {
		m.buf = append(m.buf, ',')
	}
	m.buf = append(m.buf, '"')
	m.buf = strconv.AppendInt(m.buf, id, 10)
	m.buf = append(m.buf, '"', ':')
	m.buf = appendJSONString(m.buf, value)
}

func (m *idMap) json() string { return string(m.buf) + "}" }

// appendJSONString appends s, valid UTF-8, as a JSON string.
func appendJSONString(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// FinishTx ends leases inside the caller's database/sql transaction on
// this database, so that a job's effect and its completion commit or roll
// back together. It returns one error per item; a stale token gives
// ErrWorkerConflict, and the caller should then roll back.
func (s *Store) FinishTx(ctx context.Context, tx *sql.Tx, ps []store.FinishParams) ([]error, error) {
	return s.finishIn(ctx, sqlDB{tx}, ps)
}

// FinishPgxTx is FinishTx for a pgx transaction, such as one begun on
// Pool().
func (s *Store) FinishPgxTx(ctx context.Context, tx pgx.Tx, ps []store.FinishParams) ([]error, error) {
	return s.finishIn(ctx, pgxDB{tx}, ps)
}

func (s *Store) finishIn(ctx context.Context, d db, ps []store.FinishParams) ([]error, error) {
	results, err := check.Finishes(ps)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, s.wrap("finish", store.ErrClosed)
	}
	t := &txn{s: s, ctx: ctx, db: d, user: true, deferCounts: true}
	errs := make([]error, len(ps))
	err = engine.Finish(t, ps, results, seq(0, len(ps)), errs)
	if err == nil {
		err = t.flushCounts()
	}
	if err == nil {
		err = t.notifyInTx()
	}
	if err != nil {
		return nil, s.wrap("finish", err)
	}
	return errs, nil
}

// endedColumns are the columns of both job tables, in the order of the
// statements that move a row from one to the other.
const endedColumns = `id, type, key, grp, priority, state, run_at, attempt, max_attempts, backoff_base, backoff_max,
	lease_timeout, lease_until, token, worker, cancel_requested, resubmit, resubmit_at, progress, created_at,
	started_at, finished_at, updated_at, retry_after, parent_id, repeat, data, next_data, result, last_error, errors, meta,
	missed, slot, has_children, bedrock_id, prev_started_at, run_timeout, expires_at, expired, unique_for, debounce,
	has_deps, deps_waiting, dep_policy, has_dependants, batch_id`

// Now is the transaction's now(), which every statement of it writes
// (engine.Tx): read with the rows it locked (scanRows), or asked for when
// it locked none.
func (t *txn) Now() (time.Time, error) {
	if t.at.IsZero() {
		if _, err := t.row("now", nil, &t.at); err != nil {
			return time.Time{}, fmt.Errorf("read the time: %w", err)
		}
		t.at = t.at.UTC()
	}
	return t.at, nil
}

// Apply writes plan p for the locked job r with the statement for its
// kind, keeps the group counts and queues the event (engine.Tx). It
// returns the job as it now is for the kinds whose statements return it.
func (t *txn) Apply(r *lifecycle.Row, p *lifecycle.Plan, c engine.Change) (*store.Job, error) {
	var jobs []store.Job // for re-adds, whose callers get the job as it now is
	var n int64          // rows written
	var err error
	if p.Touch.Any() && p.Kind != lifecycle.KindKeep {
		// Before the transition, which may move the row to the ended
		// table with what it holds.
		var prio *int64
		if p.Touch.Priority != nil {
			v := int64(*p.Touch.Priority)
			prio = &v
		}
		if n, err = t.run("touch", r.ID, p.Touch.Data, prio, p.Touch.EndSchedule); err == nil && n != 1 {
			err = fmt.Errorf("%d rows changed, want 1", n)
		}
		if err != nil {
			return nil, fmt.Errorf("%s job %d: set what the finish changes: %w", p.Kind, r.ID, err)
		}
		n = 0
	}
	switch p.Kind {
	case lifecycle.KindKeep:
	case lifecycle.KindComplete, lifecycle.KindDiscard, lifecycle.KindCancelRun, lifecycle.KindCancel:
		var errText *string
		if p.Error != "" {
			e := cleanText(p.Error)
			errText = &e
		}
		recorded := p.Kind == lifecycle.KindDiscard
		n, err = t.run("end", r.ID, int16(p.State), p.Result, errText, recorded, p.DropToken, p.CancelRequested, false)
	case lifecycle.KindRetry:
		n, err = t.run("retry", r.ID, p.RunAt, cleanText(p.Error), p.DropToken)
	case lifecycle.KindRequeue:
		if err = t.registerRename(p.Type); err != nil {
			break
		}
		n, err = t.run("requeue", r.ID, p.RunAt, p.Attempt, optString(p.Type))
	case lifecycle.KindRunAgain:
		n, err = t.run("run_again", r.ID, p.RunAt, p.DropToken, optTime(p.Slot), optTime(p.ExpiresAt))
	case lifecycle.KindRecur:
		var errText *string
		if p.Error != "" {
			e := cleanText(p.Error)
			errText = &e
		}
		n, err = t.run("recur", r.ID, p.RunAt, optTime(p.Slot), p.Result, errText, p.DropToken, optTime(p.ExpiresAt))
	case lifecycle.KindSkipSlots:
		n, err = t.run("skip_slots", r.ID, p.RunAt, optTime(p.Slot), p.Attempt, optTime(p.ExpiresAt))
	case lifecycle.KindLapse:
		e := cleanText(p.Error)
		if p.State.Terminal() {
			n, err = t.run("end", r.ID, int16(p.State), nil, &e, false, false, false, true)
		} else {
			n, err = t.run("lapse", r.ID, p.RunAt, optTime(p.Slot), optTime(p.ExpiresAt), e)
		}
	case lifecycle.KindUpdate, lifecycle.KindRevive:
		a := &p.Set
		var prio *int64
		if a.Priority != nil {
			v := int64(*a.Priority)
			prio = &v
		}
		var meta *string
		if m := backend.MetaJSON(a.Meta); m != nil {
			v := string(m)
			meta = &v
		}
		if err = t.registerRename(p.Type); err != nil {
			break
		}
		set, text, missed := scheduleArgs(a)
		args := []any{r.ID, a.RunAt, a.Data, prio, optInt(int64(a.MaxAttempts)),
			optInt(us(a.BackoffBase)), optInt(us(a.BackoffMax)), meta, set, text, missed, optTime(p.Slot), optString(p.Type),
			optTime(a.ExpiresAt)}
		if p.Kind == lifecycle.KindRevive {
			jobs, err = scanJobs(t.rows("revive", args...))
		} else {
			jobs, err = scanJobs(t.rows("update", args...))
		}
		n = int64(len(jobs))
	case lifecycle.KindMarkResubmit:
		set, text, missed := scheduleArgs(&p.Set)
		jobs, err = scanJobs(t.rows("mark_resubmit", r.ID, optTime(p.Set.RunAt), p.Set.Data, set, text, missed))
		n = int64(len(jobs))
	case lifecycle.KindWait:
		n, err = t.run("wait", r.ID, p.RunAt, p.Result)
	case lifecycle.KindResume:
		n, err = t.run("resume", r.ID, p.RunAt)
	case lifecycle.KindEdit:
		a := &p.Set
		var prio *int64
		if a.Priority != nil {
			v := int64(*a.Priority)
			prio = &v
		}
		set, text, missed := scheduleArgs(a)
		args := []any{r.ID, a.Data, prio, set, text, missed, optTime(p.Slot), p.RunAt}
		var k int64
		if n, err = t.run("edit_hot", args...); err == nil {
			k, err = t.run("edit_ended", args...)
			n += k
		}
	case lifecycle.KindRemove:
		var k int64
		if n, err = t.run("remove_hot", r.ID); err == nil {
			k, err = t.run("remove_ended", r.ID)
			n += k
		}
		if err == nil {
			_, err = t.run("logs_remove", []int64{r.ID})
		}
		if err == nil && r.HasDeps {
			_, err = t.run("drop_deps", r.ID)
		}
	case lifecycle.KindDepsDone:
		n, err = t.run("deps_done", r.ID, int16(p.State), p.RunAt, p.DepsWaiting)
	default:
		err = fmt.Errorf("unknown plan %s", p.Kind)
	}
	if err == nil && p.Kind != lifecycle.KindKeep && n != 1 {
		err = fmt.Errorf("%d rows changed, want 1", n)
	}
	if err != nil {
		return nil, fmt.Errorf("%s job %d: %w", p.Kind, r.ID, err)
	}
	t.move(c.From, c.To)
	if p.Event.ID != 0 {
		t.changed(p.Event)
	}
	if jobs == nil {
		return nil, nil
	}
	return &jobs[0], nil
}

// Dependants lists the jobs added after each of jobs ids (engine.Tx).
func (t *txn) Dependants(ids []int64) (map[int64][]int64, error) {
	rows, err := t.rows("dependants", ids)
	if err != nil {
		return nil, fmt.Errorf("dependants of %d jobs: %w", len(ids), err)
	}
	defer rows.Close()
	out := map[int64][]int64{}
	for rows.Next() {
		var of, d int64
		if err := rows.Scan(&of, &d); err != nil {
			return nil, err
		}
		out[of] = append(out[of], d)
	}
	return out, rows.Err()
}

// AddDeps records job id's dependencies (engine.Tx).
func (t *txn) AddDeps(id int64, deps, unended []int64, policy store.DepPolicy) error {
	if unended == nil {
		unended = []int64{}
	}
	n, err := t.run("add_deps", id, deps, unended, int16(policy))
	if err == nil && n != 1 {
		err = fmt.Errorf("%d rows changed, want 1", n)
	}
	return err
}

// Children lists the ids of job parent's children of kin (engine.Tx):
// the unended ones are in the hot table.
func (t *txn) Children(parent int64, kin engine.Kin) ([]int64, error) {
	var rows rows
	var err error
	switch kin {
	case engine.Paused:
		rows, err = t.rows("children_paused", parent)
	case engine.All:
		rows, err = t.rows("children_all", parent)
	default:
		rows, err = t.rows("children", parent)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// DropEnded deletes job parent's ended children in one statement
// (engine.Tx): ended jobs are in no count.
func (t *txn) DropEnded(parent int64, keepFailed bool) error {
	rows, err := t.rows("drop_ended", parent, keepFailed)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		ev := store.Event{Removed: true}
		var state int16
		if err := rows.Scan(&ev.ID, &ev.Type, &ev.Group, &state); err != nil {
			return err
		}
		ev.State = store.State(state)
		t.changed(ev)
	}
	return rows.Err()
}

// MarkParent records that job id has children (engine.Tx). Parents that
// can have children are running or paused, so in the hot table.
func (t *txn) MarkParent(id int64) error {
	_, err := t.run("mark_parent", id)
	return err
}

// Unfinished reports whether any of a parent's children is pending,
// running or paused: in the hot table. It runs after every child's end, so
// it asks whether one exists rather than count them all (that made a
// fan-out of n children cost n² index steps).
func (t *txn) Unfinished(id int64) (bool, error) {
	var found bool
	if _, err := t.row("unfinished", []any{id}, &found); err != nil {
		return false, fmt.Errorf("look for unfinished children of job %d: %w", id, err)
	}
	return found, nil
}

// scheduleArgs are the arguments that set a schedule in updateSQL,
// markResubmitSQL and reviveSQL: whether to set it, to what (NULL: none),
// and the policy (NULL: keep).
func scheduleArgs(a *lifecycle.Readd) (bool, *string, *int16) {
	var text *string
	if a.Schedule != nil {
		text = optString(*a.Schedule)
	}
	var missed *int16
	if a.Missed != nil {
		v := int16(*a.Missed)
		missed = &v
	}
	return a.Schedule != nil, text, missed
}

func optInt(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

// KeyTaken looks up job r's key and whether another job holds it in type
// typ and r's group (engine.Tx). It takes the key's lock, as adds do
// (lockKeys), so that a key found free stays free until the rename
// commits.
func (t *txn) KeyTaken(r *lifecycle.Row, typ string) (string, bool, error) {
	var key *string
	if _, err := t.row("key_of", []any{r.ID}, &key); err != nil {
		return "", false, fmt.Errorf("rename job %d: %w", r.ID, err)
	}
	if key == nil {
		return "", false, nil
	}
	existing, err := t.lockKeys([]store.AddParams{{Type: typ, Group: r.Group, Key: *key}})
	if err != nil {
		return "", false, err
	}
	return *key, len(existing) > 0, nil
}

// ExpireLeases takes back running jobs whose lease ended before now, and
// ends pending jobs whose deadline is not after now (engine.Lapse; read
// relative to this node's clock, see the package doc). Only the elected
// leader sweeps; on other nodes it returns at once with no jobs and a time
// to call again.
func (s *Store) ExpireLeases(ctx context.Context, now time.Time) (int, time.Time, error) {
	if s.closed.Load() {
		return 0, time.Time{}, s.wrap("expire leases", store.ErrClosed)
	}
	delta := time.Until(now)
	l := &s.leader
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, l.sweepTimeout())
	defer cancel()
	conn, err := l.acquire(ctx)
	if err != nil {
		return 0, time.Time{}, s.wrap("expire leases: elect", err)
	}
	if conn == nil {
		return 0, time.Now().Add(s.cfg.LeaderRetry), nil
	}
	var n int
	var next time.Time
	err = s.inTxOn(ctx, "expire leases", conn, func(t *txn) error {
		var err error
		n, next, err = t.expire(delta)
		return err
	})
	if err == nil {
		// Pending changes no claim has folded (a type that no newer node
		// accepts, as in a rolling upgrade beside older nodes): fold them
		// all, so that those nodes see the jobs within a sweep. The leases
		// are taken back whatever it does: a failure waits for the next.
		if _, ferr := conn.Exec(ctx, s.stmt("fold_all")); ferr != nil {
			s.log.Warn("rota postgres: sweep: could not fold the groups' pending changes; the next sweep or claim does", "err", ferr)
			if isConnErr(ferr) || conn.IsClosed() {
				l.lost()
			}
		}
	}
	l.lastSweep = time.Now()
	if err != nil && (isConnErr(err) || conn.IsClosed()) {
		l.lost()
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	return n, next, nil
}

func (t *txn) expire(delta time.Duration) (int, time.Time, error) {
	expired, err := t.readRows(&t.at, "expired", us(delta))
	if err != nil {
		return 0, time.Time{}, err
	}
	n, err := engine.Expire(t, expired)
	if err != nil {
		return 0, time.Time{}, err
	}
	// Pending jobs past their deadline end (or skip to their next slot).
	lapsed, err := t.readRows(&t.at, "lapsed", us(delta))
	if err != nil {
		return 0, time.Time{}, err
	}
	now, err := t.Now()
	if err != nil {
		return 0, time.Time{}, err
	}
	k, err := engine.Lapse(t, lapsed, now.Add(delta))
	if err != nil {
		return 0, time.Time{}, err
	}
	var lease, deadline sql.NullTime
	if _, err := t.row("next_lease", nil, &lease); err != nil {
		return 0, time.Time{}, err
	}
	if _, err := t.row("next_deadline", nil, &deadline); err != nil {
		return 0, time.Time{}, err
	}
	next := nullTime(lease)
	if d := nullTime(deadline); !d.IsZero() && (next.IsZero() || d.Before(next)) {
		next = d
	}
	return n + k, next, nil
}

// Retire deletes up to limit ended jobs past their type's retention. Only
// the elected sweep leader deletes (as ExpireLeases, which it elects);
// on other nodes it returns at once.
func (s *Store) Retire(ctx context.Context, now time.Time, limit int) (int, error) {
	if s.closed.Load() {
		return 0, s.wrap("retire", store.ErrClosed)
	}
	delta := time.Until(now)
	l := &s.leader
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, l.sweepTimeout())
	defer cancel()
	conn, err := l.acquire(ctx)
	if err != nil {
		return 0, s.wrap("retire: elect", err)
	}
	if conn == nil {
		return 0, nil
	}
	var n int64
	err = s.inTxOn(ctx, "retire ended jobs", conn, func(t *txn) error {
		var err error
		if _, err = t.row("retire", []any{us(delta), us(store.DefaultRetention), max(limit, 1)}, &n); err != nil {
			return err
		}
		// The audit trail is bounded by its age, in the same sweep.
		_, err = t.run("retire_audit", us(delta), us(store.AuditRetention), max(limit, 1))
		return err
	})
	l.lastSweep = time.Now()
	if err != nil && (isConnErr(err) || conn.IsClosed()) {
		l.lost()
	}
	return int(n), err
}

// Update changes jobs in place (lifecycle.Update).
func (s *Store) Update(ctx context.Context, ps []store.UpdateParams) ([]store.Job, []error, error) {
	datas, err := check.Updates(ps)
	if err != nil {
		return nil, nil, err
	}
	var out []store.Job
	var errs []error
	err = s.inTx(ctx, "update", func(t *txn) error {
		var err error
		out, errs, err = engine.Update(t, ps, datas, engine.CallerOf(ctx))
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, errs, nil
}

// registerRename registers the type a plan renames a job to ("" for
// none); this node knows it once the transaction commits.
func (t *txn) registerRename(typ string) error {
	if typ == "" {
		return nil
	}
	if _, err := t.run("add_type", typ); err != nil {
		return err
	}
	if !t.user {
		t.after = append(t.after, func() { t.s.addTypes([]string{typ}) })
	}
	return nil
}
