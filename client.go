package rota

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rotajobs/rota/internal/expiry"
	"github.com/rotajobs/rota/internal/notify"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// Config tunes a Client. The zero value is ready to use.
type Config struct {
	// Logger receives the client's logs; nil means slog.Default().
	Logger *slog.Logger
	// PollInterval bounds how long a waiting acceptor sleeps without
	// re-checking the store, for jobs whose addition the store could not
	// report (added in a caller's own transaction, or by another process).
	// Zero means 1s.
	PollInterval time.Duration
	// LeaseCheckInterval bounds how long the lease monitor sleeps between
	// sweeps; zero means 1s.
	LeaseCheckInterval time.Duration
	// NoMaintenance disables the lease monitor, for clients of a store
	// whose leases another process takes care of.
	NoMaintenance bool
	// CloseStore makes Close close the store too, for a client that is
	// the store's only user.
	CloseStore bool
	// Hooks run at points of a job's life (see Hook): each an AddHook, a
	// FinishHook, or both.
	Hooks []Hook
	// RetryUnavailable is how long a read (Get, List, Stats, the
	// settings) goes on trying, with back-off, while the store answers
	// ErrUnavailable (its database is unreachable, as during a restart):
	// a read changes nothing, so trying it again is safe. Zero means 10s;
	// a negative value, no retry.
	RetryUnavailable time.Duration
	// SubscriberQueue bounds the changes queued for a subscription whose
	// reader has not taken them; a reader that falls further behind loses
	// the subscription (Subscription.Err is ErrFellBehind). Zero means
	// 10,000.
	SubscriberQueue int
}

// Client adds, inspects and runs jobs on a store. It is safe for
// concurrent use. Create it with Open or NewClient and release it with
// Close.
type Client struct {
	st      store.Store
	cfg     Config
	log     *slog.Logger
	hub     *notify.Hub
	hooks   hooks
	life    context.Context // ends when Close is called
	watchMu sync.Mutex
	unwatch func() // set once the store's change feed is attached
	stop    context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
}

// Open opens a client on the store a data source name names, and Close
// closes that store too. The store's package must be imported, as a
// database/sql driver is:
//
//	import _ "github.com/rotajobs/rota/store/sqlite"   // "jobs.db", "sqlite:jobs.db"
//	import _ "github.com/rotajobs/rota/store/postgres" // "postgres://…"
//
// A program that only talks to a server uses remote.NewClient instead and
// links no store.
func Open(dsn string) (*Client, error) {
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		return nil, fmt.Errorf("rota: open %s: %w", dsn, err)
	}
	c, err := NewClient(st, Config{CloseStore: true})
	if err != nil {
		st.Close()
		return nil, err
	}
	return c, nil
}

