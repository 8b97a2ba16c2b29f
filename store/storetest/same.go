package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// Same runs random sequences of operations on two stores side by side,
// one call at a time, and requires the same answers from both: every
// error (and which sentinel), every add's outcome, which jobs every accept
// hands out and in which order, and every job's state at the end. The
// operations are adds (keys, unique adds, groups, priorities, some not yet
// due), accepts (one type, several, patterns; limits 1 to 3), completions,
// failures, snoozes, releases and heartbeats (some with stale tokens),
// cancels, removals, resubmits, updates, and group and type settings.
//
// The stores may stamp rows with clocks of their own (a database
// server's), so every time the test gives is an hour or more from now,
// accepts take what is due within half an hour (AcceptParams.DueBy), and
// only times the test gave are compared. Weights are powers of two: turns
// are floating point, and a tie between two groups must not depend on the
// order in which a store added up a turn.
//
// Each seed is a subtest named by its number, so a divergence is
// reproduced with -run 'Same/<seed>$'.
func Same(t *testing.T, seeds []uint64, ops int, open func(t *testing.T) SamePair) {
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			p := open(t)
			d := &differ{t: t, r: rand.New(rand.NewPCG(seed, 24)), stores: p.Stores, dump: p.Dump, base: time.Now().Truncate(time.Second)}
			d.run(ops)
		})
	}
}

// The names the operations draw from. "ab" is matched by the pattern "a*"
// with "a".
var (
	sameTypes    = []string{"a", "b", "ab"}
	sameGroups   = []string{"", "g1", "g2", "g3"}
	samePatterns = [][]string{{"a"}, {"b"}, {"a", "b"}, {"a*"}, {"*"}, {"ab", "b"}}
)

// SamePair is the two stores Same compares; Dump, if set, shows what the
// stores keep besides the jobs (their groups' turns and counts) when they
// diverge.
type SamePair struct {
	Stores [2]store.Store
	Dump   func() string
}

type differ struct {
	t      *testing.T
	dump   func() string
	r      *rand.Rand
	stores [2]store.Store
	base   time.Time // the test's "now": explicit times are far from it
	ids    [2][]int64
	index  [2]map[int64]int // a store's id → the job's number in the test
	// tokens are each job's leases so far, per store, the latest last
	tokens [2]map[int][]string
	log    []string
	step   int
}

func (d *differ) logf(format string, args ...any) {
	d.log = append(d.log, fmt.Sprintf("%d: ", d.step)+fmt.Sprintf(format, args...))
}

func (d *differ) fail(format string, args ...any) {
	d.t.Helper()
	from := max(0, len(d.log)-40)
	var dump string
	if d.dump != nil {
		dump = "\n" + d.dump()
	}
	d.t.Fatalf("step %d: %s\nlast operations:\n%s%s", d.step, fmt.Sprintf(format, args...), strings.Join(d.log[from:], "\n"), dump)
}

// errClass names err by the sentinel it matches.
func errClass(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range []error{store.ErrNotFound, store.ErrWorkerConflict, store.ErrCanceled, store.ErrFinished,
		store.ErrInvalid, store.ErrTooLarge, store.ErrUnauthorized, store.ErrClosed, store.ErrUnavailable} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "unexpected: " + err.Error()
}

// both compares the errors of one call on each store, which must match a
// sentinel (or be nil) and match each other.
func (d *differ) both(what string, errs [2]error) {
	d.t.Helper()
	a, b := errClass(errs[0]), errClass(errs[1])
	if a != b || strings.HasPrefix(a, "unexpected") {
		d.fail("%s: %q on %T, %q on %T", what, a, d.stores[0], b, d.stores[1])
	}
}

func (d *differ) itemErrs(what string, errs [2][]error) {
	d.t.Helper()
	if len(errs[0]) != len(errs[1]) {
		d.fail("%s: %d answers on %T, %d on %T", what, len(errs[0]), d.stores[0], len(errs[1]), d.stores[1])
	}
	for i := range errs[0] {
		d.both(fmt.Sprintf("%s, item %d", what, i), [2]error{errs[0][i], errs[1][i]})
	}
}

// job is the test's number of a store's job, -1 when the test never saw it.
func (d *differ) job(s int, id int64) int {
	if k, ok := d.index[s][id]; ok {
		return k
	}
	return -1
}

