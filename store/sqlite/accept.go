package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/fair"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// Accept hands out due jobs fairly: within a type, groups take turns in
// weighted round-robin order (rota_groups.turn, see migration 0002), and
// each group gives its best job. Groups are read from the front of an
// index in turn order, a page at a time, so the cost does not grow with the
// number of groups. When one group wins several turns in a row it gives
// all those jobs in one statement.

// resolve turns patterns into the known type names they match.
func (s *Store) resolve(pats []glob.Pattern) []string {
	s.typesMu.RLock()
	defer s.typesMu.RUnlock()
	return glob.MatchTypes(pats, maps.Keys(s.types))
}

// queue is one type's groups during one accept (fair.Queue), with what
// this store keeps of them: the groups served, to save their turns, and
// the type's virtual clock, which moves to the turn at which a group last
// gave a job when the accept leaves it with none pending.
type queue struct {
	*fair.Queue
	cfg     typeConfig
	bound   *fair.Bound // the type's bound on its running jobs, read with the first page; nil: none
	touched []*fair.Group
	vclock  float64
	moved   bool // the virtual clock moved
}

// groupsFirstSQL and groupsAfterSQL read a page of a type's groups with
// pending jobs in turn order (fair.Page).
const (
	groupsFirstSQL = `SELECT grp, turn, pending, running, band_count FROM rota_groups
	WHERE type = ? AND pending > 0 ORDER BY turn, grp LIMIT ?`
	groupsAfterSQL = `SELECT grp, turn, pending, running, band_count FROM rota_groups
	WHERE type = ? AND pending > 0 AND (turn > ? OR (turn = ? AND grp > ?)) ORDER BY turn, grp LIMIT ?`
)