// NewClient returns a client on st and starts its background services
// (the lease monitor). Close stops them, and closes st only with
// cfg.CloseStore.
func NewClient(st store.Store, cfg Config) (*Client, error) {
	if st == nil {
		return nil, errors.New("rota: NewClient: store is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	hk, err := newHooks(cfg.Hooks)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{hooks: hk, life: ctx, st: st, cfg: cfg, log: cfg.Logger, hub: notify.New(), stop: cancel}
	c.hub.MaxQueue = cfg.SubscriberQueue
	if !cfg.NoMaintenance {
		m := &expiry.Monitor{Store: st, Interval: cfg.LeaseCheckInterval, Logger: c.log}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			m.Run(ctx)
		}()
	}
	return c, nil
}

// watchAll asks a store whose feed carries only what a worker acts on
// (store.FullWatcher) for every change: subscribers see them all.
func (c *Client) watchAll() {
	if fw, ok := c.st.(store.FullWatcher); ok {
		fw.WatchAll()
	}
}

// watch attaches the store's change feed to the hub on first use, so that
// a client that only adds jobs never opens a feed (for a remote store, an
// event stream).
func (c *Client) watch() *notify.Hub {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.unwatch == nil {
		c.unwatch = c.st.Watch(c.hub.Publish)
	}
	return c.hub
}

// Store returns the store the client runs on, for store-specific features
// such as (*sqlite.Store).DB.
func (c *Client) Store() store.Store { return c.st }

// Close stops the client's services and, when the client opened its
// store itself (Open), closes the store.
func (c *Client) Close() error {
	var err error
	c.once.Do(func() {
		c.stop()
		c.wg.Wait()
		c.watchMu.Lock()
		if c.unwatch != nil {
			c.unwatch()
		}
		c.watchMu.Unlock()
		if c.cfg.CloseStore {
			err = c.st.Close()
		}
	})
	return err
}

// ---- producer side ----

// Add adds one job, or re-adds an existing one with the same type, group
// and key.
func (c *Client) Add(ctx context.Context, p AddParams) (AddResult, error) {
	res, err := c.AddMany(ctx, []AddParams{p})
	if err != nil {
		return AddResult{}, err
	}
	return res[0], nil
}

// AddMany adds jobs in one transaction: all or none.
func (c *Client) AddMany(ctx context.Context, ps []AddParams) ([]AddResult, error) {
	ps, err := c.hooks.beforeAdd(ctx, ps)
	if err != nil {
		return nil, err
	}
	return c.st.Add(ctx, ps)
}

// read runs an idempotent read, again with back-off while the store is
// unavailable, for up to Config.RetryUnavailable.
func read[T any](ctx context.Context, c *Client, fn func() (T, error)) (T, error) {
	limit := c.cfg.RetryUnavailable
	if limit == 0 {
		limit = 10 * time.Second
	}
	deadline := time.Now().Add(limit)
	wait := 50 * time.Millisecond
	for {
		v, err := fn()
		if !errors.Is(err, ErrUnavailable) || time.Now().Add(wait).After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// Get returns a job by id.
func (c *Client) Get(ctx context.Context, id int64) (Job, error) {
	js, err := read(ctx, c, func() ([]Job, error) { return c.st.Get(ctx, []int64{id}) })
	if err != nil {
		return Job{}, err
	}
	if js[0].ID == 0 {
		return Job{}, check.NotFound(id)
	}
	return js[0], nil
}

// Deps returns job id's dependencies (AddParams.After) with their
// outcomes, in the order the job named them, and the ids of up to limit
// jobs added after it (its dependants), in id order. A job out of the
// caller's reach is ErrNotFound; a dependency out of it is its id and
// state alone (Reach.Dep), and a dependant out of it is left out; a store
// that keeps no dependencies answers ErrInvalid.
func (c *Client) Deps(ctx context.Context, id int64, limit int) ([]Dep, []int64, error) {
	ds, ok := c.st.(store.DepsReader)
	if !ok {
		return nil, nil, check.Invalidf("this store keeps no dependencies between jobs")
	}
	if limit <= 0 || limit > store.MaxListLimit {
		return nil, nil, check.Invalidf("limit %d: want 1..%d", limit, store.MaxListLimit)
	}
	if _, err := c.Get(ctx, id); err != nil {
		return nil, nil, err
	}
	type both struct {
		deps  []Dep
		after []int64
	}
	v, err := read(ctx, c, func() (both, error) {
		d, a, err := ds.Deps(ctx, id, limit)
		return both{d, a}, err
	})
	if err != nil {
		return nil, nil, err
	}
	if reach := store.ReachOf(ctx); reach.Scoped() {
		for i, d := range v.deps {
			v.deps[i] = reach.Dep(d)
		}
		// A dependant out of reach reads as missing (GetMany honours the
		// reach), and is left out as a removed one would be.
		js, err := c.GetMany(ctx, v.after)
		if err != nil {
			return nil, nil, err
		}
		v.after = v.after[:0]
		for _, j := range js {
			if j.ID != 0 {
				v.after = append(v.after, j.ID)
			}
		}
	}
	return v.deps, v.after, nil
}

// inReach leaves out of accepted jobs what they carry of other jobs
// that the caller's reach does not hold: a dependency's outcome
// (Job.Deps) is its id and state alone (Reach.Dep), and a child
// (Job.Children) and a parent's data (Job.ParentData) are left out, as
// the children a listing shows are. Dependencies and
// families across tenants are the admin's to make; a tenant's worker
// learns of the other tenant's job only that it ended, and how. Children
// and parents are read with the reach, once for all the jobs, only when
// some job has them.
func (c *Client) inReach(ctx context.Context, reach *store.Reach, jobs []Job) error {
	var ids []int64
	for i := range jobs {
		for k, d := range jobs[i].Deps {
			jobs[i].Deps[k] = reach.Dep(d)
		}
		if jobs[i].ParentData != nil {
			ids = append(ids, jobs[i].Parent)
		}
		for _, ch := range jobs[i].Children {
			ids = append(ids, ch.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// A job out of reach reads as a missing one.
	found, err := c.GetMany(ctx, ids)
	if err != nil {
		return err
	}
	in := make(map[int64]bool, len(found))
	for _, j := range found {
		if j.ID != 0 {
			in[j.ID] = true
		}
	}
	for i := range jobs {
		if jobs[i].ParentData != nil && !in[jobs[i].Parent] {
			jobs[i].ParentData = nil
		}
		jobs[i].Children = slices.DeleteFunc(jobs[i].Children, func(ch store.Child) bool { return !in[ch.ID] })
	}
	return nil
}

// GetMany returns jobs by id, in order; a missing id gives a Job with ID 0.
func (c *Client) GetMany(ctx context.Context, ids []int64) ([]Job, error) {
	return read(ctx, c, func() ([]Job, error) { return c.st.Get(ctx, ids) })
}

// GetByKey returns the job with this type, group and key.
func (c *Client) GetByKey(ctx context.Context, typ, group, key string) (Job, error) {
	return read(ctx, c, func() (Job, error) { return c.st.GetByKey(ctx, typ, group, key) })
}

// List returns a page of jobs.
func (c *Client) List(ctx context.Context, p ListParams) (ListResult, error) {
	return read(ctx, c, func() (ListResult, error) { return c.st.List(ctx, p) })
}

// History returns job id's history in time order: what its row tells
// (added, each attempt's start and error, its end) merged with the audit
// records of the changes made to it and to its type's and group's
// settings during its life, each with its actor (WithActor). A removed
// job's history is its records, the last its removal, for
// store.AuditRetention. It needs a store that keeps an audit trail
// (store.Auditor): both of rota's do, and the remote client.
func (c *Client) History(ctx context.Context, id int64) ([]HistoryEntry, error) {
	a, ok := c.st.(store.Auditor)
	if !ok {
		return nil, fmt.Errorf("rota: store %T keeps no audit trail", c.st)
	}
	return read(ctx, c, func() ([]HistoryEntry, error) { return a.History(ctx, id) })
}

// Stats counts jobs by type, group and state.
func (c *Client) Stats(ctx context.Context) ([]Count, error) {
	return read(ctx, c, func() ([]Count, error) { return c.st.Stats(ctx) })
}

// Cancel cancels a job that has not ended. A running job's handler sees
// its context cancelled, and its worker's later calls fail with
// ErrCanceled.
func (c *Client) Cancel(ctx context.Context, id int64) error {
	errs, err := c.st.Cancel(ctx, []int64{id})
	if err != nil {
		return err
	}
	return errs[0]
}

// CancelMany cancels jobs; it returns one error per id.
func (c *Client) CancelMany(ctx context.Context, ids []int64) ([]error, error) {
	return c.st.Cancel(ctx, ids)
}

// Resubmit asks for a job to run again: a pending job moves to the new
// time, a running one runs again after its worker ends, an ended one is
// pending again.
//
// A caller with a scoped reach (WithReach) may rename a job only to a type
// in its reach (ErrUnauthorized): a rename would otherwise put a job in
// another tenant's types.
func (c *Client) Resubmit(ctx context.Context, p ResubmitParams) (AddResult, error) {
	if err := renameInReach(ctx, p.Rename); err != nil {
		return AddResult{}, err
	}
	res, errs, err := c.st.Resubmit(ctx, []ResubmitParams{p})
	if err != nil {
		return AddResult{}, err
	}
	return res[0], errs[0]
}

// ResubmitMany resubmits jobs in one call, as Resubmit does each: one
// transaction, a result and an error per item.
func (c *Client) ResubmitMany(ctx context.Context, ps []ResubmitParams) ([]AddResult, []error, error) {
	for _, p := range ps {
		if err := renameInReach(ctx, p.Rename); err != nil {
			return nil, nil, err
		}
	}
	return c.st.Resubmit(ctx, ps)
}

// Update changes a job in place, in any state, without moving it to
// another state (Bedrock's UpdateJob), and returns it as it now is.
func (c *Client) Update(ctx context.Context, p UpdateParams) (Job, error) {
	jobs, errs, err := c.st.Update(ctx, []UpdateParams{p})
	if err != nil {
		return Job{}, err
	}
	return jobs[0], errs[0]
}

// Remove deletes a job in any state.
func (c *Client) Remove(ctx context.Context, id int64) error {
	errs, err := c.st.Remove(ctx, []int64{id})
	if err != nil {
		return err
	}
	return errs[0]
}

// RemoveMany deletes jobs in one call (one transaction); it returns one
// error per id.
func (c *Client) RemoveMany(ctx context.Context, ids []int64) ([]error, error) {
	return c.st.Remove(ctx, ids)
}

// SetTypeConfig sets per-type configuration, such as the lease timeout.
// A type's settings apply to every tenant: a caller with a scoped reach
// (WithReach) may not set them (ErrUnauthorized).
func (c *Client) SetTypeConfig(ctx context.Context, tc TypeConfig) error {
	if store.ReachOf(ctx).Scoped() {
		return fmt.Errorf("%w: type %q: a type's settings apply to every tenant, and a caller of some groups or types may not set them", ErrUnauthorized, tc.Type)
	}
	return c.st.SetTypeConfig(ctx, tc)
}

// SetGroupConfig sets a group's weight and bound on running jobs, for one
// type or for all (Type ""); the next accept applies it.
//
// A caller with a scoped reach (WithReach: a tenant) sets only the
// settings in its reach (Reach.HasGroupConfig; others are
// ErrUnauthorized), and may lower its groups' weights but not raise one above the default (1) or above what it is
// now: a weight is a share taken from every other group of the type,
// other tenants' included, so only a caller of every group (the admin
// token) gives a group more than its turn.
func (c *Client) SetGroupConfig(ctx context.Context, gc GroupConfig) error {
	if r := store.ReachOf(ctx); !check.GroupConfigInReach(r, gc) {
		what := "type " + strconv.Quote(gc.Type)
		if gc.Type == "" {
			what = "every type"
		}
		return fmt.Errorf("%w: the setting of group %q for %s is out of the caller's reach", ErrUnauthorized, gc.Group, what)
	}
	if r := store.ReachOf(ctx); r.Scoped() && gc.Weight > 1 {
		gcs, err := c.GroupConfigs(store.WithReach(ctx, nil))
		if err != nil {
			return err
		}
		now := 1.0
		for _, x := range gcs {
			if x.Group == gc.Group && x.Type == gc.Type && x.Weight > now {
				now = x.Weight
			}
		}
		if gc.Weight > now {
			return check.Invalidf("weight %g of group %q is more than %g: a token scoped to some groups or types may lower a group's weight, not raise it above %g (a weight takes a share from other tenants' groups; ask for it with the admin token)",
				gc.Weight, gc.Group, now, now)
		}
	}
	return c.st.SetGroupConfig(ctx, gc)
}

// GroupConfigs lists the group settings (those in the caller's reach).
func (c *Client) GroupConfigs(ctx context.Context) ([]GroupConfig, error) {
	gcs, err := read(ctx, c, func() ([]GroupConfig, error) { return c.st.GroupConfigs(ctx) })
	if r := store.ReachOf(ctx); r.Scoped() {
		gcs = slices.DeleteFunc(gcs, func(g GroupConfig) bool { return !check.GroupConfigInReach(r, g) })
	}
	return gcs, err
}

// TypeConfigs lists the known types and their settings: for a caller
// whose reach names types, those types only (one of some groups sees
// every type's).
func (c *Client) TypeConfigs(ctx context.Context) ([]TypeConfig, error) {
	tcs, err := read(ctx, c, func() ([]TypeConfig, error) { return c.st.TypeConfigs(ctx) })
	if r := store.ReachOf(ctx); r.Types() != nil {
		tcs = slices.DeleteFunc(tcs, func(tc TypeConfig) bool { return !r.HasType(tc.Type) })
	}
	return tcs, err
}

// ---- transactional forms ----

// TxStore is implemented by stores whose jobs live in a database/sql
// database, so that jobs can be added and finished in the caller's own
// transaction.
type TxStore interface {
	AddTx(ctx context.Context, tx *sql.Tx, jobs []store.AddParams) ([]store.AddResult, error)
	FinishTx(ctx context.Context, tx *sql.Tx, ps []store.FinishParams) ([]error, error)
}

func (c *Client) txStore() (TxStore, error) {
	ts, ok := c.st.(TxStore)
	if !ok {
		return nil, fmt.Errorf("rota: store %T does not support database/sql transactions", c.st)
	}
	return ts, nil
}

// AddTx adds a job inside tx, a transaction on the store's database (for
// SQLite, on the handle returned by (*sqlite.Store).DB). The job exists
// only if tx commits.
func (c *Client) AddTx(ctx context.Context, tx *sql.Tx, p AddParams) (AddResult, error) {
	ts, err := c.txStore()
	if err != nil {
		return AddResult{}, err
	}
	ps, err := c.hooks.beforeAdd(ctx, []AddParams{p})
	if err != nil {
		return AddResult{}, err
	}
	res, err := ts.AddTx(ctx, tx, ps)
	if err != nil {
		return AddResult{}, err
	}
	return res[0], nil
}

// CompleteTx completes a running job inside tx, fenced by its lease: the
// job's effects (written in tx) and its completion commit or roll back
// together. It fails with ErrWorkerConflict or ErrCanceled when the lease
// was lost, and the caller should then roll back. A handler that completes
// its job this way returns nil afterwards; the runtime's own finish with
// the same lease is then a no-op.
func (c *Client) CompleteTx(ctx context.Context, tx *sql.Tx, lease Lease, result []byte) error {
	ts, err := c.txStore()
	if err != nil {
		return err
	}
	errs, err := ts.FinishTx(ctx, tx, []FinishParams{{Lease: lease, As: Complete, Result: result}})
	if err != nil {
		return err
	}
	return errs[0]
}

// ---- worker side ----

// Accept leases due jobs. With Wait, it sleeps until a job of the types is
// added or becomes due (no polling), ctx ends, or Wait passes; it returns
// no jobs and no error when none came. With an error it returns no jobs:
// those a store leased before it failed are handed back.
func (c *Client) Accept(ctx context.Context, p AcceptParams) ([]Job, error) {
	return c.acceptKept(ctx, p, nil)
}

// acceptKept is Accept through a worker's waiter, aw (nil for none).
func (c *Client) acceptKept(ctx context.Context, p AcceptParams, aw *acceptWaiter) ([]Job, error) {
	jobs, err := c.acceptWith(ctx, p, aw)
	if err != nil && len(jobs) > 0 {
		c.handBack(ctx, jobs)
		return nil, err
	}
	if reach := store.ReachOf(ctx); reach.Scoped() && len(jobs) > 0 {
		if rerr := c.inReach(ctx, reach, jobs); rerr != nil {
			c.handBack(ctx, jobs)
			return nil, rerr
		}
	}
	return jobs, err
}

// handBack releases jobs leased by an accept that failed after it took
// them (a PostgreSQL accept keeps the rounds that committed before its
// error), so that they run now rather than when their leases end.
func (c *Client) handBack(ctx context.Context, jobs []Job) {
	ps := make([]FinishParams, len(jobs))
	for i, j := range jobs {
		ps[i] = FinishParams{Lease: j.Lease(), As: Release}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := c.st.Finish(ctx, ps); err != nil {
		c.log.Warn("rota: could not hand back the jobs of a failed accept; they run again when their leases end", "jobs", len(jobs), "err", err)
	}
}

// acceptWith accepts as Accept does, waiting through aw when it is given
// (a worker's, kept across its accepts) and through a waiter of its own
// otherwise.
func (c *Client) acceptWith(ctx context.Context, p AcceptParams, aw *acceptWaiter) ([]Job, error) {
	if p.Wait < 0 {
		return nil, check.Invalidf("wait %v must not be negative", p.Wait)
	}
	if what, pat := check.AcceptInReach(store.ReachOf(ctx), &p); pat != "" {
		return nil, check.Invalidf("%s pattern %q is out of the caller's reach: accept names in reach, or the reach's own patterns", what, pat)
	}
	if p.Wait == 0 {
		if aw != nil {
			return aw.accept(ctx, c, p)
		}
		res, err := c.st.Accept(ctx, p)
		return res.Jobs, err
	}
	if wa, ok := c.st.(WaitAccepter); ok {
		res, err := wa.AcceptWait(ctx, p)
		return res.Jobs, err
	}
	if aw == nil {
		pats, err := compilePatterns(p.Types)
		if err != nil {
			return nil, err
		}
		aw = &acceptWaiter{w: c.watch().Wait(pats)}
		defer aw.w.Stop()
	}
	deadline := time.Now().Add(p.Wait)
	timer := time.NewTimer(p.Wait)
	defer timer.Stop()
	for {
		if aw.idle {
			now := time.Now()
			if !now.Before(deadline) {
				return nil, nil
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(aw.sleep(now, deadline, c.cfg.PollInterval))
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-aw.w.C:
			case <-timer.C:
				// At the end of the wait with nothing signalled or due,
				// an accept sent within the poll interval has seen all
				// there is.
				if now := time.Now(); !now.Before(deadline) && now.Sub(aw.polled) < c.cfg.PollInterval && (aw.wakeAt.IsZero() || aw.wakeAt.After(now)) {
					return nil, nil
				}
			}
		}
		jobs, err := aw.accept(ctx, c, p)
		if err != nil || len(jobs) > 0 {
			return jobs, err
		}
	}
}

// acceptWaiter is an acceptor's waiter on the change feed and what its
// last accept found. A worker keeps one across its accepts, so that a
// change between two accepts stays signalled: after an accept that took
// every job there was, the next one waits for a signal (or for a job's run
// time, or a rate's next token, or the poll interval) instead of going to
// the store at once to come back empty (24% of the accepts at 500 jobs/s
// did; docs/benchmarks.md, "Round 4: the wake-up path").
type acceptWaiter struct {
	w *notify.Waiter
	// idle: the last accept left nothing to take at its end (it took
	// fewer jobs than asked, and none due remained), so the next waits
	// for a signal first.
	idle bool
	// wakeAt is when a job the last accept left becomes due, or a rate's
	// next token comes; zero when neither.
	wakeAt time.Time
	polled time.Time // when the last accept was sent
}

// accept sends one accept and notes what it found.
func (aw *acceptWaiter) accept(ctx context.Context, c *Client, p AcceptParams) ([]Job, error) {
	aw.w.Drain() // the accept sees what was signalled before it
	// Ends during the accept wake the next one, in case it finds jobs
	// held back by a bound.
	aw.w.WakeOnEnds(true)
	since := aw.w.Pending()
	aw.polled = time.Now()
	res, err := c.st.Accept(ctx, p)
	if err != nil {
		aw.idle, aw.wakeAt = false, time.Time{}
		return res.Jobs, err
	}
	now := time.Now()
	aw.wakeAt = time.Time{}
	due := false // a job the accept left is due now
	if !res.NextRunAt.IsZero() {
		// With DueBy in the future, a job becomes acceptable before its
		// run time.
		at := res.NextRunAt
		if !p.DueBy.IsZero() {
			at = at.Add(-p.DueBy.Sub(now))
		}
		if at.After(now) {
			aw.wakeAt = at
		} else {
			due = true
		}
	}
	// A due job held back by a rate may start when the next token comes,
	// a time the store knows: wake then, not at a poll.
	if !res.NextTokenAt.IsZero() && (aw.wakeAt.IsZero() || res.NextTokenAt.Before(aw.wakeAt)) {
		aw.wakeAt = res.NextTokenAt
	}
	limit := max(p.Limit, 1)
	// A due job not handed out by an accept that took none belongs to a
	// group at its bound on running jobs: it becomes acceptable when a job
	// of the type ends, which wakes the waiter, not at a time. One left by
	// an accept that took some may be another group's, which the store
	// left to the next accept: that one goes at once.
	held := due && len(res.Jobs) == 0
	aw.idle = len(res.Jobs) == 0 || (len(res.Jobs) < limit && !due)
	aw.w.WakeOnEnds(held)
	if !held {
		aw.w.DropEnds(since)
	}
	return res.Jobs, nil
}

// sleep is how long to wait for a signal before accepting again.
func (aw *acceptWaiter) sleep(now, deadline time.Time, poll time.Duration) time.Duration {
	d := min(deadline.Sub(now), poll)
	if !aw.wakeAt.IsZero() {
		d = max(min(d, aw.wakeAt.Sub(now)), 0)
	}
	return d
}

// WaitAccepter is implemented by stores that wait for due jobs themselves,
// such as a remote server's long-polling accept; Accept with Wait defers to
// them instead of waiting on the change feed.
type WaitAccepter interface {
	AcceptWait(ctx context.Context, p store.AcceptParams) (store.AcceptResult, error)
}

func compilePatterns(types []string) ([]glob.Pattern, error) {
	if len(types) == 0 {
		return nil, check.Invalidf("at least one type or pattern is required")
	}
	pats := make([]glob.Pattern, len(types))
	for i, t := range types {
		var err error
		if pats[i], err = check.CompilePattern(t); err != nil {
			return nil, err
		}
	}
	return pats, nil
}

// Heartbeat extends a job's lease and optionally updates its data and
// progress. It fails with ErrWorkerConflict or ErrCanceled when the lease
// was lost.
func (c *Client) Heartbeat(ctx context.Context, p HeartbeatParams) (HeartbeatResult, error) {
	res, err := c.st.Heartbeat(ctx, []HeartbeatParams{p})
	if err != nil {
		return HeartbeatResult{}, err
	}
	return res[0], res[0].Err
}

// HeartbeatMany extends several leases in one call.
func (c *Client) HeartbeatMany(ctx context.Context, ps []HeartbeatParams) ([]HeartbeatResult, error) {
	return c.st.Heartbeat(ctx, ps)
}

// Finish ends a worker's hold on a job as p.As says.
func (c *Client) Finish(ctx context.Context, p FinishParams) error {
	if err := renameInReach(ctx, p.Rename); err != nil {
		return err
	}
	errs, err := c.st.Finish(ctx, []FinishParams{p})
	if err != nil {
		return err
	}
	return errs[0]
}

// FinishMany ends several holds in one call; one error per item.
func (c *Client) FinishMany(ctx context.Context, ps []FinishParams) ([]error, error) {
	for _, p := range ps {
		if err := renameInReach(ctx, p.Rename); err != nil {
			return nil, err
		}
	}
	return c.st.Finish(ctx, ps)
}

// renameInReach refuses a rename (a snooze's or a resubmit's) to a type
// out of the caller's reach, as the HTTP API does for a scoped token.
func renameInReach(ctx context.Context, typ string) error {
	if typ != "" && !store.ReachOf(ctx).HasType(typ) {
		return fmt.Errorf("%w: may not rename a job to type %q, which is out of its reach", ErrUnauthorized, typ)
	}
	return nil
}

// Complete finishes a running job successfully with an optional result.
func (c *Client) Complete(ctx context.Context, lease Lease, result []byte) error {
	return c.Finish(ctx, FinishParams{Lease: lease, As: Complete, Result: result})
}

// Fail records a failed attempt: the job retries with back-off unless
// permanent is set or it is out of attempts.
func (c *Client) Fail(ctx context.Context, lease Lease, reason error, permanent bool) error {
	msg := "failed"
	if reason != nil {
		msg = reason.Error()
	}
	return c.Finish(ctx, FinishParams{Lease: lease, As: Fail, Error: msg, Permanent: permanent})
}

// Snooze puts a running job back to pending until d from now, without
// using up an attempt.
func (c *Client) Snooze(ctx context.Context, lease Lease, d time.Duration) error {
	return c.Finish(ctx, FinishParams{Lease: lease, As: Snooze, RunAt: time.Now().Add(d)})
}

// ---- subscriptions ----

// Subscription delivers events on C until it ends; C is then closed.
type Subscription struct {
	C    <-chan Event
	stop func()
	err  error // set before C closes
}

// Close ends the subscription early. When it returns, C is closed and
// empty: events queued before Close are dropped, as couch_jobs'
// unsubscribe flushes its subscriber's messages, so that a reader never
// acts on a change after it let go.
func (s *Subscription) Close() {
	s.stop()
	for range s.C {
		// Dropped; the sender ends at once, its context cancelled, and
		// closes C.
	}
}

// Err says why C closed, once it has: ErrFellBehind when the reader fell
// more than Config.SubscriberQueue changes behind (read the store again,
// then subscribe again), nil when the subscription ended otherwise.
func (s *Subscription) Err() error { return s.err }

// ErrFellBehind: a subscription's reader took its changes too slowly and
// the subscription was dropped, rather than queue changes without bound.
var ErrFellBehind = errors.New("subscriber fell behind: changes were dropped")

// Subscribe follows one job: the first event is its current state, then
// every change, coalescing repeats of the same state. C closes after a
// terminal state or the job's removal, or when ctx ends. A job that does
// not exist gives ErrNotFound.
func (c *Client) Subscribe(ctx context.Context, id int64) (*Subscription, error) {
	c.watchAll()
	// Register before reading, so that a change between the read and the
	// registration is not lost (couch_jobs' subscription race).
	sub := c.watch().SubscribeJob(id)
	j, err := c.Get(ctx, id)
	if err != nil {
		sub.Stop()
		return nil, err
	}
	out := make(chan Event, 1)
	ctx, cancel := context.WithCancel(ctx)
	endWithClient := context.AfterFunc(c.life, cancel)
	s := &Subscription{C: out, stop: cancel}
	go func() {
		defer close(out)
		defer endWithClient()
		defer sub.Stop()
		last := Event{ID: j.ID, Type: j.Type, Group: j.Group, State: j.State, Progress: j.Progress, RunAt: j.RunAt}
		select {
		case out <- last:
		case <-ctx.Done():
			return
		}
		if j.State.Terminal() {
			return
		}
		// Changes can be lost between nodes (a store may send a hint
		// instead); re-reading the job now and then bounds how late a
		// follower learns of them.
		poll := time.NewTicker(c.cfg.PollInterval)
		defer poll.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-poll.C:
				js, err := c.st.Get(ctx, []int64{id})
				if err != nil {
					continue
				}
				ev := Event{ID: id, Type: j.Type, Group: js[0].Group, State: js[0].State, Progress: js[0].Progress, RunAt: js[0].RunAt}
				if js[0].ID == 0 {
					ev.Removed, ev.State = true, last.State
				} else if ev.State == last.State && ev.Progress == last.Progress {
					continue
				}
				last = ev
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				if ev.Removed || ev.State.Terminal() {
					return
				}
			case ev, ok := <-sub.C:
				if !ok {
					if sub.Lost() {
						s.err = ErrFellBehind
					}
					return
				}
				if ev.State == last.State && ev.Progress == last.Progress && !ev.Removed && ev.State != Pending {
					continue
				}
				last = ev
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				if ev.Removed || ev.State.Terminal() {
					return
				}
			}
		}
	}()
	return s, nil
}

// SubscribeTypes follows every job whose type matches one of the
// patterns (at most store.MaxStreamPatterns), until ctx ends or Close.
func (c *Client) SubscribeTypes(ctx context.Context, patterns ...string) (*Subscription, error) {
	if len(patterns) > store.MaxStreamPatterns {
		return nil, check.Invalidf("%d type patterns in one subscription are more than %d (one pattern may list alternatives: {a,b,c})", len(patterns), store.MaxStreamPatterns)
	}
	pats, err := compilePatterns(patterns)
	if err != nil {
		return nil, err
	}
	c.watchAll()
	sub := c.watch().SubscribeTypes(pats)
	reach := store.ReachOf(ctx)
	out := make(chan Event, 64)
	ctx, cancel := context.WithCancel(ctx)
	endWithClient := context.AfterFunc(c.life, cancel)
	s := &Subscription{C: out, stop: cancel}
	go func() {
		defer endWithClient()
		defer close(out)
		defer sub.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-sub.C:
				if !ok {
					if sub.Lost() {
						s.err = ErrFellBehind
					}
					return
				}
				if !reach.Has(ev.Type, ev.Group) {
					continue // another tenant's change
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return s, nil
}

// Wait blocks until the job is in one of states (a terminal state when
// none is given: completed, failed or cancelled) and returns it, its data
// included, as couch_jobs' wait gives the job's data with its state: the
// job as read when Wait saw it reach the state (it may have moved on
// since, as its State then says). A job already in one of them returns at
// once. A job that ends in another state without reaching them gives
// ErrFinished with the job; a job removed meanwhile gives ErrNotFound.
func (c *Client) Wait(ctx context.Context, id int64, states ...State) (Job, error) {
	if err := checkStates(states); err != nil {
		return Job{}, err
	}
	if w, ok := c.st.(JobWaiter); ok {
		return w.WaitJob(ctx, id, states)
	}
	sub, err := c.Subscribe(ctx, id)
	if err != nil {
		return Job{}, err
	}
	defer sub.Close()
	for ev := range sub.C {
		if ev.Removed {
			return Job{}, check.JobErrorf(ErrNotFound, "job %d was removed", id)
		}
		if WaitedFor(ev.State, states) {
			j, err := c.Get(ctx, id)
			if errors.Is(err, ErrNotFound) {
				return Job{}, fmt.Errorf("job %d was removed: %w", id, ErrNotFound)
			}
			return j, err
		}
		if ev.State.Terminal() {
			j, err := c.Get(ctx, id)
			if err != nil {
				return Job{}, err
			}
			return j, fmt.Errorf("job %d ended %s without being %s: %w", id, ev.State, statesText(states), ErrFinished)
		}
	}
	if err := ctx.Err(); err != nil {
		return Job{}, err
	}
	if c.life.Err() != nil {
		return Job{}, fmt.Errorf("job %d: %w", id, ErrClosed)
	}
	if sub.Err() != nil {
		return Job{}, fmt.Errorf("job %d: %w", id, sub.Err())
	}
	return Job{}, fmt.Errorf("job %d: subscription ended", id)
}

// JobWaiter is implemented by stores that wait for a job's state
// themselves, such as a remote server's long-polling get; Client.Wait
// defers to them.
type JobWaiter interface {
	WaitJob(ctx context.Context, id int64, states []State) (Job, error)
}

// WaitedFor reports whether state is one that a Wait for states ends at:
// one of them, or a terminal state when there are none.
func WaitedFor(state State, states []State) bool {
	if len(states) == 0 {
		return state.Terminal()
	}
	return slices.Contains(states, state)
}

func checkStates(states []State) error {
	for _, st := range states {
		if !st.Valid() {
			return check.Invalidf("wait: unknown state %d", st)
		}
	}
	return nil
}

func statesText(states []State) string {
	if len(states) == 0 {
		return "completed, failed or cancelled"
	}
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = st.String()
	}
	return strings.Join(names, " or ")
}
