// Package engine runs every job operation of the stores: it loads the rows
// an operation concerns, asks internal/rules/lifecycle what to do with each, and
// has the store apply each plan, then walks the job's family for what the
// change asks of it. Both stores run their operations through it, inside
// their own transactions, through Tx; a store keeps only its transactions
// and locking, one statement per kind of plan, and its set-based fast
// paths (claims, batched completions and heartbeats), whose conditions
// are tied to the rules by tests.
//
// Items of one batch run one after the other, as if sent apart: an item
// sees what the items before it did to its job (a job an earlier item or
// its family work changed is read again), so that both stores answer a
// batch that names a job twice, or a parent and its child, alike.
package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// Tx is one store transaction as the engine uses it. Every method works in
// that transaction, and its writes commit or roll back with it.
type Tx interface {
	// Now is the time of the transaction: every plan is timed by it, and
	// every statement of the transaction writes it.
	Now() (time.Time, error)
	// Lock reads the rows of jobs ids and holds them until the transaction
	// ends, taking them in id order (so that concurrent batches cannot
	// deadlock). A job that does not exist has no entry.
	Lock(ids []int64) (map[int64]*lifecycle.Row, error)
	// Apply writes plan p for job r (as locked) with the store's statement
	// for p's kind, moves the job between the group counts (Change.From,
	// Change.To) and queues p's event for the commit. It returns the job
	// as it now is when its statement returns it, nil otherwise.
	Apply(r *lifecycle.Row, p *lifecycle.Plan, c Change) (*store.Job, error)
	// Job reads job id as it now is.
	Job(id int64) (store.Job, error)
	// Children lists the ids of job parent's children in id order: those
	// in the states of kin.
	Children(parent int64, kin Kin) ([]int64, error)
	// DropEnded deletes job parent's ended children in one statement (no
	// count holds ended jobs), but its failed ones when keepFailed, and
	// queues their removal events.
	DropEnded(parent int64, keepFailed bool) error
	// Unfinished reports whether any of job parent's children is
	// pending, running or paused.
	Unfinished(parent int64) (bool, error)
	// MarkParent records that job id has children (a column of its own,
	// not a plan: its state, times and lease do not change).
	MarkParent(id int64) error
	// KeyTaken looks up job r's key and whether another job holds it in
	// type typ and r's group, taking the key's lock as adds do, so that a
	// key found free stays free until the transaction ends. key is ""
	// when r has none.
	KeyTaken(r *lifecycle.Row, typ string) (key string, taken bool, err error)
	// FindUnique finds the job a unique add of p's type and group finds
	// (lifecycle.Matches), serialising such adds across writers.
	FindUnique(p *store.AddParams) (id int64, found bool, err error)
	// Dependants lists the jobs added after each of jobs ids
	// (store.AddParams.After), by dependency, each list in id order, from
	// the index of dependencies by dependency: theirs only, never all
	// dependencies of each dependant.
	Dependants(ids []int64) (map[int64][]int64, error)
	// AddDeps records that job id was added after jobs deps (in their
	// order), marks the unended ones among them (unended) as having
	// dependants, and gives job id its count of unended dependencies and
	// its policy.
	AddDeps(id int64, deps, unended []int64, policy store.DepPolicy) error
	// Audit writes audit records (store.Auditor), in one statement.
	Audit(recs []Record) error
}

// Change is what Apply writes besides the plan.
type Change struct {
	// From and To are the places the job leaves and enters
	// (lifecycle.Moves): the group counts follow them.
	From, To *lifecycle.Place
	// Data and Progress are a heartbeat's (Extend): nil keeps them.
	Data     []byte
	Progress *float64
}

// Kin selects a parent's children by state.
type Kin uint8

const (
	// Paused children wait for their parent's run to end.
	Paused Kin = iota
	// Unended children are pending, running or paused.
	Unended
	// All children, ended or not.
	All
)

// apply applies plan p to r, then what it asks of r's family. It reports
// whether the change reached other jobs than r (family work), which a
// batch must then read again.
func apply(tx Tx, r *lifecycle.Row, p *lifecycle.Plan, c Change) (*store.Job, bool, error) {
	c.From, c.To = lifecycle.Moves(r, p)
	j, err := tx.Apply(r, p, c)
	if err != nil {
		return nil, false, err
	}
	wide := false
	if lifecycle.EndsForDependants(r, p) {
		// Deferred to the end of a batch of finishes, the dependants'
		// work changes no row of the batch meanwhile.
		_, deferred := tx.(*deferDeps)
		if err := dependants(tx, r, p); err != nil {
			return nil, false, err
		}
		wide = !deferred
	}
	fired, err := batchMember(tx, r, c.From, c.To)
	if err != nil {
		return nil, false, err
	}
	wide = wide || fired
	if r.Parent == 0 && !r.HasChildren {
		return j, wide, nil
	}
	return j, true, family(tx, r, p)
}