func (w *txn) newQueue(typ string, first int, cross map[string]*fair.Bound) *queue {
	q := &queue{cfg: w.s.typeConfig(typ)}
	q.Queue = fair.NewQueue(typ, q.cfg.bands, first, func(isFirst bool, turn float64, name string, limit int) ([]*fair.Group, error) {
		var rows *sql.Rows
		var err error
		if isFirst && q.cfg.maxRunning > 0 {
			// One writer: the count is exact, and the accept's claims add
			// to it as they are made (fair.Group.Serve).
			q.bound = &fair.Bound{Max: int64(q.cfg.maxRunning), Exact: true}
			if err := w.row("type_running", typ).Scan(&q.bound.Running); err != nil {
				return nil, fmt.Errorf("sqlite: accept: type %q: running jobs: %w", typ, err)
			}
		}
		if isFirst {
			rows, err = w.query(groupsFirstSQL, typ, limit)
		} else {
			rows, err = w.query(groupsAfterSQL, typ, turn, turn, name, limit)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: accept: groups: %w", err)
		}
		defer rows.Close()
		var out []*fair.Group
		for rows.Next() {
			g := &fair.Group{Type: typ, Paused: q.cfg.paused, TypeBound: q.bound}
			if err := rows.Scan(&g.Name, &g.Turn, &g.Pending, &g.Running, &g.BandCount); err != nil {
				return nil, fmt.Errorf("sqlite: accept: groups: %w", err)
			}
			if w.inScope != nil && !w.inScope(g.Name) {
				g.Paused = true // out of the accept's groups
			}
			out = append(out, g)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: accept: groups: %w", err)
		}
		// Settings after the rows are read: applying them may query.
		for _, g := range out {
			if err := w.s.applyGroupConfig(w, g, q.cfg, cross); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
	return q
}

// served records that g handed out n jobs.
func (q *queue) served(g *fair.Group, n int) {
	if g.Served == 0 {
		q.touched = append(q.touched, g)
	}
	g.Serve(int64(n))
	if g.Pending <= 0 && (!q.moved || g.LastTurn() > q.vclock) {
		q.vclock, q.moved = g.LastTurn(), true
	}
	q.Push(g)
}

// save writes the turns back.
func (q *queue) save(w *txn) error {
	for _, g := range q.touched {
		if _, err := w.exec(`UPDATE rota_groups SET turn = ?, band_count = ? WHERE type = ? AND grp = ?`,
			g.Turn, g.BandCount, g.Type, g.Name); err != nil {
			return fmt.Errorf("sqlite: accept: save turns: %w", err)
		}
	}
	if q.moved {
		if _, err := w.exec(`UPDATE rota_types SET vclock = max(vclock, ?) WHERE name = ?`, q.vclock, q.Type); err != nil {
			return fmt.Errorf("sqlite: accept: save clock: %w", err)
		}
	}
	return nil
}

// bandSQL is the condition of each band's priorities.
var bandSQL = map[fair.Band]string{fair.AnyBand: "", fair.HighBand: " AND priority > 0", fair.LowBand: " AND priority <= 0"}

// offer returns up to n of g's due jobs in order: due retries first, then
// the rest; with a counting scheme, n is 1 and the band is the scheme's,
// falling back to the other when it is empty.
func (w *txn) offer(g *fair.Group, bands store.Bands, dueBy int64, n int) ([]fair.Candidate, error) {
	band := fair.BandOf(bands, g.BandCount)
	if band != fair.AnyBand {
		n = 1
	}
	out, err := w.offerFrom(g, dueBy, n, bandSQL[band])
	if err == nil && len(out) == 0 && band != fair.AnyBand {
		out, err = w.offerFrom(g, dueBy, n, bandSQL[band.Other()])
	}
	return out, err
}

func (w *txn) offerFrom(g *fair.Group, dueBy int64, n int, band string) ([]fair.Candidate, error) {
	var out []fair.Candidate
	for _, retry := range []bool{true, false} {
		if len(out) >= n {
			break
		}
		// The plan is pinned: without statistics SQLite may pick the
		// run-time index and sort a type's whole backlog.
		from := "rota_jobs INDEXED BY rota_jobs_due WHERE state = 0 AND attempt = 0"
		if retry {
			from = "rota_jobs INDEXED BY rota_jobs_retry WHERE state = 0 AND attempt > 0"
		}
		args := []any{g.Type, g.Name, dueBy, n - len(out)}
		if w.deadlineSQL != "" {
			args = []any{g.Type, g.Name, dueBy, micros(w.now), n - len(out)}
		}
		rows, err := w.query(`SELECT id, priority, run_at FROM `+from+band+w.prioSQL+`
			AND type = ? AND grp = ? AND run_at <= ?`+w.deadlineSQL+` ORDER BY priority DESC, run_at, id LIMIT ?`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: accept: %w", err)
		}
		for rows.Next() {
			c := fair.Candidate{Retry: retry}
			var runAt int64
			if err := rows.Scan(&c.ID, &c.Priority, &runAt); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: accept: %w", err)
			}
			c.RunAt = fromMicros(runAt)
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: accept: %w", err)
		}
	}
	return out, nil
}

// claim leases g's candidates to the worker in one statement and appends
// them to dst in the candidates' order. The statement returns only what
// the writer needs to decide about the jobs in the same transaction
// (claimColumns): the rest of each job, its data above all, is read after
// the commit by readClaimed, on a reader connection, so that the single
// writer does not spend its time on it. The tokens are made here, so that
// the writer knows them without reading them back. Jobs are read straight
// into dst, which accept sizes for the whole batch, since a job is a large
// struct and a drain claims tens of thousands a second.
func (w *txn) claim(dst []store.Job, g *fair.Group, cands []fair.Candidate, worker string, leaseMicros, now int64) ([]store.Job, error) {
	tokens, err := newTokens(len(cands))
	if err != nil {
		return dst, fmt.Errorf("sqlite: accept: claim: %w", err)
	}
	base := len(dst)
	dst = slices.Grow(dst, len(cands))[:base+len(cands)]
	seg := dst[base:]
	rank := make(map[int64]int, len(cands))
	buf := make([]byte, 0, 48*len(cands)+2)
	buf = append(buf, '[')
	for i, c := range cands {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = strconv.AppendInt(buf, c.ID, 10)
		buf = append(buf, ',', '"')
		buf = append(buf, tokens[i]...)
		buf = append(buf, '"', ']')
		rank[c.ID] = i
		seg[i] = store.Job{ID: c.ID, Type: g.Type, Group: g.Name, Priority: int(c.Priority), RunAt: c.RunAt,
			State: store.Running, Token: tokens[i], Worker: worker,
			LeaseUntil: fromMicros(now + leaseMicros), StartedAt: fromMicros(now), UpdatedAt: fromMicros(now)}
	}
	buf = append(buf, ']')
	var workerArg any
	if worker != "" {
		workerArg = worker
	}
	var typeTimeout any // the type's default run timeout, for jobs without their own
	if d := w.s.typeConfig(g.Type).timeout; d > 0 {
		typeTimeout = d.Microseconds()
	}
	rows, err := w.query(claimSQL, workerArg, now, leaseMicros, typeTimeout, leaseMicros, typeTimeout, now, now, string(buf))
	if err != nil {
		return dst[:base], fmt.Errorf("sqlite: accept: claim: %w", err)
	}
	defer rows.Close()
	n := 0
	c := newColumns(claimedColumns...)
	for rows.Next() {
		if err := c.scan(rows); err != nil {
			return dst[:base], fmt.Errorf("sqlite: accept: claim: %w", err)
		}
		r, ok := rank[c.int64(0)]
		if !ok {
			return dst[:base], fmt.Errorf("sqlite: accept: job %d was not a candidate", c.int64(0))
		}
		j := &seg[r]
		j.Attempt = c.int(1)
		j.RetryAfter = time.Duration(c.int64(2)) * time.Microsecond
		if j.Schedule = c.nullStr(3); j.Schedule != "" {
			j.Missed = store.MissedSkip // what lifecycle.Late needs; readClaimed reads the rest
		}
		j.Slot = c.nullTime(4)
		j.Parent = c.int64(5)
		j.HasChildren = c.bool(6)
		j.Timeout = time.Duration(c.int64(7)) * time.Microsecond
		if c.err != nil {
			return dst[:base], fmt.Errorf("sqlite: accept: claim: %w", c.err)
		}
		if j.RetryAfter > 0 {
			j.LeaseUntil = fromMicros(now + j.RetryAfter.Microseconds())
		}
		if j.Timeout > 0 && j.LeaseUntil.After(j.StartedAt.Add(j.Timeout)) {
			j.LeaseUntil = fromMicros(now + j.Timeout.Microseconds()) // the lease ends with the run's time
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return dst[:base], fmt.Errorf("sqlite: accept: claim: %w", err)
	}
	rows.Close()
	if n != len(cands) {
		return dst[:base], fmt.Errorf("sqlite: accept: claimed %d of %d jobs", n, len(cands))
	}
	// Not w.count: a claim only takes jobs from pending, so it needs no
	// virtual clock for groups that return.
	if _, err := w.exec(`UPDATE rota_groups SET pending = pending - ?, running = running + ? WHERE type = ? AND grp = ?`,
		n, n, g.Type, g.Name); err != nil {
		return dst[:base], fmt.Errorf("sqlite: accept: count jobs of group %q: %w", g.Name, err)
	}
	return dst, nil
}

// newTokens makes n fencing tokens: 16 random bytes each, in hex.
func newTokens(n int) ([]string, error) {
	raw := make([]byte, 16*n)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("make lease tokens: %w", err)
	}
	all := hex.EncodeToString(raw) // one allocation for every token
	out := make([]string, n)
	for i := range out {
		out[i] = all[32*i : 32*i+32]
	}
	return out, nil
}

// claimSQL leases the jobs of a JSON array of [id, "token"] pairs to a
// worker. "+state" keeps SQLite from driving the join from an index on
// state; each item is a rowid lookup. The caller counts the jobs. A job
// with a retry-after has a lease of that length instead. The run's timeout
// (run_limit) is the job's own or its type's default (the parameter after
// the lease), and the lease ends by then. It returns claimColumns.
const claimSQL = `UPDATE rota_jobs SET state = 1, token = j.value->>1, worker = ?,
	lease_until = ? + min(coalesce(retry_after, ?), coalesce(run_timeout, ?, 9223372036854775807)), lease_timeout = coalesce(retry_after, ?),
	run_limit = coalesce(run_timeout, ?), attempt = attempt + 1,
	prev_started_at = started_at, started_at = ?, cancel_requested = 0, updated_at = ?
	FROM json_each(?) AS j WHERE rota_jobs.id = j.value->>0 AND +rota_jobs.state = 0
	RETURNING ` + claimColumns

// claimColumns are what the writer needs of a job it claims: the lease's
// length (retry_after), whether lifecycle.Late applies (a schedule under
// MissedSkip, and its slot) and whether the family rules do.
const claimColumns = `rota_jobs.id, attempt, coalesce(retry_after, 0), CASE WHEN missed = 1 THEN repeat END, slot,
	coalesce(parent_id, 0), has_children, coalesce(run_limit, 0)`

// claimedColumns names claimColumns, for columns' errors.
var claimedColumns = []string{"id", "attempt", "retry_after", "repeat", "slot", "parent_id", "has_children", "run_limit"}

// readClaimedSQL reads the rest of claimed jobs, by a JSON array of ids,
// with their state and token, which readClaimed checks. The read is
// driven by the array (a rowid lookup for each id), so the rows come in
// its order as a rule; readClaimed does not count on it.
const readClaimedSQL = `SELECT r.id, r.state, r.token, r.key, r.data, r.max_attempts, r.backoff_base, r.backoff_max,
	r.resubmit, r.progress, r.last_error, r.errors, r.result, r.created_at, r.finished_at, r.meta, coalesce(r.repeat, ''),
	r.missed, coalesce(r.bedrock_id, 0), r.prev_started_at, r.has_deps, r.dep_policy
	FROM json_each(?) AS j JOIN rota_jobs AS r ON r.id = j.value`

var readClaimedColumns = []string{"id", "state", "token", "key", "data", "max_attempts", "backoff_base", "backoff_max", "resubmit", "progress",
	"last_error", "errors", "result", "created_at", "finished_at", "meta", "repeat", "missed", "bedrock_id", "prev_started_at",
	"has_deps", "dep_policy"}

// readClaimed fills in the jobs an accept claimed, after its commit, from
// a connection of its own (see claim), calling snapshot once its read has
// begun, so that it reads the claim's commit and nothing later (the
// writer's next commit waits for that: txn.readAfter). A job is read
// only while its lease is the one the accept made (running, under the
// claim's token): one that is not (its claim was rolled back) is left out
// of the answer.
//
// It runs for every job a drain runs: the jobs' data share one allocation
// (data is read as sql.RawBytes and copied there), and the rows are
// matched to the jobs in order, with a map only when they come in another.
func (s *Store) readClaimed(ctx context.Context, jobs []store.Job, snapshot func()) ([]store.Job, error) {
	defer snapshot()
	if len(jobs) == 0 {
		return jobs, nil
	}
	buf := make([]byte, 0, 12*len(jobs)+2)
	buf = append(buf, '[')
	for i := range jobs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, jobs[i].ID, 10)
	}
	buf = append(buf, ']')
	rows, err := s.readClaimedStmt.QueryContext(ctx, string(buf))
	if err != nil {
		return nil, fmt.Errorf("sqlite: accept: read claimed jobs: %w", err)
	}
	defer rows.Close()
	read := make([]bool, len(jobs))
	c := newColumns(readClaimedColumns...)
	var data sql.RawBytes
	c.ptrs[4] = &data
	var arena []byte // the data of the jobs read so far, and room for more
	var at map[int64]int
	next := 0 // where the next row's job is when rows come in order
	// The statement's read transaction, and so its snapshot, begins at its
	// first step.
	more := rows.Next()
	snapshot()
	if s.cfg.claimReadHook != nil {
		s.cfg.claimReadHook()
	}
	for ; more; more = rows.Next() {
		if err := c.scan(rows); err != nil {
			return nil, fmt.Errorf("sqlite: accept: read claimed jobs: %w", err)
		}
		id := c.int64(0)
		i := next
		if i >= len(jobs) || jobs[i].ID != id {
			if at == nil {
				at = make(map[int64]int, len(jobs))
				for k := range jobs {
					at[jobs[k].ID] = k
				}
			}
			var ok bool
			if i, ok = at[id]; !ok {
				return nil, fmt.Errorf("sqlite: accept: read claimed jobs: job %d was not claimed", id)
			}
		}
		next = i + 1
		if store.State(c.int(1)) != store.Running || c.nullStr(2) != jobs[i].Token {
			continue
		}
		j := &jobs[i]
		j.Key = c.nullStr(3)
		switch {
		case data == nil:
		case len(data) == 0:
			j.Data = []byte{}
		default:
			if cap(arena)-len(arena) < len(data) {
				arena = make([]byte, 0, max(len(data), 64*len(jobs)))
			}
			arena = append(arena, data...)
			j.Data = arena[len(arena)-len(data) : len(arena) : len(arena)]
		}
		j.MaxAttempts = c.int(5)
		j.BackoffBase, j.BackoffMax = time.Duration(c.int64(6))*time.Microsecond, time.Duration(c.int64(7))*time.Microsecond
		j.Resubmit = c.bool(8)
		j.Progress = c.float(9)
		j.LastError = c.nullStr(10)
		errs := c.bytes(11)
		if result := c.bytes(12); len(result) > 0 {
			j.Result = result
		}
		j.CreatedAt, j.FinishedAt = c.time(13), c.nullTime(14)
		meta := c.bytes(15)
		j.Schedule = c.str(16)
		j.Missed = store.Missed(c.uint8(17))
		j.BedrockID = c.int64(18)
		j.PrevStartedAt = c.nullTime(19)
		j.HasDeps, j.DepPolicy = c.bool(20), store.DepPolicy(c.uint8(21))
		if c.err != nil {
			return nil, fmt.Errorf("sqlite: accept: read claimed jobs: %w", c.err)
		}
		if err := decodeJSONColumns(j, meta, errs); err != nil {
			return nil, fmt.Errorf("sqlite: accept: %w", err)
		}
		read[i] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: accept: read claimed jobs: %w", err)
	}
	kept := jobs[:0]
	for i := range jobs {
		if read[i] {
			kept = append(kept, jobs[i])
		}
	}
	if err := s.depsOfClaimed(ctx, kept); err != nil { // deps.go
		return nil, fmt.Errorf("sqlite: accept: %w", err)
	}
	return kept, nil
}

