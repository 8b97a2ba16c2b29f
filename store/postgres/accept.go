package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/fair"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// Accept hands out due jobs fairly, with the rules of store/sqlite
// (docs/fairness.md): within a type, groups take turns in weighted
// round-robin order (rota.groups.turn), and each group gives its best jobs.
//
// An accept reads the groups of each type from the front of an index in
// turn order, a page at a time, together with their settings, and plans
// in memory which groups give how many jobs (a group that wins several
// turns in a row gives that many). It then claims the plan in one
// statement: per group, its due retries and then its other due jobs in
// priority, run time, id order, skipping rows that other claimers hold
// (FOR UPDATE SKIP LOCKED), so that concurrent acceptors, on this node or
// others, take different jobs of one group at once. A group that gives
// fewer jobs than planned (its other jobs are not due, or others hold them)
// is passed over, and the rest of the batch is planned again.
//
// Groups with a bound on running jobs are served under a transaction-level
// advisory lock per group name, taken before their running jobs are read,
// so that bounds hold across nodes; see lock_group in migration 0002 and
// "Fairness" in docs/postgres.md. A type with a bound on its running jobs
// (TypeConfig.MaxRunning) is served under an advisory lock of its own,
// taken before any of its groups' locks and waited for (lock_type in
// migration 0014). A type with a rate is served under the same lock, and
// a group with a rate under its group's, which the accept holds from the
// read of the token bucket to the commit that writes back what it spent
// (lock_type_tokens in migration 0020). When neither the type's bound nor
// its rate can bind the accept, its first step takes that lock, checks
// and charges them in the statement that claims (headLimitedSQL).

// queue is one type's groups during one accept (fair.Queue), with the
// type's bound per group, read with the first page.
type queue struct {
	*fair.Queue
	gmax   int64
	bound  *fair.Bound  // the bound on the type's running jobs; nil: none
	rate   *fair.Bucket // the type's rate, read under its lock (lockTypeTokens); nil: none
	paused bool         // the type is paused: its groups give nothing
}

// pageSQL reads the next groups with pending jobs in turn order, with their
// settings and the type's.
const pageSQL = `SELECT g.grp, g.turn, g.pending, g.band_count,
	coalesce(o.max_running, 0), coalesce(o.weight, 0), coalesce(al.max_running, 0), coalesce(al.weight, 0),
	coalesce(o.paused, false) OR coalesce(al.paused, false),
	(SELECT ARRAY[y.bands_high, y.bands_low, y.group_max_running, y.paused::int, y.max_running, y.rate_n, y.rate_per, y.burst] FROM rota.types y WHERE y.name = $1),
	ARRAY[coalesce(o.rate_n, 0), coalesce(o.rate_per, 0), coalesce(o.burst, 0), coalesce(al.rate_n, 0), coalesce(al.rate_per, 0), coalesce(al.burst, 0)]
FROM (SELECT grp, turn, pending, band_count FROM rota.groups
	WHERE type = $1 AND pending > 0 AND (turn, grp) > ($2::float8, $3::text)
	ORDER BY turn, grp LIMIT $4) g
LEFT JOIN rota.group_config o ON o.grp = g.grp AND o.type = $1
LEFT JOIN rota.group_config al ON al.grp = g.grp AND al.type = ''
ORDER BY g.turn, g.grp`

// pageArgs are the arguments of pageSQL for q's next page.
func (q *queue) pageArgs() []any {
	first, turn, name, limit := q.Cursor()
	if first {
		turn, name = -1, ""
	}
	return []any{q.Type, turn, name, limit}
}

// newQueue returns the queue of typ, reading pages of groups with pageSQL.
func (a *acceptor) newQueue(typ string, first int) *queue {
	q := &queue{}
	q.Queue = fair.NewQueue(typ, store.Bands{}, first, func(_ bool, _ float64, _ string, _ int) ([]*fair.Group, error) {
		r, err := a.t.query(pageSQL, q.pageArgs()...)
		if err != nil {
			return nil, fmt.Errorf("groups: %w", err)
		}
		return a.load(q, r)
	})
	return q
}

