package sqlite

import (
	"container/heap"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/rotajobs/rota/store"
)

// Accept hands out due jobs fairly: within a type, groups take turns in
// weighted round-robin order (rota_groups.turn, see migration 0002), and
// each group gives its best job. Groups are read from the front of an
// index in turn order, a page at a time, so the cost does not grow with the
// number of groups. When one group wins several turns in a row it gives
// all those jobs in one statement.

// resolve turns patterns into the known type names they match.
func (s *Store) resolve(pats []store.Pattern) []string {
	s.typesMu.RLock()
	defer s.typesMu.RUnlock()
	return store.MatchTypes(pats, maps.Keys(s.types))
}

// group is one group's round-robin state during one accept.
type group struct {
	typ, grp  string
	turn      float64
	pending   int
	running   int
	bandCount int
	weight    float64
	limit     int  // bound on running jobs of this type; 0: none
	crossRun  *int // running jobs of every type, shared by the accept's queues, when a cross-type bound applies
	crossMax  int  // the cross-type bound; 0: none
	served    bool
}

func (g *group) atLimit() bool {
	return (g.limit > 0 && g.running >= g.limit) || (g.crossMax > 0 && *g.crossRun >= g.crossMax)
}

// room is how many more jobs the group may start.
func (g *group) room() int {
	r := math.MaxInt
	if g.limit > 0 {
		r = g.limit - g.running
	}
	if g.crossMax > 0 {
		r = min(r, g.crossMax-*g.crossRun)
	}
	return max(r, 0)
}

// groupHeap orders groups by turn, then name.
type groupHeap []*group

func (h groupHeap) Len() int { return len(h) }
func (h groupHeap) Less(i, j int) bool {
	return store.TurnBefore(h[i].turn, h[i].grp, h[j].turn, h[j].grp)
}
func (h groupHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *groupHeap) Push(x any)   { *h = append(*h, x.(*group)) }
func (h *groupHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	*h = old[:len(old)-1]
	return g
}

// queue is one type's groups during one accept: a heap of the groups seen
// so far, fed from the turn index in pages.
type queue struct {
	cross   map[string]*int // running jobs per group across types, for cross-type bounds
	w       *writeTx
	page    int // groups to read at a time
	typ     string
	cfg     typeConfig
	heap    groupHeap
	touched []*group
	// the turn index is read from (lastTurn, lastGrp) on
	lastTurn float64
	lastGrp  string
	started  bool
	drained  bool
	vclock   float64
	moved    bool // the virtual clock moved
}

const groupPage = 64