func (w *txn) accept(p store.AcceptParams, types []string) (res store.AcceptResult, err error) {
	if w.inScope, err = check.AcceptScope(&p); err != nil {
		return res, err
	}
	defer func() { w.inScope, w.buckets = nil, nil }()
	if p.Priority != nil {
		// An integer, formatted here: nothing of the caller's text.
		w.prioSQL = " AND priority = " + strconv.Itoa(*p.Priority)
		defer func() { w.prioSQL = "" }()
	}
	now := micros(w.now)
	dueBy := now
	if !p.DueBy.IsZero() {
		dueBy = micros(p.DueBy)
	}
	if w.s.deadlineAdds.Load() != w.s.deadlinesNone.Load() {
		// No run starts at or after its job's deadline
		// (lifecycle.PastDeadline).
		w.deadlineSQL = " AND (expires_at IS NULL OR expires_at > ?)"
		defer func() { w.deadlineSQL = "" }()
	}
	// A group's running jobs across types are counted once per accept and
	// shared by every type's queue, so that a bound across types holds
	// within one accept of several types too.
	cross := map[string]*fair.Bound{}
	types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return w.s.typeConfig(t).paused })
	queues := make([]*queue, len(types))
	for i, t := range types {
		queues[i] = w.newQueue(t, min(fair.PageSize, p.Limit+1), cross)
	}
	// Room for the batch up front (claims append in place), but not for a
	// long poll's ten thousand that may find one job.
	res.Jobs = make([]store.Job, 0, min(p.Limit, 1024))
	w.changes = slices.Grow(w.changes, min(p.Limit, 1024))
	take := func(q *queue, g *fair.Group, offers []fair.Candidate) error {
		before := len(res.Jobs)
		var err error
		res.Jobs, err = w.claim(res.Jobs, g, offers, p.Worker, w.s.leaseFor(q.Type, p.LeaseTimeout).Microseconds(), now)
		if err != nil {
			return err
		}
		jobs := res.Jobs[before:]
		q.served(g, len(jobs))
		for i := range jobs {
			w.changes = append(w.changes, lifecycle.ClaimedEvent(&jobs[i]))
		}
		return nil
	}
	defer func() {
		if err == nil {
			res.Jobs, err = w.skipLate(res.Jobs)
		}
		if err == nil {
			err = w.familyOf(res.Jobs)
		}
	}()
	if len(queues) == 1 {
		err = w.acceptOneType(queues[0], p.Limit, dueBy, &res, take)
	} else {
		err = w.acceptTypes(queues, p.Limit, dueBy, &res, take)
	}
	if err != nil {
		return res, err
	}
	for _, q := range queues {
		if err := q.save(w); err != nil {
			return res, err
		}
	}
	next, err := w.saveBuckets()
	if err != nil {
		return res, err
	}
	if len(res.Jobs) < p.Limit {
		res.NextTokenAt = next
		if res.NextRunAt, err = w.nextRunAt(types); err != nil {
			return res, err
		}
	}
	return res, nil
}

