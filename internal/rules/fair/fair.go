// Package fair is rota's fair scheduler: the weighted round robin between
// the groups (tenants) of a type, the priority bands within a group, the
// bounds on a group's running jobs, and the order of jobs across types. It
// decides which group goes next and how many jobs it gives; both stores
// use it, and supply what only they can: pages of a type's groups in turn
// order, a group's due jobs, and the claims.
//
// Every group of a type has a virtual time, its turn. Serving a group n
// jobs adds n/weight to its turn; the group with the smallest turn goes
// next, ties to the smaller name. A store keeps the turns in a table read
// through an index in (turn, name) order, so an accept reads only the
// front of it, a page at a time, whatever the number of groups
// (docs/fairness.md).
//
// A group that has no pending jobs and gets some starts at the later of
// its own turn and its type's virtual clock, read as the operation that
// gives it jobs begins: the smallest turn among the type's groups that
// have pending jobs, or, when none has, the turn at which a group last
// ran out of them (Group.LastTurn, kept by the store). So an idle group
// cannot bank turns, and a returning group ties with the groups at the
// front rather than waiting behind them.
package fair

import (
	"container/heap"
	"math"
	"time"

	"github.com/rotajobs/rota/store"
)

// Group is one group of one type during one accept.
type Group struct {
	Type, Name string
	Turn       float64
	Weight     float64 // > 0
	Pending    int64   // its jobs waiting (due or not)
	Running    int64   // its running jobs of this type
	BandCount  int64   // picks so far, for the counting scheme of bands
	// Limit bounds its running jobs of this type; 0: none.
	Limit int64
	// Cross bounds its running jobs of all types together, shared by its
	// groups of every type in the accept; nil: none.
	Cross *Bound
	// TypeBound bounds the running jobs of the whole type, shared by its
	// groups in the accept (TypeConfig.MaxRunning); nil: none. A store
	// counts it exactly before the type gives a job.
	TypeBound *Bound
	// TypeRate is the type's rate (TypeConfig.Rate) as a budget for the
	// accept, shared by its groups; Rate is the group's own rate for the
	// type, and CrossRate its rate for all types together, shared by its
	// groups of every type in the accept (GroupConfig.Rate); nil: none.
	// A store reads each exactly before the group gives a job.
	TypeRate, Rate, CrossRate *Bucket
	// Exact: Running was counted under the group's lock, so its bounds
	// hold across nodes (a store with one writer counts exactly always).
	Exact bool
	// Paused: the group gives no jobs (GroupConfig.Paused).
	Paused bool

	// Out: passed over for the rest of the accept (at a bound, or it gave
	// fewer jobs than it won turns: the rest are not due or others hold
	// them). Its turn stays.
	Out bool
	// HighDone and LowDone: its band gave out in this accept.
	HighDone, LowDone bool
	// Served counts the jobs claimed from it in this accept.
	Served int64
}

// Bound is a bound on the running jobs of several groups together: a
// group's across types, or a type's across its groups.
type Bound struct {
	Max, Running int64
	// Exact: Running was counted under the group's lock (and this accept's
	// claims added since), so the bound holds across nodes.
	Exact bool
}

// Bounded reports whether a bound of the group's own applies to g (its
// type's bound and rate, TypeBound and TypeRate, are counted once for all
// its groups).
func (g *Group) Bounded() bool {
	return g.Limit > 0 || g.Cross != nil || g.Paused || g.Rate != nil || g.CrossRate != nil
}

// Shared is the bounds of g that count jobs planned for it until they are
// claimed (Plan, Settle): every one but its own Limit, rates included;
// nil where none applies. An array, not a slice: it is read for every
// turn of an accept.
func (g *Group) Shared() [5]*Bound {
	var out [5]*Bound
	out[0], out[1] = g.Cross, g.TypeBound
	for i, b := range [...]*Bucket{g.TypeRate, g.Rate, g.CrossRate} {
		if b != nil {
			out[2+i] = &b.Bound
		}
	}
	return out
}

// AcrossTypes reports whether g is at a bound it shares with its groups of
// other types (Cross, CrossRate), counting planned, for an accept of
// several types that chooses among their picks.
func (g *Group) AcrossTypes(planned map[*Bound]int64) bool {
	if c := g.Cross; c != nil && c.Running+planned[c] >= c.Max {
		return true
	}
	if r := g.CrossRate; r != nil && r.Running+planned[&r.Bound] >= r.Max {
		return true
	}
	return false
}