func (q *queue) fill() error {
	if q.drained {
		return nil
	}
	var rows *sql.Rows
	var err error
	if !q.started {
		rows, err = q.w.query(`SELECT grp, turn, pending, running, band_count FROM rota_groups
			WHERE type = ? AND pending > 0 ORDER BY turn, grp LIMIT ?`, q.typ, q.page)
	} else {
		rows, err = q.w.query(`SELECT grp, turn, pending, running, band_count FROM rota_groups
			WHERE type = ? AND pending > 0 AND (turn > ? OR (turn = ? AND grp > ?)) ORDER BY turn, grp LIMIT ?`,
			q.typ, q.lastTurn, q.lastTurn, q.lastGrp, q.page)
	}
	if err != nil {
		return fmt.Errorf("sqlite: accept: groups: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		g := &group{typ: q.typ}
		if err := rows.Scan(&g.grp, &g.turn, &g.pending, &g.running, &g.bandCount); err != nil {
			return fmt.Errorf("sqlite: accept: groups: %w", err)
		}
		q.lastTurn, q.lastGrp = g.turn, g.grp
		if err := q.w.s.applyGroupConfig(q.w, g, q.cfg, q.cross); err != nil {
			return err
		}
		heap.Push(&q.heap, g)
		n++
	}
	q.started = true
	if n < q.page {
		q.drained = true
	}
	q.page = groupPage
	return rows.Err()
}

// next returns the group whose turn it is, or nil when no group has
// pending jobs. It reads more of the index when the next unread group
// could come before the best group in the heap.
func (q *queue) next() (*group, error) {
	// Unread groups sort after (lastTurn, lastGrp), the last one read; read
	// on only while that could still come before the heap's best.
	for !q.drained && (len(q.heap) == 0 || store.TurnBefore(q.lastTurn, q.lastGrp, q.heap[0].turn, q.heap[0].grp)) {
		if err := q.fill(); err != nil {
			return nil, err
		}
	}
	if len(q.heap) == 0 {
		return nil, nil
	}
	return heap.Pop(&q.heap).(*group), nil
}

// wins is how many turns in a row g wins, at most want: the turns
// g.turn + i/weight that come before the next group in the heap (or the
// first group not read yet), ties going to the smaller group name.
func (q *queue) wins(g *group, want int) int {
	var rivalTurn float64
	var rivalGrp string
	switch {
	case len(q.heap) > 0 && (q.drained || store.TurnBefore(q.heap[0].turn, q.heap[0].grp, q.lastTurn, q.lastGrp)):
		rivalTurn, rivalGrp = q.heap[0].turn, q.heap[0].grp
	case !q.drained:
		rivalTurn, rivalGrp = q.lastTurn, q.lastGrp
	default:
		return want // no rival
	}
	return store.TurnsWon(g.turn, g.grp, g.weight, rivalTurn, rivalGrp, want)
}

// served records that g handed out n jobs.
func (q *queue) served(g *group, n int) {
	if !q.moved || g.turn > q.vclock {
		q.vclock, q.moved = g.turn+float64(n-1)/g.weight, true
	}
	g.turn += float64(n) / g.weight
	g.pending -= n
	g.running += n
	if g.crossRun != nil {
		*g.crossRun += n
	}
	g.bandCount += n
	if !g.served {
		g.served = true
		q.touched = append(q.touched, g)
	}
	if g.pending > 0 {
		heap.Push(&q.heap, g)
	}
}

// save writes the turns back.
func (q *queue) save() error {
	for _, g := range q.touched {
		if _, err := q.w.exec(`UPDATE rota_groups SET turn = ?, band_count = ? WHERE type = ? AND grp = ?`,
			g.turn, g.bandCount, g.typ, g.grp); err != nil {
			return fmt.Errorf("sqlite: accept: save turns: %w", err)
		}
	}
	if q.moved {
		if _, err := q.w.exec(`UPDATE rota_types SET vclock = max(vclock, ?) WHERE name = ?`, q.vclock, q.typ); err != nil {
			return fmt.Errorf("sqlite: accept: save clock: %w", err)
		}
	}
	return nil
}

// candidate is a due job a group offers.
type candidate struct {
	id       int64
	priority int
	runAt    int64
	retry    bool
}

// better orders candidates across types: due retries first, then
// priority, run time, id.
func better(a, b candidate) bool {
	if a.retry != b.retry {
		return a.retry
	}
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.runAt != b.runAt {
		return a.runAt < b.runAt
	}
	return a.id < b.id
}

// offer returns up to n of g's due jobs in order: due retries first, then
// the rest; with a counting scheme, n is 1 and the band is the scheme's.
func (w *writeTx) offer(g *group, cfg typeConfig, dueBy int64, n int) ([]candidate, error) {
	band := ""
	var alt string
	if !cfg.bands.IsZero() {
		n = 1
		band, alt = " AND priority > 0", " AND priority <= 0"
		if !cfg.bands.Next(g.bandCount) {
			band, alt = alt, band
		}
	}
	out, err := w.offerFrom(g, dueBy, n, band)
	if err == nil && len(out) == 0 && band != "" {
		out, err = w.offerFrom(g, dueBy, n, alt) // the wanted band is empty: fall back
	}
	return out, err
}

func (w *writeTx) offerFrom(g *group, dueBy int64, n int, band string) ([]candidate, error) {
	var out []candidate
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
		rows, err := w.query(`SELECT id, priority, run_at FROM `+from+band+`
			AND type = ? AND grp = ? AND run_at <= ? ORDER BY priority DESC, run_at, id LIMIT ?`,
			g.typ, g.grp, dueBy, n-len(out))
		if err != nil {
			return nil, fmt.Errorf("sqlite: accept: %w", err)
		}
		for rows.Next() {
			c := candidate{retry: retry}
			if err := rows.Scan(&c.id, &c.priority, &c.runAt); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: accept: %w", err)
			}
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
// them to dst in the candidates' order. The statement returns only what it
// does not set itself (claimColumns); the rest comes from its arguments.
// Jobs are read straight into dst, which accept sizes for the whole batch,
// since a job is a large struct and a drain claims tens of thousands a
// second.
func (w *writeTx) claim(dst []store.Job, g *group, cands []candidate, worker string, leaseMicros, now int64) ([]store.Job, error) {
	buf := make([]byte, 0, 12*len(cands)+2)
	buf = append(buf, '[')
	for i, c := range cands {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, c.id, 10)
	}
	buf = append(buf, ']')
	var workerArg any
	if worker != "" {
		workerArg = worker
	}
	// The statement flips bulk, so it counts the jobs itself (0003).
	rows, err := w.query(`UPDATE rota_jobs SET state = 1, token = lower(hex(randomblob(16))), worker = ?,
		lease_until = ?, lease_timeout = ?, attempt = attempt + 1, started_at = ?, cancel_requested = 0, updated_at = ?,
		bulk = NOT bulk
		WHERE id IN (SELECT value FROM json_each(?)) AND state = 0 RETURNING `+claimColumns,
		workerArg, now+leaseMicros, leaseMicros, now, now, string(buf))
	if err != nil {
		return dst, fmt.Errorf("sqlite: accept: claim: %w", err)
	}
	defer rows.Close()
	base := len(dst)
	dst = slices.Grow(dst, len(cands))[:base+len(cands)]
	seg := dst[base:]
	n := 0
	for rows.Next() {
		if n == len(seg) {
			return dst[:base], fmt.Errorf("sqlite: accept: claimed more jobs than the %d asked for", len(cands))
		}
		j := &seg[n]
		*j = store.Job{Type: g.typ, Group: g.grp, State: store.Running, Worker: worker,
			LeaseUntil: fromMicros(now + leaseMicros), StartedAt: fromMicros(now), UpdatedAt: fromMicros(now)}
		if err := scanClaimed(rows, j); err != nil {
			return dst[:base], fmt.Errorf("sqlite: accept: claim: %w", err)
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
	if err := w.countBulk(g.typ, g.grp, -n, n); err != nil {
		return dst[:base], err
	}
	// Put the jobs in the candidates' order, in place: each swap moves one
	// job to its final place.
	if n > 1 {
		rank := make(map[int64]int, n)
		for i, c := range cands {
			rank[c.id] = i
		}
		for i := range seg {
			for {
				r, ok := rank[seg[i].ID]
				if !ok {
					return dst[:base], fmt.Errorf("sqlite: accept: job %d was not a candidate", seg[i].ID)
				}
				if r == i {
					break
				}
				seg[i], seg[r] = seg[r], seg[i]
			}
		}
	}
	return dst, nil
}

// claimColumns are what a claim does not set itself.
const claimColumns = `id, key, priority, run_at, data, attempt, max_attempts, backoff_base, backoff_max, token,
	resubmit, progress, last_error, errors, result, created_at, finished_at`

// scanClaimed reads claimColumns into j, as scanJob does for all columns.
func scanClaimed(sc scanner, j *store.Job) error {
	var (
		key, token, lastErr, errs  sql.NullString
		finished                   sql.NullInt64
		runAt, created, base, maxB int64
		data, result               []byte
	)
	if err := sc.Scan(&j.ID, &key, &j.Priority, &runAt, &data, &j.Attempt, &j.MaxAttempts, &base, &maxB, &token,
		&j.Resubmit, &j.Progress, &lastErr, &errs, &result, &created, &finished); err != nil {
		return err
	}
	j.Key, j.Token, j.LastError = key.String, token.String, lastErr.String
	j.RunAt = fromMicros(runAt)
	j.Data = data
	j.BackoffBase, j.BackoffMax = time.Duration(base)*time.Microsecond, time.Duration(maxB)*time.Microsecond
	if len(result) > 0 {
		j.Result = result
	}
	if errs.Valid && errs.String != "" {
		if err := json.Unmarshal([]byte(errs.String), &j.Errors); err != nil {
			return fmt.Errorf("job %d: decode errors: %w", j.ID, err)
		}
	}
	j.CreatedAt = fromMicros(created)
	j.FinishedAt = fromNullMicros(finished)
	return nil
}

func (w *writeTx) accept(p store.AcceptParams, types []string) (store.AcceptResult, error) {
	var res store.AcceptResult
	now := micros(w.now)
	dueBy := now
	if !p.DueBy.IsZero() {
		dueBy = micros(p.DueBy)
	}
	// A group's running jobs across types are counted once per accept and
	// shared by every type's queue, so that a bound across types holds
	// within one accept of several types too.
	cross := map[string]*int{}
	queues := make([]*queue, len(types))
	for i, t := range types {
		// A batch of n jobs needs at most n groups (plus one to know the
		// next rival) unless some are skipped; read more only then.
		queues[i] = &queue{w: w, typ: t, cfg: w.s.typeConfig(t), page: min(groupPage, p.Limit+1), cross: cross}
	}
	// Room for the batch up front (claims append in place), but not for a
	// long poll's ten thousand that may find one job.
	res.Jobs = make([]store.Job, 0, min(p.Limit, 1024))
	w.changes = slices.Grow(w.changes, min(p.Limit, 1024))
	take := func(q *queue, g *group, offers []candidate) error {
		before := len(res.Jobs)
		var err error
		res.Jobs, err = w.claim(res.Jobs, g, offers, p.Worker, w.s.leaseFor(q.typ, p.LeaseTimeout).Microseconds(), now)
		if err != nil {
			return err
		}
		jobs := res.Jobs[before:]
		q.served(g, len(jobs))
		for _, j := range jobs {
			w.changes = append(w.changes, store.Event{ID: j.ID, Type: j.Type, Group: j.Group, State: store.Running, Lease: store.LeaseTag(j.Token)})
		}
		return nil
	}
	var err error
	if len(queues) == 1 {
		err = w.acceptOneType(queues[0], p.Limit, dueBy, &res, take)
	} else {
		err = w.acceptTypes(queues, p.Limit, dueBy, &res, take)
	}
	if err != nil {
		return res, err
	}
	for _, q := range queues {
		if err := q.save(); err != nil {
			return res, err
		}
	}
	if len(res.Jobs) < p.Limit {
		if res.NextRunAt, err = w.nextRunAt(types); err != nil {
			return res, err
		}
	}
	return res, nil
}

type takeFunc func(q *queue, g *group, offers []candidate) error

// acceptOneType serves one type's groups in turn order; a group that wins
// several turns in a row gives that many jobs at once.
func (w *writeTx) acceptOneType(q *queue, limit int, dueBy int64, res *store.AcceptResult, take takeFunc) error {
	for len(res.Jobs) < limit {
		g, err := q.next()
		if err != nil || g == nil {
			return err
		}
		if g.atLimit() {
			continue // skipped in this accept; its turn stays
		}
		offers, err := w.offer(g, q.cfg, dueBy, min(q.wins(g, limit-len(res.Jobs)), g.room()))
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
// group, and the best offer across types goes first.
func (w *writeTx) acceptTypes(queues []*queue, limit int, dueBy int64, res *store.AcceptResult, take takeFunc) error {
	type head struct {
		g *group
		c candidate
	}
	heads := make([]*head, len(queues))
	for len(res.Jobs) < limit {
		for i, q := range queues {
			for heads[i] == nil {
				g, err := q.next()
				if err != nil {
					return err
				}
				if g == nil {
					break
				}
				if g.atLimit() {
					continue
				}
				offers, err := w.offer(g, q.cfg, dueBy, 1)
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
			if h != nil && (best < 0 || better(h.c, heads[best].c)) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		h := heads[best]
		heads[best] = nil
		if h.g.atLimit() {
			continue // another type's job of the group used up a bound across types
		}
		if err := take(queues[best], h.g, []candidate{h.c}); err != nil {
			return err
		}
	}
	return nil
}

// nextRunAt is the earliest run time among pending jobs of the types.
func (w *writeTx) nextRunAt(types []string) (time.Time, error) {
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