// dependants applies what the end of job r by plan p asks of the jobs
// added after it (lifecycle.DepEnded): each waiting one counts one
// dependency less and is pending at the last, or is cancelled by its
// policy, which ends it for its own dependants in turn. Within a batch
// of finishes (deferDeps) the ends are collected and applied together
// at its end (DependantsEnded).
func dependants(tx Tx, r *lifecycle.Row, p *lifecycle.Plan) error {
	e := lifecycle.EndedBy(r, p)
	if d, ok := tx.(*deferDeps); ok {
		d.ends = append(d.ends, e)
		return nil
	}
	return DependantsEnded(tx, []lifecycle.Ended{e})
}

// DependantsEnded applies the ends of jobs (in order) to the jobs added
// after them (lifecycle.DepsEnded): it reads the dependants of those jobs
// only, locks them at once, and writes one plan each, however many of
// its dependencies ended. A dependency's end so costs one step per
// dependant, whatever the dependants' fan-in.
func DependantsEnded(tx Tx, ends []lifecycle.Ended) error {
	if len(ends) == 0 {
		return nil
	}
	ids := make([]int64, len(ends))
	for i, e := range ends {
		ids[i] = e.ID
	}
	after, err := tx.Dependants(ids)
	if err != nil || len(after) == 0 {
		return err
	}
	of := map[int64][]lifecycle.Ended{} // dependant → the ends it learns, in order
	var all []int64
	for _, e := range ends {
		for _, d := range after[e.ID] {
			if of[d] == nil {
				all = append(all, d)
			}
			of[d] = append(of[d], e)
		}
	}
	now, err := tx.Now()
	if err != nil {
		return err
	}
	rs, err := tx.Lock(all)
	if err != nil {
		return err
	}
	slices.Sort(all)
	counted := countDown{tx: tx}
	stale := false // a cancel went down the graph: the rows read may have changed
	for _, id := range all {
		d := rs[id]
		if stale {
			fresh, err := tx.Lock([]int64{id})
			if err != nil {
				return err
			}
			d = fresh[id]
		}
		plan, ok := lifecycle.DepsEnded(d, of[id], now)
		if !ok {
			continue
		}
		if counted.take(d, plan) {
			continue
		}
		// A plan with work beyond its row (a cancel, which ends the job
		// for its own dependants, among them maybe the jobs after it
		// here) sees the rows before it written, and the rows after it
		// are read again.
		if err := counted.flush(); err != nil {
			return err
		}
		if _, _, err := apply(tx, d, &plan, Change{}); err != nil {
			return fmt.Errorf("job %d after job %d: %w", id, of[id][0].ID, err)
		}
		stale = true
	}
	return counted.flush()
}

// deferDeps is a Tx whose jobs' ends are applied to their dependants
// together, at the end of a batch of finishes (Finish): one lock and one
// write per dependant for the whole batch, rather than per item. A
// finish ends running jobs, and a waiting job is never running, so no
// item of the batch sees a dependant that its ends would have changed.
type deferDeps struct {
	Tx
	ends []lifecycle.Ended
}