// Room is how many more jobs g may start under every bound that applies
// to it; planned are jobs planned under a shared bound (its cross-type
// bound, its type's) and not claimed yet (nil: none).
func (g *Group) Room(planned map[*Bound]int64) int64 {
	if g.Paused {
		return 0
	}
	r := int64(math.MaxInt64)
	if g.Limit > 0 {
		r = g.Limit - g.Running
	}
	for _, b := range g.Shared() {
		if b != nil {
			r = min(r, b.Max-b.Running-planned[b])
		}
	}
	return max(r, 0)
}

// Serve records that g gave n jobs: its turn moves by n/weight, and its
// counts with it.
func (g *Group) Serve(n int64) {
	g.Plan(n)
	g.Served += n
	for _, b := range g.Shared() {
		if b != nil {
			b.Running += n
		}
	}
}

// Plan records that g is to give n jobs, for a store that plans several
// turns before it claims them: its turn and its own counts move as Serve
// moves them; its shared bounds (cross-type, its type's) and Served wait
// for what is claimed (Settle).
func (g *Group) Plan(n int64) {
	g.Turn += float64(n) / g.Weight
	g.Pending -= n
	g.Running += n
	g.BandCount += n
}

// LastTurn is the turn at which g gave its last job: where its type's
// virtual clock moves when an accept leaves it with no pending jobs.
func (g *Group) LastTurn() float64 { return g.Turn - 1/g.Weight }

// Mark is a group's place and counts before a store planned turns of it
// (Plan), to settle them with what it claimed (Settle).
type Mark struct {
	turn                        float64
	pending, running, bandCount int64
}

// Mark returns g's place and counts now.
func (g *Group) Mark() Mark {
	return Mark{g.Turn, g.Pending, g.Running, g.BandCount}
}

// Settle puts g back where it was at m, before the turns planned since,
// and serves it the n jobs claimed instead.
func (g *Group) Settle(m Mark, n int64) {
	g.Turn, g.Pending, g.Running, g.BandCount = m.turn, m.pending, m.running, m.bandCount
	g.Serve(n)
}

// TurnBefore reports whether the turn (t1, g1) comes before (t2, g2).
func TurnBefore(t1 float64, g1 string, t2 float64, g2 string) bool {
	return t1 < t2 || (t1 == t2 && g1 < g2)
}

// TurnsWon is how many turns in a row a group at turn with weight wins
// against a rival at (rivalTurn, rivalGrp), at most want and at least 1:
// the turns turn + i/weight that come before the rival's.
func TurnsWon(turn float64, grp string, weight, rivalTurn float64, rivalGrp string, want int64) int64 {
	const eps = 1e-9 // turns are sums of 1/weight: absorb rounding
	d := (rivalTurn - turn) * weight
	var k float64
	if grp < rivalGrp {
		k = math.Floor(d+eps) + 1 // turns i with i ≤ d
	} else {
		k = math.Ceil(d - eps) // turns i with i < d
	}
	return int64(max(1, min(float64(want), k)))
}

// Page reads a type's groups with pending jobs in (turn, name) order: the
// first limit of them when first, else the limit after (turn, name). It
// fills in each group's weight and bounds.
type Page func(first bool, turn float64, name string, limit int) ([]*Group, error)

// PageSize is how many groups a page holds after the first.
const PageSize = 64

// Queue is one type's groups during one accept, in turn order: a heap of
// the groups read so far, fed from the store's turn index a page at a
// time.
type Queue struct {
	Type  string
	Bands store.Bands

	read    Page
	heap    groupHeap
	loaded  map[string]*Group
	page    int
	started bool
	drained bool
	// the index is read on from (lastTurn, lastName), the last group read
	lastTurn float64
	lastName string
}

// NewQueue returns the queue of typ; first is the size of the first page
// (an accept of n jobs needs at most n groups, plus one to know the next
// rival, unless some are passed over).
func NewQueue(typ string, bands store.Bands, first int, read Page) *Queue {
	return &Queue{Type: typ, Bands: bands, read: read, loaded: map[string]*Group{}, page: max(first, 1)}
}

// Group returns the group of that name read so far, nil if none.
func (q *Queue) Group(name string) *Group { return q.loaded[name] }

func (q *Queue) fill() error {
	gs, err := q.read(q.Cursor())
	if err != nil {
		return err
	}
	q.Feed(gs)
	return nil
}

// Cursor is where the next page starts, as Page takes it.
func (q *Queue) Cursor() (first bool, turn float64, name string, limit int) {
	return !q.started, q.lastTurn, q.lastName, q.page
}