// pick returns the number of a random job the test knows of, -1 for a job
// no store has.
func (d *differ) pick() int {
	if len(d.ids[0]) == 0 || d.r.IntN(20) == 0 {
		return -1
	}
	return d.r.IntN(len(d.ids[0]))
}

func (d *differ) id(s, k int) int64 {
	if k < 0 {
		return 1 << 40
	}
	return d.ids[s][k]
}

// lease is a lease on job k in store s: mostly its latest, else an older
// one or one never given.
func (d *differ) lease(s, k int, stale int) store.Lease {
	toks := d.tokens[s][k]
	switch {
	case len(toks) == 0 || stale == 2:
		return store.Lease{ID: d.id(s, k), Token: "0123456789abcdef0123456789abcdef"}
	case stale == 1 && len(toks) > 1:
		return store.Lease{ID: d.id(s, k), Token: toks[len(toks)-2]}
	}
	return store.Lease{ID: d.id(s, k), Token: toks[len(toks)-1]}
}

// leased picks a job that has been handed out, if any, else any job.
func (d *differ) leased() int {
	var ks []int
	for k, toks := range d.tokens[0] {
		if len(toks) > 0 {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return d.pick()
	}
	slices.Sort(ks)
	return ks[d.r.IntN(len(ks))]
}

// at is a time the test gives: due (in the past) or not yet due (hours
// ahead), whole seconds apart so that no two stores round them apart.
func (d *differ) at() time.Time {
	if d.r.IntN(4) == 0 {
		return d.base.Add(2*time.Hour + time.Duration(d.r.IntN(100))*time.Second)
	}
	return d.base.Add(-time.Hour - time.Duration(d.r.IntN(100))*time.Second)
}

func (d *differ) run(ops int) {
	ctx := d.t.Context()
	for s := range d.stores {
		d.index[s] = map[int64]int{}
		d.tokens[s] = map[int][]string{}
	}
	for d.step = 0; d.step < ops; d.step++ {
		switch n := d.r.IntN(100); {
		case n < 22:
			d.add()
		case n < 52:
			d.accept()
		case n < 67:
			d.finish()
		case n < 72:
			d.heartbeat()
		case n < 77:
			var errs [2][]error
			var err [2]error
			ks := []int{d.pick(), d.pick()}[:1+d.r.IntN(2)]
			d.logf("cancel %v", ks)
			for s, st := range d.stores {
				errs[s], err[s] = st.Cancel(ctx, d.idsOf(s, ks))
			}
			d.both("Cancel", err)
			d.itemErrs("Cancel", errs)
		case n < 81:
			var errs [2][]error
			var err [2]error
			ks := []int{d.pick()}
			d.logf("remove %v", ks)
			for s, st := range d.stores {
				errs[s], err[s] = st.Remove(ctx, d.idsOf(s, ks))
			}
			d.both("Remove", err)
			d.itemErrs("Remove", errs)
		case n < 86:
			d.resubmit()
		case n < 93:
			d.update()
		case n < 97:
			c := store.GroupConfig{Group: sameGroups[d.r.IntN(len(sameGroups))], Type: []string{"", "a", "b"}[d.r.IntN(3)]}
			if d.r.IntN(2) == 0 {
				c.Weight = []float64{0.5, 1, 2, 4}[d.r.IntN(4)]
			}
			if d.r.IntN(3) == 0 {
				c.MaxRunning = 1 + d.r.IntN(3)
			}
			if d.r.IntN(4) == 0 {
				// Per hour: no token comes during the run, so both stores'
				// buckets hold the same whole tokens.
				c.Rate, c.Burst = store.Rate{N: 1, Per: time.Hour}, 1+d.r.IntN(4)
			}
			d.logf("group config %q type %q weight %v max %d rate %v burst %d", c.Group, c.Type, c.Weight, c.MaxRunning, c.Rate, c.Burst)
			var err [2]error
			for s, st := range d.stores {
				err[s] = st.SetGroupConfig(ctx, c)
			}
			d.both("SetGroupConfig", err)
		default:
			c := store.TypeConfig{Type: sameTypes[d.r.IntN(len(sameTypes))]}
			if d.r.IntN(2) == 0 {
				c.Bands = store.Bands{High: 1 + d.r.IntN(3), Low: 1 + d.r.IntN(2)}
			}
			if d.r.IntN(3) == 0 {
				c.GroupMaxRunning = 1 + d.r.IntN(3)
			}
			if d.r.IntN(3) == 0 {
				c.MaxRunning = 2 + d.r.IntN(4)
			}
			if d.r.IntN(4) == 0 {
				c.Rate, c.Burst = store.Rate{N: 1, Per: time.Hour}, 2+d.r.IntN(6)
			}
			d.logf("type config %q bands %v max %d, type max %d rate %v burst %d", c.Type, c.Bands, c.GroupMaxRunning, c.MaxRunning, c.Rate, c.Burst)
			var err [2]error
			for s, st := range d.stores {
				err[s] = st.SetTypeConfig(ctx, c)
			}
			d.both("SetTypeConfig", err)
		}
	}
	// The rest drains, which shows the order of what is left.
	for d.step = ops; d.step < ops+200; d.step++ {
		if d.acceptAll() == 0 {
			break
		}
	}
	d.compareJobs()
}

func (d *differ) idsOf(s int, ks []int) []int64 {
	out := make([]int64, len(ks))
	for i, k := range ks {
		out[i] = d.id(s, k)
	}
	return out
}

func (d *differ) add() {
	ctx := d.t.Context()
	var ps []store.AddParams
	for range 1 + d.r.IntN(3) {
		p := store.AddParams{Type: sameTypes[d.r.IntN(len(sameTypes))], Group: sameGroups[d.r.IntN(len(sameGroups))],
			Priority: d.r.IntN(4) - 1, RunAt: d.at(), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, d.r.IntN(5))),
			MaxAttempts: 1 + d.r.IntN(3), BackoffBase: time.Second, BackoffMax: time.Second}
		switch d.r.IntN(6) {
		case 0, 1:
			p.Key = fmt.Sprint("k", d.r.IntN(4))
		case 2:
			p.Unique = true
			p.Overwrite = d.r.IntN(2) == 0
		}
		ps = append(ps, p)
	}
	// A unique add where several jobs could be found is left out: the
	// stores do not find the same one (the lowest id, as AddParams.Unique
	// says, is neither store's choice; see docs/postgres.md).
	for i := range ps {
		if ps[i].Unique && d.uniqueCandidates(ps[:i+1]) > 1 {
			ps[i].Unique, ps[i].Overwrite = false, false
		}
	}
	var desc []string
	for _, p := range ps {
		desc = append(desc, d.addDesc(p))
	}
	d.logf("add %s", strings.Join(desc, ", "))
	var res [2][]store.AddResult
	var err [2]error
	for s, st := range d.stores {
		res[s], err[s] = st.Add(ctx, ps)
	}
	d.both("Add", err)
	if err[0] != nil {
		return
	}
	for i := range ps {
		a, b := res[0][i], res[1][i]
		if a.Outcome != b.Outcome {
			d.fail("Add item %d: %v on %T, %v on %T", i, a.Outcome, d.stores[0], b.Outcome, d.stores[1])
		}
		ka, kb := d.job(0, a.Job.ID), d.job(1, b.Job.ID)
		if ka != kb {
			d.fail("Add item %d: job %d (#%d) on %T, job %d (#%d) on %T", i, a.Job.ID, ka, d.stores[0], b.Job.ID, kb, d.stores[1])
		}
		if ka < 0 {
			k := len(d.ids[0])
			for s, r := range [2]store.AddResult{a, b} {
				d.ids[s] = append(d.ids[s], r.Job.ID)
				d.index[s][r.Job.ID] = k
			}
		}
	}
}