// family applies what plan p, applied to r (as it was before), asks of
// the rest of its family (lifecycle.Family).
func family(tx Tx, r *lifecycle.Row, p *lifecycle.Plan) error {
	fw := lifecycle.Family(r, p)
	if fw == (lifecycle.FamilyWork{}) {
		return nil
	}
	now, err := tx.Now()
	if err != nil {
		return err
	}
	each := func(kin Kin, rule func(c *lifecycle.Row) (lifecycle.Plan, error)) error {
		ids, err := tx.Children(r.ID, kin)
		if err != nil || len(ids) == 0 {
			return err
		}
		rs, err := tx.Lock(ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			c := rs[id]
			if c == nil {
				continue
			}
			plan, err := rule(c)
			if err != nil {
				return err
			}
			if _, _, err := apply(tx, c, &plan, Change{}); err != nil {
				return err
			}
		}
		return nil
	}
	if fw.ReleaseChildren {
		if err := each(Paused, func(c *lifecycle.Row) (lifecycle.Plan, error) { return lifecycle.Wake(c, now), nil }); err != nil {
			return fmt.Errorf("release the children of job %d: %w", r.ID, err)
		}
	}
	if fw.DropEndedChildren {
		if err := tx.DropEnded(r.ID, fw.KeepFailedChildren); err != nil {
			return fmt.Errorf("drop the ended children of job %d: %w", r.ID, err)
		}
	}
	if fw.RemoveChildren {
		if err := each(All, func(c *lifecycle.Row) (lifecycle.Plan, error) { return lifecycle.Remove(c.ID, c) }); err != nil {
			return fmt.Errorf("remove the children of job %d: %w", r.ID, err)
		}
	}
	if fw.CancelChildren {
		if err := each(Unended, func(c *lifecycle.Row) (lifecycle.Plan, error) { return lifecycle.Cancel(c.ID, c) }); err != nil {
			return fmt.Errorf("cancel the children of job %d: %w", r.ID, err)
		}
	}
	if fw.CheckParent {
		rs, err := tx.Lock([]int64{r.Parent})
		if err != nil {
			return err
		}
		parent := rs[r.Parent]
		if parent == nil || parent.State != store.Paused {
			return nil // only a waiting parent resumes
		}
		if parent.Unfinished, err = tx.Unfinished(parent.ID); err != nil {
			return err
		}
		if plan, ok := lifecycle.ParentAfterChild(parent, now); ok {
			if _, _, err := apply(tx, parent, &plan, Change{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// batch holds the rows of a batch's jobs, locked at once in id order. A
// row that an earlier item changed is read again before the next item
// that names it, and every row after family work (which may have changed
// any job of the batch), so that each item sees its job as it is.
type batch struct {
	tx    Tx
	rows  map[int64]*lifecycle.Row
	stale map[int64]bool
	all   bool // every row is stale
}

func lockBatch(tx Tx, ids []int64) (*batch, error) {
	rs, err := tx.Lock(ids)
	if err != nil {
		return nil, err
	}
	return &batch{tx: tx, rows: rs, stale: map[int64]bool{}}, nil
}

// row is job id as it now is (nil: it does not exist), as the caller of
// this reach finds it (lifecycle.Reached).
func (b *batch) row(id int64, reach *store.Reach) (*lifecycle.Row, error) {
	if b.all || b.stale[id] {
		rs, err := b.tx.Lock([]int64{id})
		if err != nil {
			return nil, err
		}
		b.rows[id] = rs[id]
		delete(b.stale, id)
		if b.all {
			// Read again what the batch names next as it comes.
			for k := range b.rows {
				if k != id {
					b.stale[k] = true
				}
			}
			b.all = false
		}
	}
	return lifecycle.Reached(b.rows[id], reach), nil
}

// apply applies p to r, a row of the batch, and marks what it changed.
func (b *batch) apply(r *lifecycle.Row, p *lifecycle.Plan, c Change) (*store.Job, error) {
	j, wide, err := apply(b.tx, r, p, c)
	if err != nil {
		return nil, err
	}
	if wide {
		b.all = true
	} else if p.Kind != lifecycle.KindKeep {
		b.stale[r.ID] = true
	}
	return j, nil
}

// job is the job a plan for r left, read when Apply did not return it.
func job(tx Tx, r *lifecycle.Row, j *store.Job) (store.Job, error) {
	if j != nil {
		return *j, nil
	}
	return tx.Job(r.ID)
}

// Cancel cancels jobs by id for caller by (by.Reach nil: everything),
// with one error per item, and records each cancel.
func Cancel(tx Tx, ids []int64, by Caller) ([]error, error) {
	return decide(tx, ids, by, lifecycle.Cancel, "cancel", cancelDetail)
}

// Remove removes jobs by id for caller by, with one error per item, and
// records each removal (the last record of the job, kept after it).
func Remove(tx Tx, ids []int64, by Caller) ([]error, error) {
	return decide(tx, ids, by, lifecycle.Remove, "remove", removeDetail)
}

func decide(tx Tx, ids []int64, by Caller, rule func(int64, *lifecycle.Row) (lifecycle.Plan, error), action string, detail func(*lifecycle.Row, *lifecycle.Plan) string) ([]error, error) {
	errs := make([]error, len(ids))
	b, err := lockBatch(tx, ids)
	if err != nil {
		return nil, err
	}
	now, err := tx.Now()
	if err != nil {
		return nil, err
	}
	t := trail{by: by}
	for i, id := range ids {
		r, err := b.row(id, by.Reach)
		if err != nil {
			return nil, err
		}
		plan, err := rule(id, r)
		if err != nil {
			errs[i] = err
			continue
		}
		if plan.Kind != lifecycle.KindKeep { // a cancel of a cancelled job changes nothing
			t.job(now, r, action, detail(r, &plan))
		}
		if _, err := b.apply(r, &plan, Change{}); err != nil {
			return nil, err
		}
	}
	return errs, t.write(tx)
}

// Update changes jobs in place (lifecycle.Update) for caller by; datas
// are the items' normalized data. Each item's job is the job as that item
// left it. Each change is recorded with the fields it changed.
func Update(tx Tx, ps []store.UpdateParams, datas [][]byte, by Caller) ([]store.Job, []error, error) {
	out, errs := make([]store.Job, len(ps)), make([]error, len(ps))
	b, err := lockBatch(tx, ids(len(ps), func(i int) int64 { return ps[i].ID }))
	if err != nil {
		return nil, nil, err
	}
	now, err := tx.Now()
	if err != nil {
		return nil, nil, err
	}
	t := trail{by: by}
	for i := range ps {
		r, err := b.row(ps[i].ID, by.Reach)
		if err != nil {
			return nil, nil, err
		}
		plan, err := lifecycle.Update(ps[i].ID, r, &ps[i], datas[i], now)
		if err != nil {
			errs[i] = err
			continue
		}
		before, err := beforeOf(tx, r, ps[i].Priority != nil)
		if err != nil {
			return nil, nil, err
		}
		j, err := b.apply(r, &plan, Change{})
		if err != nil {
			return nil, nil, err
		}
		if out[i], err = job(tx, r, j); err != nil {
			return nil, nil, err
		}
		t.job(now, r, "update", jobChanges(&before, &out[i], ps[i].Priority != nil, ps[i].Data != nil, now))
	}
	return out, errs, t.write(tx)
}

// Resubmit asks for jobs to run again (lifecycle.Resubmit) for caller
// by; datas are the items' normalized data. Each is recorded as a retry
// (of an ended job), a run now, a hand back or a resubmit.
func Resubmit(tx Tx, ps []store.ResubmitParams, datas [][]byte, by Caller) ([]store.AddResult, []error, error) {
	out, errs := make([]store.AddResult, len(ps)), make([]error, len(ps))
	b, err := lockBatch(tx, ids(len(ps), func(i int) int64 { return ps[i].ID }))
	if err != nil {
		return nil, nil, err
	}
	now, err := tx.Now()
	if err != nil {
		return nil, nil, err
	}
	t := trail{by: by}
	for i := range ps {
		r, err := b.row(ps[i].ID, by.Reach)
		if err != nil {
			return nil, nil, err
		}
		plan, err := lifecycle.Resubmit(ps[i].ID, r, &ps[i], datas[i], now)
		if err != nil {
			errs[i] = err
			continue
		}
		if plan.Type != "" {
			// A rename keeps the job's key, which must be free in the new
			// type, in its group.
			if errs[i], err = keyTaken(tx, r, plan.Type); err != nil {
				return nil, nil, err
			} else if errs[i] != nil {
				continue
			}
		}
		before, err := beforeOf(tx, r, false)
		if err != nil {
			return nil, nil, err
		}
		j, err := b.apply(r, &plan, Change{})
		if err != nil {
			return nil, nil, err
		}
		if out[i].Job, err = job(tx, r, j); err != nil {
			return nil, nil, err
		}
		out[i].Outcome = plan.Outcome
		t.job(now, r, resubmitAction(r, &ps[i]), jobChanges(&before, &out[i].Job, false, ps[i].Data != nil, now))
	}
	return out, errs, t.write(tx)
}

// keyTaken is the refusal (lifecycle.KeyTaken) of a rename of job r to
// type typ where another job holds its key; nil when it may go.
func keyTaken(tx Tx, r *lifecycle.Row, typ string) (error, error) {
	key, taken, err := tx.KeyTaken(r, typ)
	if err != nil || !taken {
		return nil, err
	}
	return lifecycle.KeyTaken(r.ID, key, typ, r.Group), nil
}

// Finish ends the leases of the items of ps (indexes into ps) that the
// store's set-based completion left: errs[i] is item i's own error
// (fencing); results are the items' normalized results. completed are
// the jobs with dependants (lifecycle.Row.HasDependants) that the
// store's set-based completion completed in this transaction: their ends
// reach their dependants with the items', together.
func Finish(tx Tx, ps []store.FinishParams, results [][]byte, items []int, errs []error, completed ...int64) error {
	d := &deferDeps{Tx: tx, ends: make([]lifecycle.Ended, 0, len(completed))}
	for _, id := range completed {
		d.ends = append(d.ends, lifecycle.Ended{ID: id, State: store.Completed})
	}
	if err := finish(d, ps, results, items, errs); err != nil {
		return err
	}
	return DependantsEnded(tx, d.ends)
}

func finish(tx Tx, ps []store.FinishParams, results [][]byte, items []int, errs []error) error {
	b, err := lockBatch(tx, ids(len(items), func(k int) int64 { return ps[items[k]].ID }))
	if err != nil {
		return err
	}
	now, err := tx.Now()
	if err != nil {
		return err
	}
	for _, i := range items {
		p := &ps[i]
		errs[i] = nil
		r, err := b.row(p.ID, nil)
		if err != nil {
			return err
		}
		if r != nil && r.HasChildren {
			if r.Unfinished, err = tx.Unfinished(r.ID); err != nil {
				return err
			}
		}
		plan, err := lifecycle.Finish(r, p, results[i], now)
		if err != nil {
			errs[i] = err
			continue
		}
		if plan.Type != "" {
			if errs[i], err = keyTaken(tx, r, plan.Type); err != nil {
				return err
			} else if errs[i] != nil {
				continue
			}
		}
		if _, err := b.apply(r, &plan, Change{}); err != nil {
			return err
		}
	}
	return nil
}

// Heartbeat extends the leases of ps, with their data (datas, normalized)
// and progress; lease is the length of a job's lease. out[i].Err is item
// i's own error (fencing).
func Heartbeat(tx Tx, ps []store.HeartbeatParams, datas [][]byte, lease func(r *lifecycle.Row) time.Duration, out []store.HeartbeatResult) error {
	b, err := lockBatch(tx, ids(len(ps), func(i int) int64 { return ps[i].ID }))
	if err != nil {
		return err
	}
	now, err := tx.Now()
	if err != nil {
		return err
	}
	for i := range ps {
		p := &ps[i]
		r, err := b.row(p.ID, nil)
		if err != nil {
			return err
		}
		var d time.Duration
		if r != nil {
			d = lease(r)
		}
		plan, err := lifecycle.Heartbeat(r, p, d, now)
		if err != nil {
			out[i] = store.HeartbeatResult{Err: err}
			continue
		}
		if _, err := b.apply(r, &plan, Change{Data: datas[i], Progress: p.Progress}); err != nil {
			return err
		}
		// Leases are stored to the microsecond.
		out[i] = store.HeartbeatResult{LeaseUntil: plan.LeaseUntil.Truncate(time.Microsecond), Resubmit: r.Resubmit}
	}
	return nil
}

// Fenced explains why a set-based heartbeat or finish left job id, read
// after it as r, for a lease with token: the fencing error.
func Fenced(id int64, r *lifecycle.Row, token string) error {
	if err := lifecycle.Fence(id, r, token); err != nil {
		return err
	}
	if r.Timeout > 0 {
		// The statement's other condition: the run is past its timeout.
		return lifecycle.RunTimedOut(id, r.Timeout)
	}
	// Running under this token again since: cannot happen, tokens are
	// fresh; still a conflict rather than a success that did nothing.
	return fmt.Errorf("job %d: %w", id, store.ErrWorkerConflict)
}

// Expire takes back the running jobs rows, locked, whose leases ended
// (lifecycle.Expire), and says how many it took back. A job that an
// earlier one's family work ended meanwhile is left as it now is.
func Expire(tx Tx, rows []*lifecycle.Row) (int, error) {
	now, err := tx.Now()
	if err != nil {
		return 0, err
	}
	n := 0
	b := &batch{tx: tx, rows: make(map[int64]*lifecycle.Row, len(rows)), stale: map[int64]bool{}}
	for _, r := range rows {
		b.rows[r.ID] = r
	}
	for _, x := range rows {
		r, err := b.row(x.ID, nil)
		if err != nil {
			return 0, err
		}
		if r == nil || r.State != store.Running {
			continue
		}
		plan := lifecycle.Expire(r, now)
		if _, err := b.apply(r, &plan, Change{}); err != nil {
			return 0, fmt.Errorf("expire job %d: %w", r.ID, err)
		}
		n++
	}
	return n, nil
}

// Lapse ends the pending jobs rows, locked, whose deadline is not after
// now, the sweep's time (lifecycle.Lapse): a recurring one skips to its
// next slot. It says how many it changed; a job that is no longer pending
// and past its deadline (an earlier one's family work changed it) is left
// as it now is.
func Lapse(tx Tx, rows []*lifecycle.Row, now time.Time) (int, error) {
	n := 0
	b := &batch{tx: tx, rows: make(map[int64]*lifecycle.Row, len(rows)), stale: map[int64]bool{}}
	for _, r := range rows {
		b.rows[r.ID] = r
	}
	for _, x := range rows {
		r, err := b.row(x.ID, nil)
		if err != nil {
			return 0, err
		}
		if r == nil || !lifecycle.PastDeadline(r, now) {
			continue
		}
		plan := lifecycle.Lapse(r, now)
		if _, err := b.apply(r, &plan, Change{}); err != nil {
			return 0, fmt.Errorf("expire job %d: %w", r.ID, err)
		}
		n++
	}
	return n, nil
}

// SkipLate takes back, among jobs just claimed, those that missed slots
// under store.MissedSkip (lifecycle.Late): they go to their next slot to
// come without running (lifecycle.SkipLate). It returns the ids it took
// back; a job no longer under its claim's lease is left alone.
func SkipLate(tx Tx, jobs []store.Job) (map[int64]bool, error) {
	now, err := tx.Now()
	if err != nil {
		return nil, err
	}
	var late []int64
	for i := range jobs {
		if lifecycle.Late(&jobs[i], now) {
			late = append(late, jobs[i].ID)
		}
	}
	if len(late) == 0 {
		return nil, nil
	}
	rs, err := tx.Lock(late)
	if err != nil {
		return nil, err
	}
	skipped := map[int64]bool{}
	for i := range jobs {
		j := &jobs[i]
		r := rs[j.ID]
		if r == nil || !lifecycle.Late(j, now) {
			continue
		}
		plan, err := lifecycle.SkipLate(j.ID, r, j.Token, now)
		if err != nil {
			continue // no longer this claim's: nothing to take back
		}
		if _, _, err := apply(tx, r, &plan, Change{}); err != nil {
			return nil, err
		}
		skipped[j.ID] = true
	}
	return skipped, nil
}

// FirstRun gives an add of a recurring job without a run time its first
// run (lifecycle.FirstRun: a cron expression's first match after now).
// Other adds without a run time run at the store's now, which the store
// writes itself.
func FirstRun(tx Tx, p *store.AddParams) error {
	if p.Schedule == "" || !p.RunAt.IsZero() {
		return nil
	}
	now, err := tx.Now()
	if err != nil {
		return err
	}
	p.RunAt = lifecycle.FirstRun(p.Schedule, time.Time{}, now)
	return nil
}

// Inserter is a Tx that inserts jobs one at a time, for adds that depend
// on what the batch's earlier items did (Add).
type Inserter interface {
	Tx
	// KeyHolder finds the job that holds p's key in p's type and group,
	// taking the key's lock, so that a key found free stays free until
	// the transaction ends.
	KeyHolder(p *store.AddParams) (id int64, found bool, err error)
	// SameData finds the jobs of p's type and group whose data are data
	// and that were created after since, in id order, taking a lock on
	// (type, group, data) so that adds of the same data are serialised
	// across nodes until the transaction ends.
	SameData(p *store.AddParams, data []byte, since time.Time) ([]int64, error)
	// Insert inserts a job for p (data: its normalized data; p.RunAt
	// zero: at the store's now) in state, counts it, and queues its
	// event.
	Insert(p *store.AddParams, data []byte, state store.State) (store.AddResult, error)
}

// Add adds jobs one at a time for a caller with reach (nil: everything),
// each seeing what the items before it did: a unique add finds the job
// that matches (AddUnique), a child takes its state from its parent
// (AddChild), an add whose key is held re-adds that job (Readd), and
// the rest are inserted. Stores insert batches with none of these in
// one statement instead.
func Add(tx Inserter, jobs []store.AddParams, datas [][]byte, reach *store.Reach) ([]store.AddResult, error) {
	if err := JoinBatches(tx, jobs, reach); err != nil {
		return nil, err
	}
	out := make([]store.AddResult, len(jobs))
	for i := range jobs {
		p := &jobs[i]
		after, err := afterOf(jobs, out, i)
		if err != nil {
			return nil, err
		}
		var deps *depsOf
		if len(after) > 0 {
			if deps, err = lockDeps(tx, after, reach); err != nil {
				return nil, err
			}
		}
		if p.UniqueFor > 0 {
			res, found, err := AddUniqueFor(tx, p, datas[i])
			if err != nil {
				return nil, err
			}
			if found {
				out[i] = res
				continue
			}
		}
		if p.Unique {
			res, found, err := AddUnique(tx, p, datas[i])
			if err != nil {
				return nil, err
			}
			if found {
				out[i] = res
				continue
			}
		}
		state := store.Pending
		if p.Parent != 0 {
			var err error
			if state, err = AddChild(tx, p.Parent, reach); err != nil {
				return nil, err
			}
		}
		if p.Debounce > 0 {
			now, err := tx.Now()
			if err != nil {
				return nil, err
			}
			p.RunAt = lifecycle.DebouncedRunAt(p, now)
		}
		if p.Key != "" {
			id, found, err := tx.KeyHolder(p)
			if err != nil {
				return nil, err
			}
			var r *lifecycle.Row
			if found {
				rs, err := tx.Lock([]int64{id})
				if err != nil {
					return nil, err
				}
				r = rs[id] // nil: removed meanwhile, and its key is free
			}
			if r != nil {
				// A re-add keeps the job's family.
				if out[i], err = Readd(tx, r, p, datas[i]); err != nil {
					return nil, err
				}
				continue
			}
		}
		if err := FirstRun(tx, p); err != nil {
			return nil, err
		}
		if deps != nil {
			state = store.Waiting
		}
		res, err := tx.Insert(p, datas[i], state)
		if err != nil {
			return nil, err
		}
		if deps != nil {
			if res, err = addAfter(tx, res, deps, p.OnDepFailure); err != nil {
				return nil, err
			}
		}
		out[i] = res
	}
	return out, Joined(tx, jobs, out)
}

// afterOf is the ids item i of jobs waits for: its After, then its
// AfterKeys resolved to the jobs the latest earlier items with those keys
// added or found (out).
func afterOf(jobs []store.AddParams, out []store.AddResult, i int) ([]int64, error) {
	p := &jobs[i]
	if len(p.AfterKeys) == 0 {
		return p.After, nil
	}
	after := append(make([]int64, 0, len(p.After)+len(p.AfterKeys)), p.After...)
	for _, k := range p.AfterKeys {
		j := i - 1
		for j >= 0 && jobs[j].Key != k {
			j--
		}
		if j < 0 {
			return nil, check.Invalidf("after_keys: no earlier job of this add has key %q", k)
		}
		id := out[j].Job.ID
		if slices.Contains(after, id) {
			continue // named by id and by key
		}
		after = append(after, id)
	}
	return after, nil
}

// depsOf is what an add learnt of the dependencies it names
// (lifecycle.AddAfter).
type depsOf struct {
	ids, unended []int64
	bad          *lifecycle.Ended
}

// lockDeps locks and checks the dependencies ids of an add by a caller
// with reach: each must exist, or the add is refused.
func lockDeps(tx Tx, ids []int64, reach *store.Reach) (*depsOf, error) {
	rs, err := tx.Lock(ids)
	if err != nil {
		return nil, err
	}
	_, bad, err := lifecycle.AddAfter(ids, rs, reach)
	if err != nil {
		return nil, err
	}
	d := &depsOf{ids: ids, bad: bad}
	for _, id := range ids {
		if !rs[id].State.Terminal() {
			d.unended = append(d.unended, id)
		}
	}
	return d, nil
}

// addAfter records the dependencies of job res, just inserted waiting,
// and settles it at once when none is left to wait for or one already
// failed (lifecycle.Settle).
func addAfter(tx Tx, res store.AddResult, d *depsOf, policy store.DepPolicy) (store.AddResult, error) {
	id := res.Job.ID
	if err := tx.AddDeps(id, d.ids, d.unended, policy); err != nil {
		return store.AddResult{}, fmt.Errorf("add job %d after %d jobs: %w", id, len(d.ids), err)
	}
	res.Job.HasDeps, res.Job.DepPolicy = true, policy
	if len(d.unended) > 0 && d.bad == nil {
		return res, nil
	}
	rs, err := tx.Lock([]int64{id})
	if err != nil {
		return store.AddResult{}, err
	}
	r := rs[id]
	now, err := tx.Now()
	if err != nil {
		return store.AddResult{}, err
	}
	plan, ok := lifecycle.Settle(r, d.bad, now)
	if !ok {
		return res, nil
	}
	j, _, err := apply(tx, r, &plan, Change{})
	if err != nil {
		return store.AddResult{}, err
	}
	res.Job, err = job(tx, r, j)
	return res, err
}

// AddChild decides the state of a job added as a child of job parent by a
// caller with reach (lifecycle.AddChild), locking the parent, and marks
// the parent as having children.
func AddChild(tx Tx, parent int64, reach *store.Reach) (store.State, error) {
	rs, err := tx.Lock([]int64{parent})
	if err != nil {
		return 0, err
	}
	r := rs[parent]
	state, err := lifecycle.AddChild(parent, r, reach)
	if err != nil {
		return 0, err
	}
	if !r.HasChildren {
		if err := tx.MarkParent(parent); err != nil {
			return 0, fmt.Errorf("add child of job %d: %w", parent, err)
		}
	}
	return state, nil
}

// Readd applies an add of p (data: its normalized data) to job r, which
// holds p's key in its type and group (lifecycle.ReaddTo), and returns
// the job as it now is.
func Readd(tx Tx, r *lifecycle.Row, p *store.AddParams, data []byte) (store.AddResult, error) {
	now, err := tx.Now()
	if err != nil {
		return store.AddResult{}, err
	}
	plan := lifecycle.ReaddTo(r, lifecycle.ReaddOf(p, data), now)
	j, _, err := apply(tx, r, &plan, Change{})
	if err != nil {
		return store.AddResult{}, err
	}
	res := store.AddResult{Outcome: plan.Outcome}
	res.Job, err = job(tx, r, j)
	return res, err
}

// AddUnique looks for the job a unique add p finds and, when there is one,
// applies the add to it (lifecycle.UniqueAdd); found is false when there
// is none, and the add inserts.
func AddUnique(tx Tx, p *store.AddParams, data []byte) (res store.AddResult, found bool, err error) {
	id, found, err := tx.FindUnique(p)
	if err != nil || !found {
		return store.AddResult{}, false, err
	}
	rs, err := tx.Lock([]int64{id})
	if err != nil {
		return store.AddResult{}, false, err
	}
	r := rs[id]
	if r == nil || !lifecycle.Matches(r.State) { // removed or completed meanwhile
		return store.AddResult{}, false, nil
	}
	existing, err := tx.Job(id)
	if err != nil {
		return store.AddResult{}, false, err
	}
	plan, err := lifecycle.UniqueAdd(r, p, data, existing.Data)
	if err != nil {
		return store.AddResult{}, false, err
	}
	j, _, err := apply(tx, r, &plan, Change{})
	if err != nil {
		return store.AddResult{}, false, err
	}
	res.Outcome = plan.Outcome
	res.Job, err = job(tx, r, j)
	return res, true, err
}

// AddUniqueFor looks for the job an add p with a unique window finds
// (lifecycle.InUniqueWindow): the holder of its key, or, without a key,
// the jobs with its data created within the window, the first that
// matches. found is false when there is none, and the add goes on as any
// other (a keyed add re-adds the job, another inserts).
func AddUniqueFor(tx Inserter, p *store.AddParams, data []byte) (res store.AddResult, found bool, err error) {
	now, err := tx.Now()
	if err != nil {
		return store.AddResult{}, false, err
	}
	var candidates []int64
	if p.Key != "" {
		id, held, err := tx.KeyHolder(p)
		if err != nil || !held {
			return store.AddResult{}, false, err
		}
		candidates = []int64{id}
	} else if candidates, err = tx.SameData(p, data, lifecycle.UniqueSince(p, now)); err != nil {
		return store.AddResult{}, false, err
	}
	if len(candidates) == 0 {
		return store.AddResult{}, false, nil
	}
	rs, err := tx.Lock(candidates)
	if err != nil {
		return store.AddResult{}, false, err
	}
	for _, id := range candidates {
		r := rs[id] // nil: removed meanwhile
		if r == nil {
			continue
		}
		j, err := tx.Job(id)
		if err != nil {
			return store.AddResult{}, false, err
		}
		if !lifecycle.InUniqueWindow(p, r, j.CreatedAt, now) {
			continue
		}
		// Nothing changes: the add answers with the job as it is.
		return store.AddResult{Job: j, Outcome: store.Unchanged}, true, nil
	}
	return store.AddResult{}, false, nil
}

func ids(n int, id func(int) int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = id(i)
	}
	return out
}