// Feed adds the page at Cursor that the store read by itself (for
// example in the round trip of a claim).
func (q *Queue) Feed(gs []*Group) {
	for _, g := range gs {
		q.lastTurn, q.lastName = g.Turn, g.Name
		if q.loaded[g.Name] != nil {
			continue // read before, and its turn has moved since
		}
		if g.Weight <= 0 {
			g.Weight = 1
		}
		q.loaded[g.Name] = g
		heap.Push(&q.heap, g)
	}
	q.started = true
	if len(gs) < q.page {
		q.drained = true
	}
	q.page = PageSize
}

// Next returns the group whose turn it is, out of the heap, or nil when no
// group has pending jobs. It reads more of the index while the next unread
// group could come before the best group in the heap.
func (q *Queue) Next() (*Group, error) {
	for !q.drained && (len(q.heap) == 0 || !q.started || TurnBefore(q.lastTurn, q.lastName, q.heap[0].Turn, q.heap[0].Name)) {
		if err := q.fill(); err != nil {
			return nil, err
		}
	}
	if len(q.heap) == 0 {
		return nil, nil
	}
	return heap.Pop(&q.heap).(*Group), nil
}

// Push puts g back in turn order, after Next took it and it was served,
// while it has pending jobs.
func (q *Queue) Push(g *Group) {
	if g.Pending > 0 && !g.Out {
		heap.Push(&q.heap, g)
	}
}

// Reset puts every group read so far that is not passed over and has
// pending jobs back in turn order, for a store that plans several turns,
// claims them, and settles the groups with what it claimed.
func (q *Queue) Reset() {
	q.heap = q.heap[:0]
	for _, g := range q.loaded {
		if !g.Out && g.Pending > 0 {
			q.heap = append(q.heap, g)
		}
	}
	heap.Init(&q.heap)
}

// Wins is how many turns in a row g (just taken by Next) wins, at most
// want: the turns g.Turn + i/weight that come before the next group in the
// heap, or the first group not read yet; ties go to the smaller name.
func (q *Queue) Wins(g *Group, want int64) int64 {
	var rivalTurn float64
	var rivalName string
	switch {
	case len(q.heap) > 0 && (q.drained || TurnBefore(q.heap[0].Turn, q.heap[0].Name, q.lastTurn, q.lastName)):
		rivalTurn, rivalName = q.heap[0].Turn, q.heap[0].Name
	case !q.drained:
		rivalTurn, rivalName = q.lastTurn, q.lastName
	default:
		return want // no rival
	}
	return TurnsWon(g.Turn, g.Name, g.Weight, rivalTurn, rivalName, want)
}

// Band is a band of priorities a pick draws from.
type Band int

const (
	AnyBand  Band = iota // every priority (no counting scheme)
	HighBand             // priority > 0
	LowBand              // priority ≤ 0
)

// Other is the band a pick falls back to when its own is empty.
func (b Band) Other() Band {
	switch b {
	case HighBand:
		return LowBand
	case LowBand:
		return HighBand
	}
	return AnyBand
}

// Range is the band's priorities, lo..hi.
func (b Band) Range() (lo, hi int64) {
	switch b {
	case HighBand:
		return 1, math.MaxInt64
	case LowBand:
		return math.MinInt64, 0
	}
	return math.MinInt64, math.MaxInt64
}

// BandOf is the band pick number pos (0-based, counted over the group's
// life: its BandCount) draws from first under the counting scheme bands:
// of every High+Low picks, High from the high band and Low from the low.
func BandOf(bands store.Bands, pos int64) Band {
	if bands.IsZero() {
		return AnyBand
	}
	if bands.Next(int(pos)) {
		return HighBand
	}
	return LowBand
}

// Candidate is a due job a group offers.
type Candidate struct {
	ID       int64
	Retry    bool // not its first attempt
	Priority int64
	RunAt    time.Time
}

// Better orders candidates, within a group and across types: due retries
// first, then priority, run time, id.
func Better(a, b Candidate) bool {
	if a.Retry != b.Retry {
		return a.Retry
	}
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.RunAt.Equal(b.RunAt) {
		return a.RunAt.Before(b.RunAt)
	}
	return a.ID < b.ID
}

// Compare is Better as a comparison, for slices.SortFunc.
func Compare(a, b Candidate) int {
	switch {
	case Better(a, b):
		return -1
	case Better(b, a):
		return 1
	}
	return 0
}

// JobCandidate is a claimed job as a candidate.
func JobCandidate(j *store.Job) Candidate {
	return Candidate{ID: j.ID, Retry: j.Attempt > 1, Priority: int64(j.Priority), RunAt: j.RunAt}
}