// uniqueCandidates counts the jobs the last unique add of ps could find:
// the first store's jobs of its type and group that have not completed,
// and the adds before it in ps of the same type and group.
func (d *differ) uniqueCandidates(ps []store.AddParams) int {
	last := ps[len(ps)-1]
	l, err := d.stores[0].List(d.t.Context(), store.ListParams{Types: []string{last.Type}, Groups: []string{last.Group},
		States: []store.State{store.Pending, store.Running, store.Paused, store.Failed, store.Cancelled}, Limit: store.MaxListLimit})
	if err != nil {
		d.fail("List on %T: %v", d.stores[0], err)
	}
	n := len(l.Jobs)
	for _, p := range ps[:len(ps)-1] {
		if p.Type == last.Type && p.Group == last.Group {
			n++
		}
	}
	return n
}

func (d *differ) addDesc(p store.AddParams) string {
	out := fmt.Sprintf("%s/%q/p%d/%s", p.Type, p.Group, p.Priority, d.when(p.RunAt))
	if p.Key != "" {
		out += "/key " + p.Key
	}
	if p.Unique {
		out += "/unique"
	}
	if p.Overwrite {
		out += "/overwrite"
	}
	return out + fmt.Sprintf("/max %d", p.MaxAttempts)
}

// when shows a time relative to the test's now.
func (d *differ) when(t time.Time) string {
	if t.IsZero() {
		return "now"
	}
	return t.Sub(d.base).String()
}