// load reads a page of groups (rows of pageSQL), with their settings and,
// with the first page, the type's.
func (a *acceptor) load(q *queue, r rows) ([]*fair.Group, error) {
	defer r.Close()
	first, _, _, _ := q.Cursor()
	var out []*fair.Group
	for r.Next() {
		g := &fair.Group{Type: q.Type}
		var ownMax, allMax int64
		var ownW, allW float64
		var typeCfg, rates []int64
		if err := r.Scan(&g.Name, &g.Turn, &g.Pending, &g.BandCount, &ownMax, &ownW, &allMax, &allW, &g.Paused, &typeCfg, &rates); err != nil {
			return nil, fmt.Errorf("groups: %w", err)
		}
		if first && len(typeCfg) == 8 {
			q.Bands = store.Bands{High: int(typeCfg[0]), Low: int(typeCfg[1])}
			q.gmax = typeCfg[2]
			q.paused = typeCfg[3] != 0
			if typeCfg[4] > 0 && q.bound == nil {
				q.bound = &fair.Bound{Max: typeCfg[4]}
			}
			if r, ok := rateOf(typeCfg[5:8]); ok && q.rate == nil {
				q.rate = a.bucket(bucketKey{typ: q.Type}, r)
			}
			var l limits
			if q.bound != nil {
				l |= hasBound
			}
			if q.rate != nil {
				l |= hasRate
			}
			if l != 0 {
				if old, ok := a.s.limited.Load(q.Type); ok {
					l |= old.(limits) & binds
				}
				a.s.limited.Store(q.Type, l)
			} else {
				a.s.limited.Delete(q.Type)
			}
			first = false
		}
		g.TypeBound = q.bound
		g.TypeRate = q.rate
		if len(rates) == 6 {
			if r, ok := rateOf(rates[0:3]); ok {
				g.Rate = a.bucket(bucketKey{group: true, grp: g.Name, typ: q.Type}, r)
			}
			if r, ok := rateOf(rates[3:6]); ok {
				g.CrossRate = a.bucket(bucketKey{group: true, grp: g.Name}, r)
			}
		}
		g.Paused = g.Paused || q.paused || !a.inScope(g.Name)
		g.Weight = 1
		switch {
		case ownW > 0:
			g.Weight = ownW
		case allW > 0:
			g.Weight = allW
		}
		g.Limit = q.gmax
		if ownMax > 0 && (g.Limit == 0 || ownMax < g.Limit) {
			g.Limit = ownMax
		}
		if allMax > 0 {
			c := a.crosses[g.Name]
			if c == nil {
				c = &fair.Bound{Max: allMax}
				a.crosses[g.Name] = c
			}
			g.Cross = c
		}
		out = append(out, g)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	if q.paused {
		return nil, nil // a paused type gives nothing: no need to page through its groups
	}
	return out, nil
}

// step is a run of turns one group wins: n picks from band count bc on.
type step struct {
	g  *fair.Group
	n  int64
	bc int64
}

// plan simulates up to need turns of q's round robin (fair.Group.Plan),
// noting in start where each group was before, to settle the round with
// what was claimed rather than what was planned.
func (a *acceptor) plan(q *queue, need int64, start map[*fair.Group]fair.Mark) ([]step, error) {
	var steps []step
	extra := map[*fair.Bound]int64{}
	for planned := int64(0); planned < need; {
		g, err := q.Next()
		if err != nil {
			return nil, err
		}
		if g == nil {
			break
		}
		if g.Out {
			continue
		}
		if err := a.lockType(g); err != nil {
			return nil, err
		}
		if g.Bounded() && !g.Exact {
			ok, err := a.lock(g, g == a.waitFor)
			if err != nil {
				return nil, err
			}
			if !ok { // another accept serves it now: serve another group
				g.Out = true
				a.busy = append(a.busy, g)
				continue
			}
		}
		room := g.Room(extra)
		if room == 0 {
			if _, planned := start[g]; !planned && g.Room(nil) == 0 {
				g.Out = true // at its bound: its turn stays
			} // else at its bound with the turns planned, its own or other
			// groups' under a shared bound: the next round sees what they
			// claimed
			continue
		}
		n := min(q.Wins(g, need-planned), room, g.Pending)
		if _, ok := start[g]; !ok {
			start[g] = g.Mark()
		}
		steps = append(steps, step{g: g, n: n, bc: g.BandCount})
		g.Plan(n)
		for _, b := range g.Shared() {
			if b != nil {
				extra[b] += n
			}
		}
		q.Push(g)
		planned += n
	}
	return steps, nil
}

// candidate is a due job a plan entry found, and the job once claimed.
type candidate struct {
	fair.Candidate
	job *store.Job
}

func cmpCandidates(x, y candidate) int { return fair.Compare(x.Candidate, y.Candidate) }

// jobCandidate is a claimed job as a candidate.
func jobCandidate(j *store.Job) candidate { return candidate{fair.JobCandidate(j), j} }

type entryKey struct {
	g    *fair.Group
	band fair.Band
}

// entries is a round's plan for the database: how many jobs of each group
// and band, in order of first use.
type entries struct {
	keys  []entryKey
	n     map[entryKey]int64
	index map[entryKey]int
}

func (a *acceptor) entries(q *queue, steps []step, into *entries) {
	add := func(k entryKey, n int64) {
		if _, ok := into.n[k]; !ok {
			into.index[k] = len(into.keys)
			into.keys = append(into.keys, k)
		}
		into.n[k] += n
	}
	if q.Bands.IsZero() {
		for _, st := range steps {
			add(entryKey{st.g, fair.AnyBand}, st.n)
		}
		return
	}
	// With a counting scheme, each pick falls back to the other band when
	// its own is empty: so a group's picks are looked for in both bands,
	// and chosen among what was found (see round).
	for _, st := range steps {
		if !st.g.HighDone {
			add(entryKey{st.g, fair.HighBand}, st.n)
		}
		if !st.g.LowDone {
			add(entryKey{st.g, fair.LowBand}, st.n)
		}
	}
}

// args are the plan's arrays for planSQL ($1..$5); prio, when set, narrows
// every entry's band to that one priority (AcceptParams.Priority).
func (e *entries) args(prio *int) []any {
	n := len(e.keys)
	types, grps := make([]string, n), make([]string, n)
	los, his, ns := make([]int64, n), make([]int64, n), make([]int32, n)
	for i, k := range e.keys {
		types[i], grps[i] = k.g.Type, k.g.Name
		los[i], his[i] = k.band.Range()
		if prio != nil {
			los[i], his[i] = max(los[i], int64(*prio)), min(his[i], int64(*prio))
		}
		ns[i] = int32(e.n[k])
	}
	return []any{types, grps, los, his, ns}
}

// pickSQL finds, per plan entry e (a row of the CTE plan: type, grp, lo,
// hi, n, e), up to n due jobs of a group in a band of priorities: its due
// retries first, then its other due jobs, each in priority, run time, id
// order, and locks them, skipping jobs that others hold and jobs whose
// deadline has passed (lifecycle.PastDeadline). due is the due-by time.
func pickSQL(due string) string {
	return strings.ReplaceAll(`
r AS (SELECT p.e, p.type, p.grp, c.id, true AS retry, c.priority, c.run_at FROM plan p CROSS JOIN LATERAL (
	SELECT j.id, j.priority, j.run_at FROM rota.jobs j
	WHERE j.state = 0 AND j.attempt > 0 AND j.type = p.type AND j.grp = p.grp AND j.priority BETWEEN p.lo AND p.hi
		AND j.run_at <= coalesce(DUE::timestamptz, now()) AND (j.expires_at IS NULL OR j.expires_at > now())
	ORDER BY j.priority DESC, j.run_at, j.id LIMIT p.n FOR UPDATE SKIP LOCKED) c),
f AS (SELECT p.e, p.type, p.grp, c.id, false AS retry, c.priority, c.run_at FROM plan p
	LEFT JOIN (SELECT r.e, count(*) AS k FROM r GROUP BY r.e) rk ON rk.e = p.e
	CROSS JOIN LATERAL (
	SELECT j.id, j.priority, j.run_at FROM rota.jobs j
	WHERE j.state = 0 AND j.attempt = 0 AND j.type = p.type AND j.grp = p.grp AND j.priority BETWEEN p.lo AND p.hi
		AND j.run_at <= coalesce(DUE::timestamptz, now()) AND (j.expires_at IS NULL OR j.expires_at > now())
	ORDER BY j.priority DESC, j.run_at, j.id LIMIT p.n - coalesce(rk.k, 0) FOR UPDATE SKIP LOCKED) c
	WHERE p.n > coalesce(rk.k, 0)),
picked AS (SELECT * FROM r UNION ALL SELECT * FROM f)`, "DUE", due)
}

// planSQL picks the jobs of a plan given as arrays $1..$5; $6 is the
// due-by time.
var planSQL = `plan AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::int[]) WITH ORDINALITY AS p(type, grp, lo, hi, n, e)),` + pickSQL("$6")

// claimSQL ends a statement that leases the rows of picked (id, e, type,
// grp) to the worker: ctes are more CTEs, where more conditions (with no
// reference to the rows), returning more columns (", …") after the job's
// and e.
// The lease length comes from the request ($arg), else the type's
// setting, else the default ($arg+1); $arg+2 names the worker. set_config
// makes the transaction commit without waiting for the WAL flush: losing a
// claim in a database crash only makes the job run again.
//
// The claimed rows are found by primary key (j.id = ANY(ARRAY(…))), not by
// a join to picked alone: the generic plan PostgreSQL switches to after a
// prepared statement's fifth run estimated over a thousand picked rows and
// hashed them against a sequential scan of the whole hot table, per claim
// (measured: 80-90 µs of server CPU per job instead of about 20).
func claimSQL(arg int, ctes, where, returning string) string {
	return fmt.Sprintf(`,
lt AS (SELECT p.id, p.e, coalesce($%d::bigint, nullif(t.lease_timeout, 0), $%d::bigint) AS us, nullif(t.run_timeout, 0) AS tt
	FROM picked p LEFT JOIN rota.types t ON t.name = p.type)`, arg, arg+1) + ctes + fmt.Sprintf(`
UPDATE rota.jobs j SET state = 1, token = translate(gen_random_uuid()::text, '-', ''), worker = $%d,
	lease_timeout = coalesce(j.retry_after, lt.us), lease_until = now() + least(coalesce(j.retry_after, lt.us), coalesce(j.run_timeout, lt.tt)) * interval '1 microsecond',
	run_limit = coalesce(j.run_timeout, lt.tt),
	attempt = j.attempt + 1,
	prev_started_at = j.started_at, started_at = now(), cancel_requested = false, updated_at = now()
FROM lt WHERE j.id = lt.id AND j.id = ANY(ARRAY(SELECT id FROM picked))
	AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL`, arg+2) + where + `
RETURNING ` + claimedColumns + `, lt.e` + returning
}

// claimedColumns are jobColumns of a job just claimed, whose Timeout is
// its run's: its own, or its type's default (run_limit), so that its worker
// holds the run to it.
var claimedColumns = strings.Replace(prefixed("j.", jobColumns), "j.run_timeout", "coalesce(j.run_limit, j.run_timeout)", 1)

// servedSQL counts jobs claimed from groups (rows of src: type, grp, n,
// w = weight): fewer pending, turns moved on by n/w as fair.Group.Serve
// moves them, band counters moved on. Group rows are locked in (type, grp)
// order.
func servedSQL(src string) string {
	return `INSERT INTO rota.groups AS g (type, grp, pending, turn, band_count)
	SELECT s.type, s.grp, -s.n, s.n / s.w, s.n FROM (` + src + `) s ORDER BY s.type COLLATE "C", s.grp COLLATE "C"
	ON CONFLICT (type, grp) DO UPDATE SET pending = g.pending + excluded.pending,
		turn = g.turn + excluded.turn, band_count = g.band_count + excluded.band_count
	RETURNING g.type, g.grp, g.pending, g.turn`
}

// headSQL is an accept's first step, for one type: it claims the jobs of
// the turns the first group wins in a row (at most $2), unless the group is
// bounded or the type has a counting scheme, and counts them. $1 is the
// type, $3 the due-by time, $4..$6 the lease arguments. It returns the
// claimed jobs with the turns the group won (the group's row is updated
// after the jobs, unreferenced, so that the claim holds it only from the
// end of the statement to its commit); and it notes in settings of its
// transaction whether it claimed fewer than $2 (rotajobs.short, for
// pageIfShortSQL and nextRunIfShortSQL) and, when the group ran out, the
// virtual clock's new turn (rotajobs.vclock, for vclockIfRanOutSQL), which
// run after it in the same round trip. So an accept that one group serves
// whole is one round trip.
var headSQL = headClaimSQL("", headTurnsSQL, "", "")

// headClaimSQL is headSQL's statement: pre are CTEs before hd (each ending
// with a comma), hd the group it serves (a row of headTurnsSQL's columns,
// or none), post more CTEs after gu, and where more conditions of the
// claim (with no reference to the rows).
func headClaimSQL(pre, hd, post, where string) string {
	return `WITH ` + pre + `hd AS (` + hd + `),
r AS (SELECT j.id FROM rota.jobs j
	WHERE j.state = 0 AND j.attempt > 0 AND j.type = $1 AND j.grp = (SELECT hd.grp FROM hd) AND j.run_at <= coalesce($3::timestamptz, now())
		AND (j.expires_at IS NULL OR j.expires_at > now())
	ORDER BY j.priority DESC, j.run_at, j.id LIMIT (SELECT hd.n FROM hd) FOR UPDATE SKIP LOCKED),
f AS (SELECT j.id FROM rota.jobs j
	WHERE j.state = 0 AND j.attempt = 0 AND j.type = $1 AND j.grp = (SELECT hd.grp FROM hd) AND j.run_at <= coalesce($3::timestamptz, now())
		AND (j.expires_at IS NULL OR j.expires_at > now())
	ORDER BY j.priority DESC, j.run_at, j.id LIMIT (SELECT hd.n FROM hd) - (SELECT count(*) FROM r) FOR UPDATE SKIP LOCKED),
picked AS (SELECT id FROM r UNION ALL SELECT id FROM f),
lt AS (SELECT coalesce($4::bigint, (SELECT nullif(y.lease_timeout, 0) FROM rota.types y WHERE y.name = $1), $5::bigint) AS us,
	(SELECT nullif(y.run_timeout, 0) FROM rota.types y WHERE y.name = $1) AS tt),
gu AS (UPDATE rota.groups g SET pending = g.pending - x.n, turn = g.turn + x.n / hd.w, band_count = g.band_count + x.n
	FROM (SELECT count(*) AS n FROM picked) x, hd WHERE g.type = $1 AND g.grp = hd.grp AND x.n > 0)` + post + `
UPDATE rota.jobs j SET state = 1, token = translate(gen_random_uuid()::text, '-', ''), worker = $6,
	lease_timeout = coalesce(j.retry_after, lt.us), lease_until = now() + least(coalesce(j.retry_after, lt.us), coalesce(j.run_timeout, lt.tt)) * interval '1 microsecond',
	run_limit = coalesce(j.run_timeout, lt.tt),
	attempt = j.attempt + 1,
	prev_started_at = j.started_at, started_at = now(), cancel_requested = false, updated_at = now()
FROM lt WHERE j.id = ANY(ARRAY(SELECT id FROM picked)) AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL
	AND (SELECT set_config('rotajobs.short', ((SELECT count(*) FROM picked) < $2)::text, true)) IS NOT NULL
	AND (SELECT set_config('rotajobs.vclock', coalesce((SELECT (hd.turn + x.n / hd.w - 1 / hd.w)::text
		FROM hd, (SELECT count(*) AS n FROM picked) x WHERE x.n > 0 AND x.n >= hd.pending), ''), true)) IS NOT NULL` + where + `
RETURNING ` + claimedColumns + `, 1::bigint, (SELECT hd.n FROM hd)`
}

// headLimitedSQL is headSQL for a type with a bound on its running jobs
// (max_running) or a rate that cannot bind this accept: $7 is the type's
// lock key. It takes the type's lock (lock_type_tokens, and lock_type
// for a bound: functions whose reads take a snapshot after the lock, so
// they see every claim and every bucket written before), refills the
// bucket by the database's clock (refillSQL: fair.Rate.Refill), and
// serves the first group as headSQL does only when the accept cannot
// reach either limit even if it claims all $2 jobs: whole tokens ≥ $2 + 1
// (so the bucket still holds a token after, and the accept has no next
// token to report) and max_running − running ≥ $2. It then writes back
// the tokens it spent, in the same statement and under the same lock that
// later accepts of the type take, on any node. Otherwise it claims
// nothing and notes rotajobs.binding = 'true' (bindingSQL reads it), and
// the accept goes on in a transaction under the lock (the rounds), where
// the tokens and the bound are shared between the groups in turn order.
var headLimitedSQL = headClaimSQL(`cfg AS MATERIALIZED (SELECT y.max_running AS mx, y.rate_n AS rn, y.rate_per AS rp, `+burstSQL("y")+` AS burst
	FROM rota.types y WHERE y.name = $1 AND y.bands_high + y.bands_low = 0 AND y.group_max_running = 0 AND NOT y.paused),
lk AS MATERIALIZED (SELECT cfg.*, tk.tokens, tk.refilled_at, tk.now_us,
		CASE WHEN cfg.mx > 0 THEN rota.lock_type($1, $7) ELSE 0 END AS running
	FROM cfg, rota.lock_type_tokens($1, $7) tk),
bk AS MATERIALIZED (SELECT lk.*, `+refillSQL("lk")+` FROM lk),
gate AS MATERIALIZED (SELECT bk.* FROM bk
	WHERE (bk.rn <= 0 OR bk.rp <= 0 OR floor(bk.t + 1e-9) >= $2::bigint + 1) AND (bk.mx <= 0 OR bk.mx - bk.running >= $2::bigint)),
`, `SELECT h.* FROM (`+headTurnsOfSQL+`) h WHERE EXISTS (SELECT FROM gate)`, `,
tu AS (UPDATE rota.types y SET tokens = greatest(gate.t - x.n, 0), refilled_at = gate.at
	FROM gate, (SELECT count(*) AS n FROM picked) x WHERE y.name = $1 AND gate.rn > 0 AND gate.rp > 0 AND x.n > 0)`, `
	AND (SELECT set_config('rotajobs.binding', (NOT EXISTS (SELECT FROM gate))::text, true)) IS NOT NULL`)

// bindingSQL reads what the headLimitedSQL before it in the same round
// trip noted: whether a limit left the head step to the rounds.
const bindingSQL = `SELECT coalesce(current_setting('rotajobs.binding', true), '') = 'true'`

// burstSQL is store.Rate.BurstOf in SQL, on the rate columns of rel:
// the burst set, else the rate's N for a rate per second, else 1.
func burstSQL(rel string) string {
	return strings.ReplaceAll(`CASE WHEN REL.burst > 0 THEN REL.burst WHEN REL.rate_per = 1000000 THEN REL.rate_n ELSE 1 END`, "REL", rel)
}

// refillSQL is fair.Rate.Refill in SQL, on the columns of rel: a bucket of
// rn jobs per rp µs up to burst, holding tokens at refilled_at (µs since
// the epoch; 0: never, a full bucket), read at now_us. It gives t, the
// tokens at at, and at, the refill's time: now_us, or refilled_at when
// the clock reads earlier (another node's transaction began first).
// TestRefillSQL runs both on random buckets.
func refillSQL(rel string) string {
	return strings.ReplaceAll(`CASE WHEN REL.rn <= 0 OR REL.rp <= 0 THEN 0::float8
		WHEN REL.refilled_at = 0 THEN REL.burst::float8
		WHEN REL.now_us <= REL.refilled_at THEN least(REL.tokens, REL.burst::float8)
		ELSE least(REL.tokens + (REL.now_us - REL.refilled_at)::float8 / 1e6 * REL.rn::float8 / (REL.rp::float8 / 1e6), REL.burst::float8) END AS t,
	CASE WHEN REL.refilled_at <> 0 AND REL.now_us <= REL.refilled_at THEN REL.refilled_at ELSE REL.now_us END AS at`, "REL", rel)
}

// headTurnsOfSQL is the group the head step serves, for type $1: the first group
// in turn order with pending jobs (grp, turn, pending, its weight w) and n,
// how many turns in a row it wins against the next group, at most $2 and
// its pending jobs: fair.TurnsWon in SQL (TestHeadTurnsWon runs both on
// random groups). It gives no row when the group has a bound or a rate,
// which the rounds serve.
const headTurnsOfSQL = `SELECT g.grp, g.turn, g.pending, w.w, greatest(1, least($2::bigint, g.pending, CASE
		WHEN r.grp IS NULL THEN $2::bigint
		WHEN g.grp < r.grp THEN floor((r.turn - g.turn) * w.w + 1e-9)::bigint + 1
		ELSE ceil((r.turn - g.turn) * w.w - 1e-9)::bigint END)) AS n
	FROM (SELECT grp, turn, pending FROM rota.groups WHERE type = $1 AND pending > 0 ORDER BY turn, grp LIMIT 1) g
	LEFT JOIN LATERAL (SELECT x.grp, x.turn FROM rota.groups x WHERE x.type = $1 AND x.pending > 0 AND (x.turn, x.grp) > (g.turn, g.grp)
		ORDER BY x.turn, x.grp LIMIT 1) r ON true
	CROSS JOIN LATERAL (SELECT coalesce(
		(SELECT c.weight FROM rota.group_config c WHERE c.grp = g.grp AND c.type = $1 AND c.weight > 0),
		(SELECT c.weight FROM rota.group_config c WHERE c.grp = g.grp AND c.type = '' AND c.weight > 0), 1) AS w) w
	WHERE NOT EXISTS (SELECT FROM rota.group_config c WHERE c.grp = g.grp AND (c.type = $1 OR c.type = '') AND (c.max_running > 0 OR c.paused OR c.rate_n > 0))`

// headTurnsSQL is headTurnsOfSQL for a type without settings that the
// rounds serve (headLimitedSQL checks the type's itself).
const headTurnsSQL = headTurnsOfSQL + `
		AND NOT EXISTS (SELECT FROM rota.types y WHERE y.name = $1 AND (y.bands_high + y.bands_low > 0 OR y.group_max_running > 0 OR y.max_running > 0 OR y.paused OR y.rate_n > 0))`

// vclockIfRanOutSQL moves the type's virtual clock ($1) to the turn that
// the headSQL before it in the same round trip noted in rotajobs.vclock:
// the turn at which its group ran out of pending jobs (acceptor.clock),
// if it did.
var vclockIfRanOutSQL = `UPDATE rota.types SET vclock = greatest(vclock, current_setting('rotajobs.vclock', true)::float8)
	WHERE name = $1 AND current_setting('rotajobs.vclock', true) <> ''`

// nextRunIfShortSQL is nextRunSQL when the headSQL before it claimed fewer
// jobs than asked: an accept that one group served whole then learns when
// to look again in the same round trip.
var nextRunIfShortSQL = nextRunSQL + ` WHERE current_setting('rotajobs.short', true) = 'true'`

// pageIfShortSQL is pageSQL when the headSQL before it claimed fewer jobs
// than asked, and nothing otherwise.
var pageIfShortSQL = `SELECT * FROM (` + pageSQL + `) p WHERE current_setting('rotajobs.short', true) = 'true'`

var (
	// claimCountedSQL claims a plan of one type and counts it, in one
	// statement (an accept outside a transaction); $10..$12 give each
	// group's weight. The group rows are updated after the jobs (gu is
	// not referenced), so that the claim holds them only from the end of
	// the statement to its commit.
	claimCountedSQL = `WITH ` + planSQL + claimSQL(7, `,
cd AS (SELECT p.type, p.grp, count(*) AS n FROM picked p GROUP BY p.type, p.grp),
gu AS (`+servedSQL(`SELECT cd.type, cd.grp, cd.n, w.w FROM cd
	JOIN unnest($10::text[], $11::text[], $12::float8[]) AS w(type, grp, w) ON w.type = cd.type AND w.grp = cd.grp`)+`)`, "",
		"")

	// claimPlanSQL claims a plan in the accept's transaction, which counts
	// it before it commits.
	claimPlanSQL = `WITH ` + planSQL + claimSQL(7, "", "", "")

	// candidatesSQL only finds and locks a plan's jobs, for accepts of
	// several types, which choose among them.
	candidatesSQL = `WITH ` + planSQL + ` SELECT e, id, retry, priority, run_at FROM picked`

	// claimIDsSQL claims jobs the accept's transaction locked.
	claimIDsSQL = `WITH picked AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS p(id, e, type))` +
		claimSQL(4, "", "", "")

	servedFlushSQL = servedSQL(`SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::float8[]) AS u(type, grp, n, w)`)
)

// acceptor is one accept.
type acceptor struct {
	s     *Store
	ctx   context.Context
	p     store.AcceptParams
	lease []any // $7..$9 of the claims: lease override, default, worker
	t     *txn  // where statements run: the pool, or the accept's transaction
	tx    *acceptTx
	locks map[string]bool // group names whose lock the transaction holds
	// typeLocked: the transaction holds a type's lock (lockType), and so
	// never waits for a group's
	typeLocked bool
	crosses    map[string]*fair.Bound
	buckets    map[bucketKey]*fair.Bucket // the rates of the groups read (bucket)
	tokenAt    time.Time                  // when the next token comes to a bucket the accept emptied
	// deferred: jobs claimed from a group in the accept's transaction, not
	// yet counted as not pending
	deferred map[*fair.Group]int64
	groups   []*fair.Group // served, in order of first service
	busy     []*fair.Group // passed over because another accept held their lock
	waitFor  *fair.Group   // a busy group to wait for
	jobs     []store.Job
	// jobs[:committedJobs] and t.changes[:committedChanges] were claimed
	// by statements that committed by themselves
	committedJobs, committedChanges int
	clocks                          map[string]float64      // per type: a turn for the virtual clock, when a group ran out
	inScope                         func(group string) bool // AcceptParams.Groups
	// next is the next run of the accept's type as head read it after its
	// claim, when head left the accept short; nil when it was not read.
	next *nextRun
	// fold: the types whose pending changes the accept's first round trip
	// folds into their groups before it reads them (queueFold); nil once
	// sent.
	fold []string
}

// nextRun is what nextRunSQL reads: the earliest run time of the pending
// jobs of some types, and the size of the types table.
type nextRun struct {
	at    time.Time
	types int // -1: not read
	// tokenAt is when the next token comes to a rate the claim emptied
	// (store.AcceptResult.NextTokenAt).
	tokenAt time.Time
}

// begin moves the accept into a transaction of its own, for bounds and for
// accepts of several types. The transaction begins in the round trip of
// its first statement (acceptTx).
func (a *acceptor) begin() error {
	if a.tx != nil {
		return nil
	}
	tx, err := beginAccept(a.ctx, a.s.pool)
	if err != nil {
		return err
	}
	a.tx = tx
	a.t.db = pgxDB{tx}
	if types := a.fold; types != nil {
		tx.fold = func(b *pgx.Batch) int { return a.s.queueFold(b, types) }
		a.fold = nil
	}
	return nil
}

// lock takes the lock of a bounded group and counts its running jobs. It
// only tries, so that concurrent accepts serve different groups rather
// than queue, unless wait (see claimOnce).
func (a *acceptor) lock(g *fair.Group, wait bool) (bool, error) {
	if err := a.begin(); err != nil {
		return false, err
	}
	wait = wait || a.locks[g.Name] // held: it returns at once
	var locked bool
	var running, all int64
	_, err := a.t.queryRow(`SELECT locked, coalesce(running, 0), coalesce(all_running, 0) FROM rota.lock_group($1, $2, $3, $4)`,
		[]any{g.Type, g.Name, hash64("group", a.s.cfg.Schema, g.Name), wait}, &locked, &running, &all)
	if err != nil {
		return false, fmt.Errorf("lock group %q: %w", g.Name, err)
	}
	if !locked {
		return false, nil
	}
	// The counts include what this transaction claimed so far.
	a.locks[g.Name] = true
	g.Exact = true
	g.Running = running
	if c := g.Cross; c != nil && !c.Exact {
		c.Exact = true
		c.Running = all
	}
	if (g.Rate != nil && !g.Rate.Exact) || (g.CrossRate != nil && !g.CrossRate.Exact) {
		if err := a.groupTokens(g); err != nil {
			return false, err
		}
	}
	return true, nil
}

// bucketKey names a rate's bucket: a type's ({typ: type}), a group's for a
// type ({true, group, type}) or for all types ({true, group, ""}).
type bucketKey struct {
	group    bool
	grp, typ string
}

// rateOf reads a rate's columns: jobs, period (µs), burst.
func rateOf(c []int64) (fair.Rate, bool) {
	return fair.RateOf(store.Rate{N: int(c[0]), Per: time.Duration(c[1]) * time.Microsecond}, int(c[2]))
}

// bucket is the accept's bucket of a rate, shared by the groups it
// applies to; it is read (fair.Bucket.Open) under the lock of its type or
// group before one of them gives a job.
func (a *acceptor) bucket(k bucketKey, r fair.Rate) *fair.Bucket {
	if b := a.buckets[k]; b != nil {
		return b
	}
	b := &fair.Bucket{Rate: r}
	a.buckets[k] = b
	return b
}

// groupTokens reads the buckets of g's rates, under the group's lock
// (taken just before, so the statement's snapshot follows it).
func (a *acceptor) groupTokens(g *fair.Group) error {
	r, err := a.t.query(`SELECT type, tokens, refilled_at, (extract(epoch FROM clock_timestamp()) * 1e6)::bigint
		FROM rota.group_config WHERE grp = $1 AND type IN ($2, '') AND rate_n > 0`, g.Name, g.Type)
	if err != nil {
		return fmt.Errorf("rate of group %q: %w", g.Name, err)
	}
	defer r.Close()
	for r.Next() {
		var typ string
		var tokens float64
		var at, now int64
		if err := r.Scan(&typ, &tokens, &at, &now); err != nil {
			return fmt.Errorf("rate of group %q: %w", g.Name, err)
		}
		b := g.Rate
		if typ == "" {
			b = g.CrossRate
		}
		if b != nil && !b.Exact {
			b.Open(tokens, refilledAt(at), time.UnixMicro(now).UTC())
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("rate of group %q: %w", g.Name, err)
	}
	// A rate removed since the page was read: a full bucket, for this
	// accept only.
	for _, b := range [...]*fair.Bucket{g.Rate, g.CrossRate} {
		if b != nil && !b.Exact {
			b.Open(0, time.Time{}, time.Now())
		}
	}
	return nil
}

func boolCmp(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return 1
	}
	return -1
}

// refilledAt is a bucket's refilled_at: microseconds since the epoch, 0
// for never.
func refilledAt(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// saveBuckets queues on b the writes of what the accept spent of its
// rates' tokens, to run in its transaction, and returns when the next
// token comes to a bucket it emptied.
func (a *acceptor) saveBuckets(b *pgx.Batch) time.Time {
	keys := make([]bucketKey, 0, len(a.buckets))
	var opened []*fair.Bucket
	for k, b := range a.buckets {
		if b.Exact {
			keys = append(keys, k)
			opened = append(opened, b)
		}
	}
	// One order for the rows, as for the virtual clocks.
	slices.SortFunc(keys, func(x, y bucketKey) int {
		return cmp.Or(strings.Compare(x.grp, y.grp), strings.Compare(x.typ, y.typ), boolCmp(x.group, y.group))
	})
	for _, k := range keys {
		bk := a.buckets[k]
		if bk.Running == 0 {
			continue // nothing spent: the refill is read again next time
		}
		if !k.group {
			b.Queue(a.s.q(`UPDATE rota.types SET tokens = $2, refilled_at = $3 WHERE name = $1`), k.typ, bk.Left(), bk.At.UnixMicro())
		} else {
			b.Queue(a.s.q(`UPDATE rota.group_config SET tokens = $3, refilled_at = $4 WHERE grp = $1 AND type = $2`),
				k.grp, k.typ, bk.Left(), bk.At.UnixMicro())
		}
	}
	return fair.NextToken(opened)
}

// lockType takes the lock of g's type when the type has a bound on its
// running jobs or a rate, and counts its running jobs (with this
// transaction's claims) or reads its bucket, by the database's clock, or
// both, in one round trip (with the transaction's BEGIN when it is the
// first). It waits: the lock is held only for the accepts of the type, and
// taken before its groups' locks, so every accept takes them in the same
// order.
func (a *acceptor) lockType(g *fair.Group) error {
	bound, rate := g.TypeBound, g.TypeRate
	if bound != nil && bound.Exact {
		bound = nil
	}
	if rate != nil && rate.Exact {
		rate = nil
	}
	if bound == nil && rate == nil {
		return nil
	}
	if err := a.begin(); err != nil {
		return err
	}
	key := hash64("type", a.s.cfg.Schema, g.Type)
	b := &pgx.Batch{}
	if bound != nil {
		b.Queue(a.s.q(`SELECT rota.lock_type($1, $2)`), g.Type, key)
	}
	if rate != nil {
		b.Queue(a.s.q(`SELECT tokens, refilled_at, now_us FROM rota.lock_type_tokens($1, $2)`), g.Type, key)
	}
	br, err := a.tx.batch(a.ctx, b)
	if err == nil {
		err = func() error {
			defer br.Close()
			if bound != nil {
				if err := br.QueryRow().Scan(&bound.Running); err != nil {
					return err
				}
				bound.Exact = true
			}
			if rate != nil {
				var tokens float64
				var at, now int64
				if err := br.QueryRow().Scan(&tokens, &at, &now); err != nil {
					return err
				}
				rate.Open(tokens, refilledAt(at), time.UnixMicro(now).UTC())
			}
			return br.Close()
		}()
	}
	if err != nil {
		return fmt.Errorf("lock type %q: %w", g.Type, err)
	}
	a.typeLocked = true
	return nil
}

// round plans and claims up to need jobs from the queues and appends them
// to a.jobs in accept order. It reports whether it made progress.
func (a *acceptor) round(queues []*queue, need int64) (bool, error) {
	start := map[*fair.Group]fair.Mark{}
	steps := make([][]step, len(queues))
	ents := &entries{n: map[entryKey]int64{}, index: map[entryKey]int{}}
	for i, q := range queues {
		var err error
		if steps[i], err = a.plan(q, need, start); err != nil {
			return false, err
		}
		a.entries(q, steps[i], ents)
	}
	if len(ents.keys) == 0 {
		return false, nil
	}
	// Find and claim the jobs in one statement; or, with several types or
	// a counting scheme, find and lock more than the plan needs (each
	// type's picks; each pick in both bands), choose, and claim what was
	// chosen, in the accept's transaction.
	lists := make(map[entryKey][]candidate, len(ents.keys))
	args := append(ents.args(a.p.Priority), optTime(a.p.DueBy))
	single := len(queues) == 1 && queues[0].Bands.IsZero()
	if !single {
		if err := a.begin(); err != nil {
			return false, err
		}
	}
	if single {
		query := claimPlanSQL
		args = append(args, a.lease...)
		if a.tx == nil {
			query = claimCountedSQL
			types, grps, ws := make([]string, 0, len(start)), make([]string, 0, len(start)), make([]float64, 0, len(start))
			for g := range start {
				types, grps, ws = append(types, g.Type), append(grps, g.Name), append(ws, g.Weight)
			}
			args = append(args, types, grps, ws)
		}
		r, err := a.t.query(query, args...)
		if err != nil {
			return false, err
		}
		err = func() error {
			defer r.Close()
			cs := newClaimScan()
			for r.Next() {
				j, e, err := cs.next(r)
				if err != nil {
					return err
				}
				k := ents.keys[e-1]
				lists[k] = append(lists[k], jobCandidate(j))
			}
			return r.Err()
		}()
		if err != nil {
			return false, err
		}
	} else {
		r, err := a.t.query(candidatesSQL, args...)
		if err != nil {
			return false, err
		}
		err = func() error {
			defer r.Close()
			for r.Next() {
				var c candidate
				var e int64
				if err := r.Scan(&e, &c.ID, &c.Retry, &c.Priority, &c.RunAt); err != nil {
					return err
				}
				k := ents.keys[e-1]
				lists[k] = append(lists[k], c)
			}
			return r.Err()
		}()
		if err != nil {
			return false, err
		}
	}
	// Entries that found fewer jobs than planned: their group (or band)
	// gave out, and is passed over once everything it found is taken.
	var gaveOut []entryKey
	for _, k := range ents.keys {
		l := lists[k]
		slices.SortFunc(l, cmpCandidates)
		if int64(len(l)) < ents.n[k] {
			gaveOut = append(gaveOut, k)
		}
	}
	progress := false
	passOver := func(left map[entryKey]bool) {
		for _, k := range gaveOut {
			if left[k] || len(lists[k]) > 0 {
				continue // what it found is still to be taken: plan it again
			}
			progress = true
			switch k.band {
			case fair.AnyBand:
				k.g.Out = true
			case fair.HighBand:
				k.g.HighDone = true
			case fair.LowBand:
				k.g.LowDone = true
			}
			if k.g.HighDone && k.g.LowDone {
				k.g.Out = true
			}
		}
	}
	// Each type's picks in its round-robin order, the band of each pick
	// falling back to the other when empty.
	seqs := make([][]pick, len(queues))
	// short: a type's sequence lacks picks it planned (a group gave fewer
	// than it won turns), so what comes after its end is not known yet.
	short := make([]bool, len(queues))
	for i, q := range queues {
		planned := int64(0)
		for _, st := range steps[i] {
			planned += st.n
			for n := range st.n {
				want := fair.AnyBand // the scheme's band, whatever was found
				if !q.Bands.IsZero() {
					want = fair.LowBand
					if q.Bands.Next(int(st.bc + n)) {
						want = fair.HighBand
					}
				}
				k := entryKey{st.g, want}
				if len(lists[k]) == 0 && want != fair.AnyBand {
					k.band = fair.HighBand + fair.LowBand - want
				}
				if l := lists[k]; len(l) > 0 {
					seqs[i] = append(seqs[i], pick{st.g, l[0], k})
					lists[k] = l[1:]
				}
			}
		}
		short[i] = int64(len(seqs[i])) < planned
	}
	var taken []pick
	if single {
		taken = seqs[0]
		passOver(nil)
	} else {
		// The type whose next pick ranks best goes first.
		extra := map[*fair.Bound]int64{}
		dropped := map[*fair.Group]bool{}
		next := make([]int, len(seqs))
	choose:
		for int64(len(taken)) < need {
			best := -1
			for i, s := range seqs {
				for next[i] < len(s) && dropped[s[next[i]].g] {
					next[i]++
				}
				if next[i] == len(s) && short[i] {
					// Its next pick, from a group not planned yet, may rank
					// best: plan again, passing over the groups that gave
					// out once what they found is taken.
					break choose
				}
				if next[i] < len(s) && (best < 0 || fair.Better(s[next[i]].c.Candidate, seqs[best][next[best]].c.Candidate)) {
					best = i
				}
			}
			if best < 0 {
				break
			}
			pk := seqs[best][next[best]]
			if pk.g.AcrossTypes(extra) {
				dropped[pk.g] = true // at its bound or rate across types
				pk.g.Out = true
				progress = true
				continue
			}
			next[best]++
			if pk.g.Cross != nil {
				extra[pk.g.Cross]++
			}
			if pk.g.CrossRate != nil {
				extra[&pk.g.CrossRate.Bound]++
			}
			taken = append(taken, pk)
		}
		left := map[entryKey]bool{}
		for i, s := range seqs {
			for _, pk := range s[next[i]:] {
				left[pk.k] = true
			}
		}
		passOver(left)
		if len(taken) > 0 {
			n := len(taken)
			ids, es, types := make([]int64, n), make([]int64, n), make([]string, n)
			for i, pk := range taken {
				ids[i], es[i], types[i] = pk.c.ID, int64(i), pk.g.Type
			}
			args := append([]any{ids, es, types}, a.lease...)
			r, err := a.t.query(claimIDsSQL, args...)
			if err != nil {
				return false, err
			}
			err = func() error {
				defer r.Close()
				got := 0
				cs := newClaimScan()
				for r.Next() {
					j, e, err := cs.next(r)
					if err != nil {
						return err
					}
					taken[e].c.job = j
					got++
				}
				if err := r.Err(); err != nil {
					return err
				}
				if got != n {
					return fmt.Errorf("claimed %d of %d locked jobs", got, n)
				}
				return nil
			}()
			if err != nil {
				return false, err
			}
		}
	}
	// Settle the round with what was claimed.
	claimed := map[*fair.Group]int64{}
	for _, pk := range taken {
		claimed[pk.g]++
		j := pk.c.job
		a.jobs = append(a.jobs, *j)
		a.t.changed(lifecycle.ClaimedEvent(j))
	}
	if len(taken) > 0 {
		progress = true
	}
	for g, m := range start {
		n := claimed[g]
		if n > 0 && g.Served == 0 {
			a.groups = append(a.groups, g)
		}
		g.Settle(m, n)
		if a.tx != nil {
			a.deferred[g] += n
		} else if n > 0 && g.Pending <= 0 {
			a.clock(g, g.LastTurn()) // it ran out (as far as this accept can tell)
		}
	}
	if a.tx == nil {
		a.committedJobs, a.committedChanges = len(a.jobs), len(a.t.changes)
	}
	// The next round starts from the groups as they now are.
	for _, q := range queues {
		q.Reset()
	}
	return progress, nil
}

type pick struct {
	g *fair.Group
	c candidate
	k entryKey // the plan entry that found it
}

// claimScan reads claimed jobs, each with its plan entry, reusing one
// jobScan for the rows of a query.
type claimScan struct {
	js *jobScan
	e  int64
}

func newClaimScan() *claimScan {
	c := &claimScan{}
	c.js = newJobScan(&c.e)
	return c
}

// next reads r's current row.
func (c *claimScan) next(r rows) (*store.Job, int64, error) {
	j := new(store.Job)
	if err := c.js.scan(r, j); err != nil {
		return nil, 0, err
	}
	return j, c.e, nil
}

// clock notes that g ran out of pending jobs, last served at turn v
// (fair.Group.LastTurn), for its type's virtual clock.
func (a *acceptor) clock(g *fair.Group, v float64) {
	if old, ok := a.clocks[g.Type]; !ok || v > old {
		a.clocks[g.Type] = v
	}
}

// head runs an accept's first step for one type (headSQL, or
// headLimitedSQL for a type with limits, l) and, when that leaves the
// accept short, reads the first page of its groups, in one round trip.
// The page shows the groups after the claim.
func (a *acceptor) head(q *queue, l limits) error {
	b := &pgx.Batch{}
	folds := a.s.queueFold(b, a.fold)
	a.fold = nil
	b.Queue(hotPlanSQL)
	args := append([]any{q.Type, a.p.Limit, optTime(a.p.DueBy)}, a.lease...)
	if l == 0 {
		b.Queue(a.s.q(headSQL), args...)
	} else {
		b.Queue(a.s.q(headLimitedSQL), append(args, hash64("type", a.s.cfg.Schema, q.Type))...)
		b.Queue(bindingSQL)
	}
	b.Queue(a.s.q(vclockIfRanOutSQL), q.Type)
	b.Queue(a.s.q(pageIfShortSQL), q.pageArgs()...)
	b.Queue(a.s.q(nextRunIfShortSQL), []string{q.Type})
	br := a.s.pool.SendBatch(a.ctx, b)
	defer br.Close()
	if err := readFold(br, folds); err != nil {
		return err
	}
	if _, err := br.Exec(); err != nil {
		return err
	}
	r, err := br.Query()
	if err != nil {
		return err
	}
	var grp string
	var claimed, won int64
	var e int64
	js := newJobScan(&e, &won)
	for r.Next() {
		a.jobs = append(a.jobs, store.Job{})
		j := &a.jobs[len(a.jobs)-1]
		if err := js.scan(r, j); err != nil {
			a.jobs = a.jobs[:len(a.jobs)-1]
			r.Close()
			return err
		}
		grp = j.Group
		claimed++
	}
	r.Close()
	if err := r.Err(); err != nil {
		return err
	}
	if l != 0 {
		var binding bool
		if err := br.QueryRow().Scan(&binding); err != nil {
			return fmt.Errorf("lock type %q: %w", q.Type, err)
		}
		if binding { // the next accepts take the lock first, until it no longer binds
			a.s.limited.Store(q.Type, l|binds)
		}
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("virtual clock: %w", err)
	}
	pr, err := br.Query()
	if err != nil {
		return err
	}
	gs, err := a.load(q, pr)
	if err != nil {
		return err
	}
	q.Feed(gs)
	var next sql.NullTime
	var types int
	if err := br.QueryRow().Scan(&next, &types); err != nil {
		return err
	}
	if err := br.Close(); err != nil {
		return err
	}
	a.next = &nextRun{at: nullTime(next), types: types}
	sortJobs(a.jobs)
	a.t.changes = slices.Grow(a.t.changes, len(a.jobs))
	for i := range a.jobs {
		a.t.changed(lifecycle.ClaimedEvent(&a.jobs[i]))
	}
	a.committedJobs, a.committedChanges = len(a.jobs), len(a.t.changes)
	if claimed == 0 {
		return nil
	}
	// A group that ran out has moved the virtual clock (vclockIfRanOutSQL).
	g := q.Group(grp)
	if g == nil { // not read: the accept is complete, or the group ran out
		return nil
	}
	g.Served = claimed
	a.groups = append(a.groups, g)
	// A group that gave fewer jobs than it won turns (the others are not
	// due, or others hold them) is passed over, as in a round.
	if claimed < won {
		g.Out = true
		q.Reset()
	}
	return nil
}

// limits are what binds a type's accepts: a bound on its running jobs, a
// rate, or both.
type limits uint8

const (
	hasBound limits = 1 << iota
	hasRate
	// binds: the type's last accept found a limit close to binding (or
	// could not tell), so its next accept takes the type's lock in a
	// transaction (headLocked) rather than try the head step under it
	// (headLimitedSQL).
	binds
)

// roomy reports whether q's limits, as a locked accept of q leaves them,
// let the next accept of up to limit jobs claim in the head step
// (headLimitedSQL's test, by this accept's reading).
func (q *queue) roomy(limit int) bool {
	if b := q.bound; b != nil && (!b.Exact || b.Max-b.Running < int64(limit)) {
		return false
	}
	if r := q.rate; r != nil && (!r.Exact || math.Floor(r.Left()+1e-9) < float64(limit)+1) {
		return false
	}
	return true
}

// headLocked is an accept's first step for a type its last accept found
// with a bound or a rate (l), which headSQL leaves to the rounds: it
// begins the accept's transaction, takes the type's lock, counts its
// running jobs or reads its bucket (lockType), and reads the first page
// of its groups, in one round trip.
func (a *acceptor) headLocked(q *queue, l limits) error {
	if err := a.begin(); err != nil {
		return err
	}
	key := hash64("type", a.s.cfg.Schema, q.Type)
	b := &pgx.Batch{}
	if l&hasBound != 0 {
		b.Queue(a.s.q(`SELECT rota.lock_type($1, $2)`), q.Type, key)
	} else {
		b.Queue(a.s.q(`SELECT 0::bigint FROM pg_advisory_xact_lock($1)`), key)
	}
	if l&hasRate != 0 {
		b.Queue(a.s.q(`SELECT tokens, refilled_at, now_us FROM rota.lock_type_tokens($1, $2)`), q.Type, key)
	}
	b.Queue(a.s.q(pageSQL), q.pageArgs()...)
	br, err := a.tx.batch(a.ctx, b)
	if err != nil {
		return fmt.Errorf("lock type %q: %w", q.Type, err)
	}
	defer br.Close()
	var running int64
	if err := br.QueryRow().Scan(&running); err != nil {
		return fmt.Errorf("lock type %q: %w", q.Type, err)
	}
	a.typeLocked = true
	var tokens float64
	var at, now int64
	if l&hasRate != 0 {
		if err := br.QueryRow().Scan(&tokens, &at, &now); err != nil {
			return fmt.Errorf("lock type %q: %w", q.Type, err)
		}
	}
	pr, err := br.Query()
	if err != nil {
		return err
	}
	gs, err := a.load(q, pr)
	if err != nil {
		return err
	}
	if err := br.Close(); err != nil {
		return err
	}
	q.Feed(gs)
	// What the type has now (the page read it under the lock): what was
	// read for it, or, for a limit set since the last accept, a read by
	// the rounds (lockType).
	if q.bound != nil && l&hasBound != 0 {
		q.bound.Running, q.bound.Exact = running, true
	}
	if q.rate != nil && l&hasRate != 0 {
		q.rate.Open(tokens, refilledAt(at), time.UnixMicro(now).UTC())
	}
	return nil
}

// sortJobs puts one group's claimed jobs in accept order (fair.Better).
func sortJobs(jobs []store.Job) {
	// By index: a Job is large, and this runs on every claim.
	sort.Slice(jobs, func(i, k int) bool { return fair.Better(fair.JobCandidate(&jobs[i]), fair.JobCandidate(&jobs[k])) })
}

// finish counts what the transaction claimed, moves the virtual clocks,
// and commits.
func (a *acceptor) finish() error {
	if a.tx != nil && !a.tx.begun {
		a.tx.Rollback(a.ctx) // no statement ran in it: only the connection to give back
		a.tx, a.t.db = nil, pgxDB{a.s.pool}
	}
	if a.tx != nil {
		// The group counts, the buckets' write-backs and the commit in one
		// round trip.
		b := &pgx.Batch{}
		var types, grps []string
		var ns []int64
		var ws []float64
		for _, g := range a.groups {
			if d := a.deferred[g]; d > 0 {
				types, grps, ns, ws = append(types, g.Type), append(grps, g.Name), append(ns, d), append(ws, g.Weight)
			}
		}
		if len(types) > 0 {
			b.Queue(a.s.q(servedFlushSQL), types, grps, ns, ws)
		}
		a.tokenAt = a.saveBuckets(b)
		tx := a.tx
		br, err := tx.commitWith(a.ctx, b)
		if err == nil {
			err = func() error {
				defer br.Close()
				if len(types) > 0 {
					if err := a.served(br); err != nil {
						return fmt.Errorf("group counts: %w", err)
					}
				}
				for range b.Len() - 1 - min(len(types), 1) {
					if _, err := br.Exec(); err != nil {
						return fmt.Errorf("save the tokens: %w", err)
					}
				}
				tag, err := br.Exec()
				if err == nil && tag.String() != "COMMIT" {
					err = pgx.ErrTxCommitRollback
				}
				if err != nil {
					return fmt.Errorf("commit (outcome unknown): %w", err)
				}
				return br.Close()
			}()
		}
		a.tx, a.t.db = nil, pgxDB{a.s.pool}
		tx.Rollback(context.WithoutCancel(a.ctx)) // gives the connection back; nothing to roll back once committed
		if err != nil {
			return err
		}
	}
	// The virtual clocks move after the commit, as after a claim that
	// commits by itself: a group that ran out only takes its next turn
	// from them when jobs are next added to it.
	types := make([]string, 0, len(a.clocks))
	for typ := range a.clocks {
		types = append(types, typ)
	}
	sort.Strings(types) // one order for the rows of rota.types
	for _, typ := range types {
		if _, err := a.t.exec(`UPDATE rota.types SET vclock = greatest(vclock, $2) WHERE name = $1`, typ, a.clocks[typ]); err != nil {
			return fmt.Errorf("virtual clock: %w", err)
		}
	}
	return nil
}

// served reads the rows of servedFlushSQL, noting the groups that ran out
// for their types' virtual clocks.
func (a *acceptor) served(br pgx.BatchResults) error {
	r, err := br.Query()
	if err != nil {
		return err
	}
	defer r.Close()
	byKey := map[groupKey]*fair.Group{}
	for _, g := range a.groups {
		byKey[groupKey{g.Type, g.Name}] = g
	}
	for r.Next() {
		var typ, grp string
		var pending int64
		var turn float64
		if err := r.Scan(&typ, &grp, &pending, &turn); err != nil {
			return err
		}
		if g := byKey[groupKey{typ, grp}]; g != nil && pending == 0 {
			g.Turn = turn
			a.clock(g, g.LastTurn())
		}
	}
	return r.Err()
}

// claim leases up to p.Limit due jobs of the types (known names). When it
// read the types' next run after its claims, it returns that too.
func (s *Store) claim(ctx context.Context, p store.AcceptParams, names []string) ([]store.Job, *nextRun, error) {
	if s.closed.Load() {
		return nil, nil, s.wrap("accept", store.ErrClosed)
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	for attempt := 0; ; attempt++ {
		jobs, next, tokenAt, err := s.claimOnce(ctx, p, names)
		if err == nil && !tokenAt.IsZero() {
			if next == nil {
				next = &nextRun{types: -1}
			}
			next.tokenAt = tokenAt
		}
		if err != nil && len(jobs) == 0 && attempt == 0 && pgconn.SafeToRetry(err) && ctx.Err() == nil && !s.closed.Load() {
			continue
		}
		if err != nil && len(jobs) > 0 {
			err = nil // they are leased: hand them out rather than leave them to their leases
		}
		if err == nil {
			n := len(jobs)
			if jobs = s.skipLate(ctx, jobs); len(jobs) < n && next != nil {
				next = &nextRun{types: -1, tokenAt: next.tokenAt} // jobs went back to pending: read the next run again
			}
			s.familyOf(ctx, jobs)
			s.depsOfClaimed(ctx, jobs)
		} else {
			next = nil
		}
		return jobs, next, s.wrap("accept", err)
	}
}

// familyOf gives the children among jobs their parent's data and the
// parents among them their children that ended (lifecycle's family
// rules). The jobs are leased already, so a failure to read these is
// logged and the jobs are handed out without them, rather than left to
// their leases.
func (s *Store) familyOf(ctx context.Context, jobs []store.Job) {
	var parents, children []int64
	for _, j := range jobs {
		if j.Parent != 0 {
			parents = append(parents, j.Parent)
		}
		if j.HasChildren {
			children = append(children, j.ID)
		}
	}
	if len(parents) == 0 && len(children) == 0 {
		return
	}
	data := map[int64][]byte{}
	ended := map[int64][]store.Child{}
	err := s.read(ctx, "read families", func(t *txn) error {
		clear(data)
		clear(ended)
		if len(parents) > 0 {
			r, err := t.query(bothTables(`SELECT id, data FROM %s WHERE id = ANY($1)`), parents)
			if err != nil {
				return err
			}
			for r.Next() {
				var id int64
				var d []byte
				if err := r.Scan(&id, &d); err != nil {
					r.Close()
					return err
				}
				data[id] = d
			}
			r.Close()
			if err := r.Err(); err != nil {
				return err
			}
		}
		if len(children) > 0 {
			r, err := t.query(`SELECT parent_id, id, state, data, result, coalesce(last_error, '') FROM rota.jobs_ended
				WHERE parent_id = ANY($1) ORDER BY id`, children)
			if err != nil {
				return err
			}
			for r.Next() {
				var parent int64
				var c store.Child
				var state int16
				var result []byte
				if err := r.Scan(&parent, &c.ID, &state, &c.Data, &result, &c.LastError); err != nil {
					r.Close()
					return err
				}
				c.State = store.State(state)
				if len(result) > 0 {
					c.Result = result
				}
				ended[parent] = append(ended[parent], c)
			}
			r.Close()
			return r.Err()
		}
		return nil
	})
	if err != nil {
		s.log.Error("rota postgres: accept: could not read the families of the jobs it claimed; they are handed out without", "err", err)
		return
	}
	for i := range jobs {
		j := &jobs[i]
		if j.Parent != 0 {
			j.ParentData = data[j.Parent]
		}
		if j.HasChildren {
			j.Children = ended[j.ID]
		}
	}
}

// depsOfClaimed gives the jobs among jobs that were added after others
// their dependencies' outcomes; the plain claim pays nothing for them. As
// with families, a failure to read them is logged and the jobs are
// handed out without.
func (s *Store) depsOfClaimed(ctx context.Context, jobs []store.Job) {
	var ids []int64
	for _, j := range jobs {
		if j.HasDeps {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	deps, err := s.depsOf(ctx, ids)
	if err != nil {
		s.log.Error("rota postgres: accept: could not read the dependencies of the jobs it claimed; they are handed out without", "err", err)
		return
	}
	for i := range jobs {
		if jobs[i].HasDeps {
			jobs[i].Deps = deps[jobs[i].ID]
		}
	}
}

// skipLate takes back the jobs just claimed that missed slots under
// store.MissedSkip (engine.SkipLate): they go to their next slot without
// running, and the rest are returned. It is a transaction of its own after
// the claim's, fenced by the claim's token; should it fail, the job runs
// (once, late) rather than wait for its lease to expire.
func (s *Store) skipLate(ctx context.Context, jobs []store.Job) []store.Job {
	var late []int
	for i := range jobs {
		if jobs[i].Schedule != "" && jobs[i].Missed == store.MissedSkip {
			late = append(late, i)
		}
	}
	if len(late) == 0 {
		return jobs
	}
	var skipped map[int64]bool
	err := s.inTx(ctx, "skip missed slots", func(t *txn) error {
		var err error
		skipped, err = engine.SkipLate(t, jobs)
		return err
	})
	if err != nil || len(skipped) == 0 {
		return jobs
	}
	return slices.DeleteFunc(jobs, func(j store.Job) bool { return skipped[j.ID] })
}

func (s *Store) claimOnce(ctx context.Context, p store.AcceptParams, names []string) ([]store.Job, *nextRun, time.Time, error) {
	var override *int64
	if p.LeaseTimeout > 0 {
		v := us(p.LeaseTimeout)
		override = &v
	}
	inScope, err := check.AcceptScope(&p)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	if inScope == nil {
		inScope = func(string) bool { return true }
	}
	a := &acceptor{
		s: s, ctx: ctx, p: p, inScope: inScope,
		lease:    []any{override, us(store.DefaultLeaseTimeout), optString(cleanText(p.Worker))},
		t:        &txn{s: s, ctx: ctx, db: pgxDB{s.pool}},
		locks:    map[string]bool{},
		crosses:  map[string]*fair.Bound{},
		buckets:  map[bucketKey]*fair.Bucket{},
		deferred: map[*fair.Group]int64{},
		clocks:   map[string]float64{},
		fold:     names,
	}
	queues := make([]*queue, len(names))
	for i, n := range names {
		// A batch of n jobs needs at most n groups (plus one to know the
		// next rival) unless some are passed over; read more only then.
		queues[i] = a.newQueue(n, min(fair.PageSize, p.Limit+1))
	}
	err = func() error {
		// The first step that claims in one statement knows no priority
		// or group filter; a filtered accept plans its rounds from the
		// start.
		if len(queues) > 1 || p.Priority != nil || len(p.Groups) > 0 || len(p.SkipGroups) > 0 {
			if err := a.begin(); err != nil {
				return err
			}
		} else if l, ok := s.limited.Load(names[0]); ok && l.(limits)&binds != 0 {
			if err := a.headLocked(queues[0], l.(limits)&^binds); err != nil {
				return err
			}
		} else if ok {
			if err := a.head(queues[0], l.(limits)); err != nil {
				return err
			}
		} else if err := a.head(queues[0], 0); err != nil {
			return err
		}
		headJobs := len(a.jobs)
		if a.returnsHead() {
			return a.finish()
		}
		defer func() {
			if len(a.jobs) > headJobs {
				a.next = nil // read before these claims
			}
		}()
		for need := int64(p.Limit - len(a.jobs)); need > 0; need = int64(p.Limit - len(a.jobs)) {
			progress, err := a.round(queues, need)
			if err != nil {
				return err
			}
			if progress {
				continue
			}
			// Nothing to take but groups that other accepts serve: wait
			// for the first of them, as its next acceptor, rather than
			// come back empty. Only an accept that holds no group's lock
			// and no type's waits, so accepts cannot wait for each other
			// in a circle.
			if len(a.jobs) > 0 || len(a.locks) > 0 || a.typeLocked || len(a.busy) == 0 || a.waitFor != nil {
				break
			}
			g := a.busy[0]
			a.waitFor, g.Out = g, false
			for _, q := range queues {
				if q.Type == g.Type {
					q.Push(g)
				}
			}
		}
		return a.finish()
	}()
	if err != nil {
		if a.tx != nil {
			a.tx.Rollback(context.WithoutCancel(ctx))
		}
		// What committed by itself stays claimed.
		a.jobs, a.t.changes = a.jobs[:a.committedJobs], a.t.changes[:a.committedChanges]
		s.committed(a.t.changes)
		return a.jobs, nil, time.Time{}, err
	}
	s.committed(a.t.changes)
	if len(queues) == 1 && a.typeLocked {
		// What the type's limits left, read under its lock, tells
		// whether the next accept may try the head step.
		q := queues[0]
		if l, ok := s.limited.Load(q.Type); ok {
			if q.roomy(p.Limit) {
				s.limited.CompareAndSwap(q.Type, l, l.(limits)&^binds)
			} else {
				s.limited.CompareAndSwap(q.Type, l, l.(limits)|binds)
			}
		}
	}
	return a.jobs, a.next, a.tokenAt, nil
}

// Accept leases due jobs to a worker, fairly across groups (see above).
func (s *Store) Accept(ctx context.Context, p store.AcceptParams) (store.AcceptResult, error) {
	pats, err := check.Accept(&p)
	if err != nil {
		return store.AcceptResult{}, err
	}
	var res store.AcceptResult
	// The known types are counted before the patterns are resolved: a
	// type learnt between the two (another node's change) then still
	// counts as unknown below, and the patterns are resolved again.
	known := s.knownTypes()
	names := s.resolve(pats)
	var read *nextRun
	if res.Jobs, read, err = s.claim(ctx, p, names); err != nil {
		return res, err
	}
	if len(res.Jobs) >= p.Limit {
		return res, nil
	}
	if read != nil {
		res.NextTokenAt = read.tokenAt
	}
	// What follows only tells a waiting acceptor when to look again (the
	// claim may have read it already). Jobs already leased are returned
	// even if it fails, rather than left to their leases.
	var next time.Time
	var types int
	if read != nil && read.types >= 0 {
		next, types = read.at, read.types
	} else if next, types, err = s.nextRun(ctx, names); err != nil {
		if len(res.Jobs) > 0 {
			return res, nil
		}
		return res, err
	}
	patterned := slices.ContainsFunc(pats, func(p glob.Pattern) bool { return !p.Literal() })
	if patterned && types > known {
		// Another node registered a type this node has not heard of:
		// a pattern may match it.
		if err := s.reloadTypes(ctx); err != nil {
			if len(res.Jobs) > 0 {
				return res, nil
			}
			return res, err
		}
		var added []string
		for _, n := range s.resolve(pats) {
			if !slices.Contains(names, n) {
				added = append(added, n)
			}
		}
		if len(added) > 0 {
			more := p
			more.Limit = p.Limit - len(res.Jobs)
			jobs, _, err := s.claim(ctx, more, added)
			if err != nil {
				if len(res.Jobs) > 0 {
					return res, nil
				}
				return res, err
			}
			res.Jobs = append(res.Jobs, jobs...)
			names = append(names, added...)
			if len(res.Jobs) >= p.Limit {
				return res, nil
			}
			if next, _, err = s.nextRun(ctx, names); err != nil {
				return res, nil
			}
		}
	}
	res.NextRunAt = next
	return res, nil
}

// returnsHead reports whether the accept hands out what its first step
// (head) claimed without further rounds: when its caller waits for jobs
// (AcceptParams.Wait), head claimed some and read the next run, and no
// other job is due by then: the caller is not draining a backlog. A job
// that arrives after that read is left to the next accept, which its
// notification wakes, rather than delay the claimed jobs by a round or two
// (a round, its clock write and a next-run read of its own were 51% of the
// accepts at 500 jobs/s, adding 1.5–3 ms; docs/benchmarks.md, "Round 4:
// the wake-up path"). With more due, the rounds fill the batch, as for a
// drain: a waiting remote worker in front of a backlog would otherwise be
// handed one group's head per request.
func (a *acceptor) returnsHead() bool {
	if a.p.Wait <= 0 || len(a.jobs) == 0 || a.next == nil || a.tx != nil {
		return false
	}
	return a.next.at.IsZero() || a.next.at.After(time.Now())
}

// nextRunSQL finds the earliest run time of the pending jobs of the types
// (the first entry of jobs_next per type), and the types table's size,
// which tells whether other nodes added types.
const nextRunSQL = `SELECT min(x.run_at), (SELECT count(*) FROM rota.types) FROM unnest($1::text[]) AS n(name)
	CROSS JOIN LATERAL (SELECT j.run_at FROM rota.jobs j WHERE j.state = 0 AND j.lease_until IS NULL AND j.type = n.name
		ORDER BY j.run_at LIMIT 1) x`

// nextRun returns the earliest run time of the pending jobs of these types
// and how many types the types table holds.
func (s *Store) nextRun(ctx context.Context, names []string) (time.Time, int, error) {
	var next sql.NullTime
	var types int
	err := s.read(ctx, "accept", func(t *txn) error {
		if names == nil {
			names = []string{}
		}
		// With hotPlanSQL's generic plan: a custom plan of this statement
		// is planned afresh on every call (0.38 ms of planning for 0.06 ms
		// of executing, measured at 500 jobs/s).
		b := &pgx.Batch{}
		b.Queue(hotPlanSQL)
		b.Queue(s.q(nextRunSQL), names)
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&next, &types); err != nil {
			return err
		}
		return br.Close()
	})
	return nullTime(next), types, err
}