type takeFunc func(q *queue, g *fair.Group, offers []fair.Candidate) error

// acceptOneType serves one type's groups in turn order; a group that wins
// several turns in a row gives that many jobs at once.
func (w *txn) acceptOneType(q *queue, limit int, dueBy int64, res *store.AcceptResult, take takeFunc) error {
	for len(res.Jobs) < limit {
		g, err := q.Next()
		if err != nil || g == nil {
			return err
		}
		room := g.Room(nil)
		if room == 0 {
			continue // skipped in this accept; its turn stays
		}
		offers, err := w.offer(g, q.Bands, dueBy, int(min(q.Wins(g, int64(limit-len(res.Jobs))), room)))
		if err != nil {
			return err
		}
		if len(offers) == 0 {
			continue // only jobs scheduled for later
		}
		if err := take(q, g, offers); err != nil {
			return err
		}
	}
	return nil
}

// acceptTypes serves several types: each offers the best job of its next
// group, and the best offer across types (fair.Better) goes first.
func (w *txn) acceptTypes(queues []*queue, limit int, dueBy int64, res *store.AcceptResult, take takeFunc) error {
	type head struct {
		g *fair.Group
		c fair.Candidate
	}
	heads := make([]*head, len(queues))
	for len(res.Jobs) < limit {
		for i, q := range queues {
			for heads[i] == nil {
				g, err := q.Next()
				if err != nil {
					return err
				}
				if g == nil {
					break
				}
				if g.Room(nil) == 0 {
					continue
				}
				offers, err := w.offer(g, q.Bands, dueBy, 1)
				if err != nil {
					return err
				}
				if len(offers) > 0 {
					heads[i] = &head{g: g, c: offers[0]}
				}
			}
		}
		best := -1
		for i, h := range heads {
			if h != nil && (best < 0 || fair.Better(h.c, heads[best].c)) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		h := heads[best]
		heads[best] = nil
		if h.g.Room(nil) == 0 {
			continue // another type's job of the group used up a bound across types
		}
		if err := take(queues[best], h.g, []fair.Candidate{h.c}); err != nil {
			return err
		}
	}
	return nil
}

// nextRunAt is the earliest run time among pending jobs of the types.
func (w *txn) nextRunAt(types []string) (time.Time, error) {
	var next int64
	for _, t := range types {
		var v sql.NullInt64
		if err := w.queryRow(`SELECT min(run_at) FROM rota_jobs WHERE state = 0 AND type = ?`, t).Scan(&v); err != nil {
			return time.Time{}, fmt.Errorf("sqlite: accept: %w", err)
		}
		if v.Valid && (next == 0 || v.Int64 < next) {
			next = v.Int64
		}
	}
	if next == 0 {
		return time.Time{}, nil
	}
	return fromMicros(next), nil
}

// skipLate takes back the jobs just claimed that missed slots under
// store.MissedSkip (engine.SkipLate): they go to their next slot without
// running, and the rest are returned.
func (w *txn) skipLate(jobs []store.Job) ([]store.Job, error) {
	skipped, err := engine.SkipLate(w, jobs)
	if err != nil || len(skipped) == 0 {
		return jobs, err
	}
	return slices.DeleteFunc(jobs, func(j store.Job) bool { return skipped[j.ID] }), nil
}

// familyOf gives the children among jobs their parent's data and the
// parents among them their children that ended (lifecycle's family rules).
func (w *txn) familyOf(jobs []store.Job) error {
	for i := range jobs {
		j := &jobs[i]
		if j.Parent != 0 {
			err := w.queryRow(`SELECT data FROM rota_jobs WHERE id = ?`, j.Parent).Scan(&j.ParentData)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("sqlite: accept: parent of job %d: %w", j.ID, err)
			}
		}
		if !j.HasChildren {
			continue
		}
		rows, err := w.query(`SELECT id, state, data, result, coalesce(last_error, '') FROM rota_jobs
			WHERE parent_id = ? AND state IN (3, 4, 5) ORDER BY id`, j.ID)
		if err != nil {
			return fmt.Errorf("sqlite: accept: children of job %d: %w", j.ID, err)
		}
		for rows.Next() {
			var c store.Child
			var result []byte
			if err := rows.Scan(&c.ID, &c.State, &c.Data, &result, &c.LastError); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: accept: children of job %d: %w", j.ID, err)
			}
			if len(result) > 0 {
				c.Result = result
			}
			j.Children = append(j.Children, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: accept: children of job %d: %w", j.ID, err)
		}
	}
	return nil
}