func (d *differ) accept() {
	p := store.AcceptParams{Types: samePatterns[d.r.IntN(len(samePatterns))], Limit: 1 + d.r.IntN(3),
		DueBy: d.base.Add(30 * time.Minute), Worker: "w"}
	d.acceptWith(p)
}

func (d *differ) acceptAll() int {
	return d.acceptWith(store.AcceptParams{Types: []string{"*"}, Limit: 3, DueBy: d.base.Add(30 * time.Minute), Worker: "w"})
}

func (d *differ) acceptWith(p store.AcceptParams) int {
	ctx := d.t.Context()
	var got [2][]int
	var err [2]error
	for s, st := range d.stores {
		var res store.AcceptResult
		res, err[s] = st.Accept(ctx, p)
		for _, j := range res.Jobs {
			k := d.job(s, j.ID)
			got[s] = append(got[s], k)
			d.tokens[s][k] = append(d.tokens[s][k], j.Token)
		}
	}
	d.logf("accept %v limit %d: %v", p.Types, p.Limit, got[0])
	d.both("Accept", err)
	if !slices.Equal(got[0], got[1]) {
		d.fail("Accept(%v, limit %d) hands out jobs %v on %T, %v on %T\n%s", p.Types, p.Limit,
			got[0], d.stores[0], got[1], d.stores[1], d.describe(append(got[0], got[1]...)))
	}
	return len(got[0])
}

// describe shows jobs (by the test's numbers) as the first store has them.
func (d *differ) describe(ks []int) string {
	slices.Sort(ks)
	ks = slices.Compact(ks)
	var b strings.Builder
	for _, k := range ks {
		if k < 0 {
			continue
		}
		js, err := d.stores[0].Get(d.t.Context(), []int64{d.ids[0][k]})
		if err != nil || len(js) == 0 {
			continue
		}
		j := js[0]
		fmt.Fprintf(&b, "  #%d: type %q group %q priority %d attempt %d run_at %v\n", k, j.Type, j.Group, j.Priority, j.Attempt, j.RunAt.Sub(d.base))
	}
	return b.String()
}

func (d *differ) finish() {
	ctx := d.t.Context()
	var fps [2][]store.FinishParams
	var desc []string
	for range 1 + d.r.IntN(2) {
		k := d.leased()
		stale := 0
		if d.r.IntN(4) == 0 {
			stale = 1 + d.r.IntN(2)
		}
		p := store.FinishParams{As: []store.Ending{store.Complete, store.Complete, store.Fail, store.Fail, store.Snooze, store.Release, store.Cancel}[d.r.IntN(7)]}
		switch p.As {
		case store.Complete:
			p.Result = json.RawMessage(`{"ok":true}`)
		case store.Fail:
			p.Error = "boom"
			p.Permanent = d.r.IntN(4) == 0
		case store.Snooze:
			p.RunAt = d.at()
		case store.Cancel:
			p.Error = "no"
		}
		desc = append(desc, fmt.Sprintf("#%d %v at %s stale %d", k, p.As, d.when(p.RunAt), stale))
		for s := range d.stores {
			q := p
			q.Lease = d.lease(s, k, stale)
			fps[s] = append(fps[s], q)
		}
	}
	d.logf("finish %v", desc)
	var errs [2][]error
	var err [2]error
	for s, st := range d.stores {
		errs[s], err[s] = st.Finish(ctx, fps[s])
	}
	d.both("Finish", err)
	d.itemErrs("Finish", errs)
}