// groupHeap orders groups by turn, then name.
type groupHeap []*Group

func (h groupHeap) Len() int { return len(h) }
func (h groupHeap) Less(i, j int) bool {
	return TurnBefore(h[i].Turn, h[i].Name, h[j].Turn, h[j].Name)
}
func (h groupHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *groupHeap) Push(x any)   { *h = append(*h, x.(*Group)) }
func (h *groupHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	*h = old[:len(old)-1]
	return g
}

// Rate is a token bucket: N tokens come every Per, up to Burst; a job
// takes one when it starts (TypeConfig.Rate, GroupConfig.Rate). A store
// keeps a bucket's tokens and when it last refilled them in the database,
// and reads and writes them in the transaction of the accept that spends
// them, by its own clock, so that one bucket holds across every node.
type Rate struct {
	N     int64
	Per   time.Duration
	Burst int64
}

// RateOf is a configured rate as a bucket (store.Rate.BurstOf gives the
// burst); ok is false for no rate.
func RateOf(r store.Rate, burst int) (_ Rate, ok bool) {
	if r.IsZero() || r.Per <= 0 {
		return Rate{}, false
	}
	return Rate{N: int64(r.N), Per: r.Per, Burst: int64(r.BurstOf(burst))}, true
}

// Refill is the tokens at now of a bucket that held tokens at at: one per
// Per/N since, up to Burst. A bucket never refilled (at zero) is full. A
// clock that reads earlier than at (another node's transaction that began
// first) refills nothing, and the bucket keeps at.
func (r Rate) Refill(tokens float64, at, now time.Time) (float64, time.Time) {
	if at.IsZero() {
		return float64(r.Burst), now
	}
	if !now.After(at) {
		return min(tokens, float64(r.Burst)), at
	}
	t := tokens + now.Sub(at).Seconds()*float64(r.N)/r.Per.Seconds()
	return min(t, float64(r.Burst)), now
}

// Wait is how long after a moment at which the bucket holds tokens the
// next whole token comes; zero when it holds one.
func (r Rate) Wait(tokens float64) time.Duration {
	if tokens >= 1 {
		return 0
	}
	// In whole microseconds, the stores' resolution, rounded up less a
	// float's error, so that the wake-up is never before the token.
	us := (1 - tokens) * float64(r.Per/time.Microsecond) / float64(r.N)
	return max(time.Duration(math.Ceil(us-1e-6))*time.Microsecond, time.Microsecond)
}

// Bucket is a rate's bucket during one accept: refilled to At, it gives
// the accept a budget of its whole tokens, which caps the plan as a bound
// does (Bound.Max: the whole tokens; Bound.Running: the jobs started from
// it in the accept). A type's bucket is shared by its groups, so the jobs
// it allows go to them in weighted-fair turn order, and a group with no
// due jobs leaves its share to the others.
type Bucket struct {
	Bound
	Rate   Rate
	Tokens float64   // at At, before the accept spent any
	At     time.Time // the store's clock as the accept read the bucket
}

// OpenBucket is a bucket that held tokens when it was refilled at at,
// read at now.
func OpenBucket(r Rate, tokens float64, at, now time.Time) *Bucket {
	b := &Bucket{Rate: r}
	b.Open(tokens, at, now)
	return b
}

// Open fills in b, a bucket of b.Rate not read yet (for a store that reads
// it under a lock only when a group of it is served): it held tokens when
// it was refilled at at, and is read at now. Jobs already counted against
// it in the accept stay counted.
func (b *Bucket) Open(tokens float64, at, now time.Time) {
	b.Tokens, b.At = b.Rate.Refill(tokens, at, now)
	b.Max, b.Exact = int64(math.Floor(b.Tokens+1e-9)), true
}

// Left is the tokens the bucket holds after the accept's starts: what the
// store writes back, refilled at At.
func (b *Bucket) Left() float64 { return max(b.Tokens-float64(b.Running), 0) }

// NextToken is when the bucket next holds a whole token, after the
// accept's starts; zero when it holds one.
func (b *Bucket) NextToken() time.Time {
	w := b.Rate.Wait(b.Left())
	if w == 0 {
		return time.Time{}
	}
	return b.At.Add(w)
}

// NextToken is the earliest NextToken of the buckets that ran out in an
// accept: when a due job they held back may start (zero: none ran out).
func NextToken(buckets []*Bucket) time.Time {
	var next time.Time
	for _, b := range buckets {
		if t := b.NextToken(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}