func (d *differ) heartbeat() {
	ctx := d.t.Context()
	k := d.leased()
	stale := 0
	if d.r.IntN(3) == 0 {
		stale = 1 + d.r.IntN(2)
	}
	prog := float64(d.r.IntN(100))
	d.logf("heartbeat #%d stale %d", k, stale)
	var res [2][]store.HeartbeatResult
	var err [2]error
	for s, st := range d.stores {
		res[s], err[s] = st.Heartbeat(ctx, []store.HeartbeatParams{{Lease: d.lease(s, k, stale), Progress: &prog}})
	}
	d.both("Heartbeat", err)
	if err[0] != nil {
		return
	}
	d.both("Heartbeat item", [2]error{res[0][0].Err, res[1][0].Err})
	if res[0][0].Resubmit != res[1][0].Resubmit {
		d.fail("Heartbeat: resubmit %v on %T, %v on %T", res[0][0].Resubmit, d.stores[0], res[1][0].Resubmit, d.stores[1])
	}
}

func (d *differ) resubmit() {
	ctx := d.t.Context()
	k := d.pick()
	p := store.ResubmitParams{}
	if d.r.IntN(2) == 0 {
		p.RunAt = d.at()
	}
	if d.r.IntN(3) == 0 {
		p.Data = json.RawMessage(`{"again":true}`)
	}
	d.logf("resubmit #%d at %s data %s", k, d.when(p.RunAt), p.Data)
	var res [2][]store.AddResult
	var errs [2][]error
	var err [2]error
	for s, st := range d.stores {
		q := p
		q.ID = d.id(s, k)
		res[s], errs[s], err[s] = st.Resubmit(ctx, []store.ResubmitParams{q})
	}
	d.both("Resubmit", err)
	if err[0] != nil {
		return
	}
	d.itemErrs("Resubmit", errs)
	if errs[0][0] == nil {
		a, b := res[0][0], res[1][0]
		if a.Outcome != b.Outcome || d.job(0, a.Job.ID) != d.job(1, b.Job.ID) {
			d.fail("Resubmit: %v of #%d on %T, %v of #%d on %T", a.Outcome, d.job(0, a.Job.ID), d.stores[0], b.Outcome, d.job(1, b.Job.ID), d.stores[1])
		}
	}
}

func (d *differ) update() {
	ctx := d.t.Context()
	k := d.pick()
	p := store.UpdateParams{}
	switch d.r.IntN(3) {
	case 0:
		p.RunAt = d.at()
	case 1:
		prio := d.r.IntN(5) - 2
		p.Priority = &prio
	default:
		prio := d.r.IntN(5) - 2
		p.Priority = &prio
		p.Data = json.RawMessage(`{"updated":1}`)
	}
	prio := "same"
	if p.Priority != nil {
		prio = fmt.Sprint(*p.Priority)
	}
	d.logf("update #%d run_at %s priority %s data %s", k, d.when(p.RunAt), prio, p.Data)
	var errs [2][]error
	var err [2]error
	for s, st := range d.stores {
		q := p
		q.ID = d.id(s, k)
		_, errs[s], err[s] = st.Update(ctx, []store.UpdateParams{q})
	}
	d.both("Update", err)
	if err[0] == nil {
		d.itemErrs("Update", errs)
	}
}

// compareJobs compares every job's final state on both stores, leaving
// out what the stores stamp with their own clocks and tokens.
func (d *differ) compareJobs() {
	ctx := d.t.Context()
	var js [2][]store.Job
	for s, st := range d.stores {
		var err error
		if js[s], err = st.Get(ctx, d.ids[s]); err != nil {
			d.fail("Get on %T: %v", st, err)
		}
	}
	norm := func(s int, j store.Job) string {
		runAt := "near now"
		if dt := j.RunAt.Sub(d.base); dt > 45*time.Minute || dt < -45*time.Minute {
			runAt = dt.String()
		}
		return fmt.Sprintf("type %q key %q group %q priority %d state %v run_at %s data %s attempt %d/%d cancel %v resubmit %v progress %v error %q errors %d result %s worker %q",
			j.Type, j.Key, j.Group, j.Priority, j.State, runAt, compact(j.Data), j.Attempt, j.MaxAttempts, j.CancelRequested,
			j.Resubmit, j.Progress, j.LastError, len(j.Errors), compact(j.Result), j.Worker)
	}
	byK := [2]map[int]string{{}, {}}
	for s := range js {
		for _, j := range js[s] {
			byK[s][d.job(s, j.ID)] = norm(s, j)
		}
	}
	for k := range d.ids[0] {
		if byK[0][k] != byK[1][k] {
			d.fail("job #%d ends\n  %s on %T\n  %s on %T", k, byK[0][k], d.stores[0], byK[1][k], d.stores[1])
		}
	}
}

func compact(b []byte) string {
	var out bytes.Buffer
	if len(b) == 0 || json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}
