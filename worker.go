package rota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rotajobs/rota/internal/batch"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

// Handler runs one job. Returning nil completes it; see SnoozeFor,
// Permanent and CancelJob for the other outcomes; any other error fails
// the attempt, and the job retries with back-off until it runs out of
// attempts. The context is cancelled when the job is cancelled or removed
// (cause ErrCanceled), when its lease is lost (ErrLeaseLost), when the
// job's Timeout passes (its deadline, cause ErrTimedOut), or when the
// worker's ShutdownTimeout ends (ErrShutdown; the job is then handed back
// to pending when the handler returns an error, and completes when it
// returns nil).
type Handler interface {
	Work(ctx context.Context, job *Job) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, job *Job) error

// Work calls f.
func (f HandlerFunc) Work(ctx context.Context, job *Job) error { return f(ctx, job) }

// Handle registers a typed handler: the job's data is decoded from JSON
// into a T before fn runs. Data that does not decode fails the job
// permanently, since running it again would not help.
func Handle[T any](w *Worker, typ string, fn func(ctx context.Context, job *Job, args T) error) {
	w.Handle(typ, HandlerFunc(func(ctx context.Context, job *Job) error {
		var args T
		if err := json.Unmarshal(job.Data, &args); err != nil {
			return Permanent(fmt.Errorf("decode %s data into %T: %w", typ, args, err))
		}
		return fn(ctx, job, args)
	}))
}

// Context causes of a handler's cancellation.
var (
	// ErrLeaseLost: the worker no longer holds the job (its lease expired
	// and the job was taken back, or it ran out while no heartbeat could
	// reach the store).
	ErrLeaseLost = errors.New("lease lost")
	// ErrShutdown: the worker is shutting down and its ShutdownTimeout
	// has passed; the job is handed back to pending once the handler
	// returns.
	ErrShutdown = errors.New("worker shut down")
	// ErrTimedOut: the run lasted the job's Timeout (AddParams.Timeout).
	// An error the handler then returns fails the attempt as "timed out
	// after …"; the store takes the run back at that time in any case.
	ErrTimedOut = errors.New("run timed out")
)

// SnoozeError asks for the job to run again after Delay without using up
// an attempt. Return it with SnoozeFor.
type SnoozeError struct{ Delay time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("snooze for %v", e.Delay) }

// SnoozeFor returns an error that snoozes the job for d.
func SnoozeFor(d time.Duration) error { return &SnoozeError{Delay: d} }

// PermanentError fails the job without further retries.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent failure: " + errText(e.Err) }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent returns an error that fails the job for good.
func Permanent(err error) error { return &PermanentError{Err: err} }

// CancelError cancels the job from its handler.
type CancelError struct{ Err error }

func (e *CancelError) Error() string { return "cancelled: " + errText(e.Err) }
func (e *CancelError) Unwrap() error { return e.Err }

// CancelJob returns an error that cancels the job.
func CancelJob(err error) error { return &CancelError{Err: err} }

func errText(err error) string {
	if err == nil {
		return "no reason given"
	}
	return err.Error()
}

// WorkerConfig tunes a Worker. The zero value is ready to use.
type WorkerConfig struct {
	// Name identifies this worker in jobs it runs; zero means
	// hostname:pid.
	Name string
	// Concurrency is how many jobs run at once; zero means 10.
	Concurrency int
	// Prefetch bounds how many jobs the worker leases ahead of its free
	// slots, so that a slot that frees starts its next job at once rather
	// than after an accept's round trip; zero means Concurrency, at most
	// 256, and negative means none. The worker leases ahead only as many
	// as its slots are expected to free during four accepts' round trips,
	// from the recent durations of handlers and of accepts that did not
	// wait for work: with short jobs up to Prefetch, with jobs that run
	// much longer than an accept none, so that leased jobs wait here only
	// milliseconds. A job leased ahead keeps its lease by heartbeats like
	// a running one, does not run if it is cancelled meanwhile (as far as
	// the worker has learned: at once in process and over the event
	// stream, else at its next heartbeat), and is handed back without
	// using up an attempt if the worker shuts down first. Like a running
	// job, it counts toward its group's running bound, and a worker killed
	// outright loses its attempt when its lease expires.
	Prefetch int
	// LeaseTimeout overrides the types' lease timeouts when positive.
	LeaseTimeout time.Duration
	// PollWait is how long one accept call waits for work; zero means
	// 30s. Waiting is event-driven: a job added meanwhile starts at once.
	PollWait time.Duration
	// ShutdownTimeout is how long Run waits for running handlers after its
	// context ends, before it cancels them (cause ErrShutdown); zero means
	// 10s. The job of a cancelled handler is handed back to pending
	// without using up an attempt when the handler returns: until then
	// the worker keeps its lease, so that no other worker starts the job
	// while this one still runs it.
	ShutdownTimeout time.Duration
	// ShutdownGrace is how long Run then waits for the cancelled handlers
	// to return; the jobs of those still running after it are handed back
	// anyway. Zero means 5s. (Run also waits for finishes that are being
	// tried again, which end with their leases at the latest.)
	ShutdownGrace time.Duration
	// Logger receives the worker's logs; nil means the client's.
	Logger *slog.Logger
	// Middleware wraps every handler, the first listed outermost (see
	// Middleware).
	Middleware []Middleware
	// JobLogLevel is the lowest level of the records of a job's logger
	// (Logger) kept with the job; nil means slog.LevelInfo. The worker's
	// logger gets them by its own level.
	JobLogLevel slog.Leveler
}

// Worker runs jobs with registered handlers. Register handlers, then call
// Run.
type Worker struct {
	c        *Client
	cfg      WorkerConfig
	log      *slog.Logger
	handlers map[string]Handler

	mu      sync.Mutex
	running map[int64]*runningJob
	started bool
	kick    chan struct{} // wakes the heartbeat loop when a job starts
	// beatBy is when the heartbeat loop looks at the running jobs next at
	// the latest (Unix nanoseconds), zero while it is looking: a job that
	// starts kicks it only when it needs a look sooner.
	beatBy atomic.Int64

	finisher *batch.Batcher[FinishParams, error] // shares store calls among handlers ending together
	// logs is the store's per-job logs (nil: it keeps none), and
	// logFlusher shares its calls among the jobs sending records.
	logs       store.Logs
	logFlusher *batch.Batcher[store.AppendLogsParams, store.AppendLogsResult]
	pace       pace // how many jobs to lease ahead (ahead)

	// unsettled counts the jobs Run took that are not yet finished or
	// handed back; shutdown waits for it.
	unsettled sync.WaitGroup

	// halt ends Run's accepting, with the cause that Run returns (refused
	// tries the first refusal once, for the one message).
	halt    context.CancelCauseFunc
	refused sync.Once
}

type runningJob struct {
	// lease and typ are the worker's own, which a handler cannot change;
	// view is the handler's whole job. One copy of a job per run, not two:
	// a drain starts tens of thousands a second.
	lease  store.Lease
	typ    string
	view   Job
	rc     runContext // the handler's context, r.ctx
	ctx    context.Context
	cancel context.CancelCauseFunc

	// skew is how far this machine's clock is ahead of the store's, as
	// measured by the accept (a little over, by the accept's answer's
	// trip): the store's lease ends plus skew are on this machine's clock,
	// so that clocks that disagree do not matter.
	skew time.Duration

	mu         sync.Mutex
	leaseUntil time.Time // when the lease ends, on this machine's clock
	leaseLen   time.Duration
	ended      bool            // the goroutine is finishing, or shutdown released it
	started    bool            // the handler runs or ran, or the job was cancelled or held back before it could
	result     json.RawMessage // set by SetResult

	settleOnce sync.Once
	fin        runFinish // its finish, when sent without waiting

	// log is the run's log (Logger), made when the handler first asks
	// for it.
	logOnce sync.Once
	log     atomic.Pointer[jobLog]
}

// NewWorker returns a worker on c.
func NewWorker(c *Client, cfg WorkerConfig) *Worker {
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 10
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = 30 * time.Second
	}
	switch {
	case cfg.Prefetch == 0:
		cfg.Prefetch = min(cfg.Concurrency, maxDefaultPrefetch)
	case cfg.Prefetch < 0:
		cfg.Prefetch = 0
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = c.log
	}
	w := &Worker{c: c, cfg: cfg, log: cfg.Logger, handlers: map[string]Handler{}, running: map[int64]*runningJob{}, kick: make(chan struct{}, 1)}
	w.finisher = batch.New(maxFinishBatch, finishTimeout, func(ctx context.Context, ps []FinishParams) ([]error, error) {
		return c.FinishMany(ctx, ps)
	})
	if cfg.JobLogLevel == nil {
		w.cfg.JobLogLevel = slog.LevelInfo
	}
	if w.logs = logsOf(c.st); w.logs != nil {
		w.logFlusher = batch.New(maxFinishBatch, finishTimeout, w.logs.AppendLogs)
	}
	return w
}

// maxFinishBatch bounds how many finishes share one store call, and
// finishTimeout how long one may take.
const (
	maxFinishBatch = 1000
	finishTimeout  = 30 * time.Second
)

// Handle registers h for jobs of type typ. It panics if typ is not a valid
// type name, already has a handler, or the worker is running.
func (w *Worker) Handle(typ string, h Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic("rota: Handle called on a running worker")
	}
	if err := check.Type(typ); err != nil {
		panic("rota: Handle: " + err.Error())
	}
	if _, dup := w.handlers[typ]; dup {
		panic("rota: Handle: type " + typ + " already has a handler")
	}
	w.handlers[typ] = h
}

// Run accepts and runs jobs until ctx ends, then shuts down gracefully: it
// stops accepting, waits up to ShutdownTimeout for running handlers, then
// cancels the rest and, as each returns, hands its job back to pending
// (see ShutdownGrace). It returns nil after a shutdown caused by ctx.
//
// When the server refuses the worker's calls (ErrUnauthorized: a remote
// store's token is missing, wrong, revoked, or may not take these jobs),
// no retry can succeed: the worker logs it, shuts down the same way, and
// Run returns an error that matches ErrUnauthorized. Jobs it could not
// finish run again when their leases expire.
func (w *Worker) Run(ctx context.Context) error {
	ctx, types, err := w.begin(ctx)
	if err != nil {
		return err
	}
	defer w.halt(nil)
	unwatch := w.c.watch().Watch(w.cancelChanged)
	defer unwatch()
	base := context.WithoutCancel(ctx) // handlers outlive ctx for the grace period
	stopHeartbeats := w.startHeartbeats(base)
	d := w.newDispatcher(ctx)

	w.fetchLoop(ctx, base, types, d)
	w.shutdown(d, stopHeartbeats)
	if cause := context.Cause(ctx); errors.Is(cause, ErrUnauthorized) {
		return cause
	}
	return nil
}

// begin marks the worker as running, fixes its handlers (each wrapped in
// the middleware once, not per run), and returns Run's context, which
// refuse can end, and the type patterns to accept: exactly the handlers'
// types, quoted, since a type may hold pattern characters ("report?v=2")
// that must not take other types.
func (w *Worker) begin(ctx context.Context) (context.Context, []string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return nil, nil, errors.New("rota: worker already running")
	}
	if len(w.handlers) == 0 {
		return nil, nil, errors.New("rota: worker has no handlers")
	}
	w.started = true
	ctx, w.halt = context.WithCancelCause(ctx)
	types := make([]string, 0, len(w.handlers))
	for t, h := range w.handlers {
		types = append(types, glob.Quote(t))
		w.handlers[t] = chain(h, w.cfg.Middleware)
	}
	sort.Strings(types)
	return ctx, types, nil
}

// cancelChanged cancels a handler as soon as its job is cancelled or
// removed, or taken back from it (its lease expired), without waiting for
// the next heartbeat. Only changes about the handler's own lease count: a
// late event about an earlier run must not cancel this one.
func (w *Worker) cancelChanged(changes []Event) {
	for _, ch := range changes {
		if !ch.Removed && ch.State == Running {
			continue
		}
		w.mu.Lock()
		r := w.running[ch.ID]
		w.mu.Unlock()
		if r == nil {
			continue
		}
		gone := ch.Removed || ch.State == Cancelled
		r.mu.Lock()
		ended := r.ended
		r.mu.Unlock()
		// A run whose handler returned has nothing to stop but for the job
		// going (a drain's own completions end here), and the lease's tag
		// is made only when there may be.
		if !gone && ended || ch.Lease != store.LeaseTag(r.lease.Token) {
			continue
		}
		switch {
		case gone:
			r.cancel(ErrCanceled)
		case r.timedOut(time.Now()):
			r.cancel(ErrTimedOut)
		default:
			r.cancel(ErrLeaseLost)
		}
	}
}

// startHeartbeats runs the heartbeat loop until the returned function is
// called, which waits for the loop to end. Heartbeats go on through the
// shutdown, so that no lease runs out while its handler is being waited for.
func (w *Worker) startHeartbeats(base context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(base)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if w.logs == nil {
			w.heartbeatLoop(ctx)
			return
		}
		logsDone := make(chan struct{})
		go func() {
			defer close(logsDone)
			w.logLoop(ctx)
		}()
		w.heartbeatLoop(ctx)
		<-logsDone
	}()
	return func() {
		cancel()
		<-done
	}
}

// fetchLoop leases jobs for the free slots and hands them to d, until ctx
// ends or the server refuses the worker.
func (w *Worker) fetchLoop(ctx, base context.Context, types []string, d *dispatcher) {
	backlog := false // the last accept filled every slot it asked for
	// One waiter for all the loop's accepts, so that a job added while the
	// worker starts the last accept's jobs stays signalled, and the next
	// accept waits for one rather than go to the store at once.
	var aw *acceptWaiter
	if _, ok := w.c.st.(WaitAccepter); !ok {
		if pats, err := compilePatterns(types); err == nil {
			aw = &acceptWaiter{w: w.c.watch().Wait(pats)}
			defer aw.w.Stop()
		}
	}
	for ctx.Err() == nil {
		n := d.reserve(ctx, w.ahead())
		if n == 0 {
			continue // it waited for a slot, or for the end
		}
		jobs, took, err := w.fetch(ctx, types, n, backlog, aw)
		backlog = err == nil && len(jobs) == n
		d.unreserve(n - len(jobs)) // an error comes with no jobs
		if err != nil {
			if !w.acceptFailed(ctx, err) {
				return
			}
			continue
		}
		for i := range jobs {
			d.dispatch(w.start(base, jobs[i], took))
		}
	}
}

// fetch accepts up to n jobs, and returns them with the time by which
// their leases started. After an accept that filled every slot (backlog)
// there is likely more work: the next one does not wait for any, so that
// its time is the store's round trip, which ahead needs; an accept that
// waits could take any time. One that finds nothing is followed by one
// that waits.
func (w *Worker) fetch(ctx context.Context, types []string, n int, backlog bool, aw *acceptWaiter) ([]Job, time.Time, error) {
	wait := w.cfg.PollWait
	if backlog {
		wait = 0
	}
	sent := time.Now()
	jobs, err := w.c.acceptKept(ctx, AcceptParams{Types: types, Limit: n, Wait: wait, Worker: w.cfg.Name, LeaseTimeout: w.cfg.LeaseTimeout}, aw)
	// The leases started at the store at most now (an accept may wait
	// long before it takes jobs, so not when it was sent).
	took := time.Now()
	if wait == 0 && len(jobs) > 0 {
		w.pace.accepted(took.Sub(sent))
	}
	return jobs, took, err
}

// acceptFailed handles an accept's error and reports whether to go on
// accepting: not after the end of ctx, nor after the server refused the
// worker (ErrUnauthorized), which no retry can change. Other errors may
// pass, and the next accept is a second later.
func (w *Worker) acceptFailed(ctx context.Context, err error) bool {
	switch {
	case ctx.Err() != nil:
		return false
	case errors.Is(err, ErrUnauthorized):
		w.refuse(err)
		return false
	}
	w.log.Error("accept failed", "err", err)
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
	}
	return true
}

// shutdown ends dispatching, waits for the jobs Run took to be settled
// (settleAll), then stops the heartbeats and waits for the runners.
func (w *Worker) shutdown(d *dispatcher, stopHeartbeats func()) {
	d.close()
	w.settleAll()
	stopHeartbeats()
	d.wait()
}

// settleAll waits for the jobs Run took to be finished or handed back:
// first for their handlers, up to ShutdownTimeout; then it cancels the
// rest and waits for them to return, up to ShutdownGrace, heartbeats
// going on, so that no job is handed back while its handler still runs
// it. Only handlers that outlast the grace period too have their jobs
// handed back from under them.
func (w *Worker) settleAll() {
	settled := make(chan struct{})
	go func() {
		w.unsettled.Wait()
		close(settled)
	}()
	select {
	case <-settled:
	case <-time.After(w.cfg.ShutdownTimeout):
		w.cancelAll(ErrShutdown)
		select {
		case <-settled:
		case <-time.After(w.cfg.ShutdownGrace):
			w.releaseAll()
			// Finishes still under way end with their leases at the latest.
			<-settled
		}
	}
}

// dispatcher hands the jobs fetchLoop leases to runners, within the
// worker's slots.
//
// A job holds a lease slot from its accept until its handler returns, and
// a handler slot while its handler runs. There are Concurrency handler
// slots and up to Prefetch more lease slots: jobs leased ahead wait in the
// worker for a handler slot (see ahead), so that a slot that frees starts
// its next job at once instead of an accept later.
//
// Runners run handlers, one job at a time, and then wait for the next
// job: a goroutine per job would start on a small stack and grow it for
// every job.
//
// A job holds its slots while its handler runs, not while its finish
// reaches the store: they are free for the next job as soon as the
// handler returns, and finishing (a fsync away) is bounded separately, by
// twice as many finishes in flight as there are handler slots: short jobs
// end faster than a finish's round trip through the store (its queue, its
// batch, the fsync), and with only as many finishes as slots, a drain of
// short jobs finds the bound full, its handlers' slots held by finishes
// waiting for room. A runner waits for its job's handler slot, and hands
// its finish to the finisher and goes on to its next job (runFinish),
// unless the client has finish hooks, which run after the finish: then it
// waits for the finish. So there are at most one runner per lease slot
// and one per finish.
type dispatcher struct {
	w          *Worker
	stopping   context.Context // Run's: once it ends, jobs not started are held back
	leases     chan struct{}
	handlers   chan struct{}
	finishing  chan struct{}
	freed      chan struct{} // a lease slot was freed
	runq       chan *runningJob
	runners    int // only fetchLoop's goroutine starts runners
	maxRunners int
	wg         sync.WaitGroup
}

func (w *Worker) newDispatcher(stopping context.Context) *dispatcher {
	d := &dispatcher{
		w:         w,
		stopping:  stopping,
		leases:    make(chan struct{}, w.cfg.Concurrency+max(w.cfg.Prefetch, 0)),
		handlers:  make(chan struct{}, w.cfg.Concurrency),
		finishing: make(chan struct{}, 2*w.cfg.Concurrency),
		freed:     make(chan struct{}, 1),
		runq:      make(chan *runningJob),
	}
	d.maxRunners = cap(d.leases) + cap(d.finishing)
	return d
}

// reserve takes lease slots for an accept: once enough are free, every
// free one that ahead (the jobs to lease beyond the handler slots) allows.
// With jobs leased ahead, enough is half of them: the other half start
// while the accept travels, and the accepts stay large. It returns 0 after
// waiting for a slot to free or for ctx to end.
func (d *dispatcher) reserve(ctx context.Context, ahead int) int {
	limit := d.w.cfg.Concurrency + ahead
	if len(d.leases) > limit-max(1, ahead/2) {
		select {
		case <-d.freed:
		case <-ctx.Done():
		}
		return 0
	}
	// Only fetchLoop takes lease slots, so these sends cannot block.
	n := 0
	for len(d.leases) < limit {
		d.leases <- struct{}{}
		n++
	}
	return n
}

// unreserve gives back n lease slots that an accept did not fill.
func (d *dispatcher) unreserve(n int) {
	for range n {
		<-d.leases
	}
}

// dispatch hands r, which holds a lease slot, to an idle runner, or to a
// new one while there are fewer than maxRunners.
func (d *dispatcher) dispatch(r *runningJob) {
	if d.runners == d.maxRunners {
		// Some runner is between jobs: r holds a lease slot, so at most
		// cap(leases)-1 others wait for or run handlers and at most
		// cap(finishing) wait for finishes.
		d.runq <- r
		return
	}
	select {
	case d.runq <- r: // an idle runner takes it
	default:
		d.runners++
		d.wg.Add(1)
		go d.runner(r)
	}
}

// runner runs r, then each job dispatch hands it, until close.
func (d *dispatcher) runner(r *runningJob) {
	defer d.wg.Done()
	finished := func() { <-d.finishing }
	for ok := true; ok; r, ok = <-d.runq {
		// A job cancelled while it waited (shutdown, or the job's own
		// cancellation) needs no handler slot: it will not run.
		handling := d.takeHandlerSlot(r)
		if d.stopping.Err() != nil {
			d.w.holdBack(r) // the shutdown began while r waited
		}
		d.w.execute(r, func() {
			d.finishing <- struct{}{}
			if handling {
				<-d.handlers
			}
			<-d.leases
			select {
			case d.freed <- struct{}{}:
			default:
			}
		}, finished)
	}
}

// takeHandlerSlot waits for a handler slot for r, or for r's end,
// whichever comes first, and reports whether it took a slot. A free slot
// is taken without a select on r's context: asking a context for its
// Done channel makes one, and a drain starts tens of thousands of jobs a
// second, most of which find a slot free.
func (d *dispatcher) takeHandlerSlot(r *runningJob) bool {
	select {
	case d.handlers <- struct{}{}:
		return true
	default:
	}
	select {
	case d.handlers <- struct{}{}:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// close ends dispatching: jobs leased ahead that have not started go back
// now, without using up an attempt (execute releases them), rather than
// start after the shutdown began; idle runners exit, busy ones after
// their job.
func (d *dispatcher) close() {
	d.w.releaseWaiting()
	close(d.runq)
}

// wait waits a second at most for the runners to exit after the shutdown
// settled their jobs.
func (d *dispatcher) wait() {
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		d.w.log.Warn("handlers still running after shutdown; their jobs were handed back")
	}
}

// refuse stops the worker after the server refused a call with err
// (ErrUnauthorized): every later call would be refused the same way.
func (w *Worker) refuse(err error) {
	w.refused.Do(func() {
		w.log.Error("the server refused the worker's credentials; stopping: give it a token that is valid and may take these jobs", "err", err)
		w.halt(fmt.Errorf("rota: worker stopped: the server refused its calls: %w", err))
	})
}

// ahead is how many jobs to lease beyond the handler slots: as many as
// the slots are expected to free during aheadTrips accepts' round trips,
// at most Prefetch; none until a handler and an accept that did not wait
// for work have been timed. Run refills the jobs leased ahead when half are gone, so that
// none waits for an accept and accepts stay large; a job leased ahead
// waits here about aheadTrips round trips at most, so that jobs much
// longer than an accept are not leased ahead at all.
func (w *Worker) ahead() int {
	run, accept := w.pace.run.Load(), w.pace.accept.Load()
	if w.cfg.Prefetch == 0 || run == 0 || accept == 0 {
		return 0
	}
	n := aheadTrips * int64(w.cfg.Concurrency) * accept / run
	if n < 2 {
		// One job leased ahead hides little of an accept and makes
		// every accept one job long.
		return 0
	}
	return int(min(n, int64(w.cfg.Prefetch)))
}

const aheadTrips = 4

// maxDefaultPrefetch bounds the default Prefetch: a worker with many slots
// already accepts in large batches, and leasing more than 256 ahead makes
// its accepts no larger in effect (a 512-slot drain of no-op jobs runs
// about a tenth faster with 256 than with none, and no faster with 512;
// docs/benchmarks.md).
const maxDefaultPrefetch = 256

// pace keeps moving averages of how long handlers run and how long an
// accept that does not wait for work takes, for ahead. Zero: not seen yet.
type pace struct {
	run, accept atomic.Int64 // nanoseconds
}

func (p *pace) ran(d time.Duration)      { average(&p.run, d) }
func (p *pace) accepted(d time.Duration) { average(&p.accept, d) }

// average moves v an eighth of the way to d (all the way the first time).
func average(v *atomic.Int64, d time.Duration) {
	for {
		old := v.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if v.CompareAndSwap(old, max(next, 1)) {
			return
		}
	}
}

// start registers a job the store leased to the worker by the time took.
func (w *Worker) start(base context.Context, job Job, took time.Time) *runningJob {
	ctx, cancel := context.WithCancelCause(base)
	if job.Timeout > 0 {
		// The run's end on this machine's clock: the lease started by took.
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, took.Add(job.Timeout), ErrTimedOut)
		cancelRun := cancel
		cancel = func(cause error) { cancelRun(cause); stop() }
	}
	var skew time.Duration // without the lease's start, assume none
	if !job.StartedAt.IsZero() && job.StartedAt.Before(job.LeaseUntil) {
		skew = took.Sub(job.StartedAt) // the lease starts as the job does
	}
	leaseUntil := job.LeaseUntil.Add(skew)
	r := &runningJob{lease: job.Lease(), typ: job.Type, view: job, cancel: cancel, skew: skew, leaseUntil: leaseUntil, leaseLen: leaseUntil.Sub(took)}
	r.rc = runContext{Context: ctx, jc: jobContext{w: w, r: r}}
	r.ctx = &r.rc
	w.unsettled.Add(1)
	w.mu.Lock()
	if old := w.running[job.ID]; old != nil {
		// The job was taken back from an earlier run of this worker and
		// handed to it again: the earlier lease is lost.
		old.cancel(ErrLeaseLost)
	}
	w.running[job.ID] = r
	w.mu.Unlock()
	w.kickHeartbeats(took, min(max(r.leaseLen/4, 5*time.Millisecond), leaseUntil.Sub(took)))
	return r
}

// kickHeartbeats wakes the heartbeat loop for a job that just started,
// whose lease began by took and which needs a look within need of it (as
// the loop itself plans it: a quarter of the lease, at least 5ms, at most
// what is left of it), unless the loop looks at the running jobs by then
// anyway. Leases are seconds long and the loop looks every second at
// least, so a drain's jobs do not wake it, each to go through every
// running job again. The job is in w.running already: a loop that looked
// before it did not see it, and then has not planned its next look yet
// (beatBy 0) or plans it after this reads beatBy.
func (w *Worker) kickHeartbeats(took time.Time, need time.Duration) {
	if by := w.beatBy.Load(); by != 0 && by <= took.Add(need).UnixNano() {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Worker) forget(r *runningJob) {
	w.mu.Lock()
	if w.running[r.lease.ID] == r { // not a later run of the same job
		delete(w.running, r.lease.ID)
	}
	w.mu.Unlock()
	r.cancel(context.Canceled)
}

// settle marks the job as finished or handed back, once.
func (w *Worker) settle(r *runningJob) {
	r.settleOnce.Do(w.unsettled.Done)
}

// execute runs the handler, calls handlerDone, and finishes the job by its
// outcome; finished is called once the job is settled (finished, handed
// back, or given up), when execute returns or, for a finish that goes on
// without the caller (see runFinish), later.
func (w *Worker) execute(r *runningJob, handlerDone, finished func()) {
	async := false
	defer func() {
		if !async {
			w.done(r, finished)
		}
	}()
	r.mu.Lock()
	run := r.ctx.Err() == nil
	r.started = true
	r.mu.Unlock()
	began := time.Now()
	var err error
	if run {
		err = w.call(r)
	} else {
		err = context.Cause(r.ctx) // cancelled while it waited to start
	}
	took := time.Since(began)
	if run {
		w.pace.ran(took)
	}
	r.mu.Lock()
	released := r.ended
	r.ended = true
	// Read under r.mu, as cancelAll cancels: whether the shutdown's cancel
	// came before the handler returned decides the job's ending.
	cause := context.Cause(r.ctx)
	r.mu.Unlock()
	handlerDone()
	if released {
		return
	}
	if errors.Is(cause, ErrCanceled) || errors.Is(cause, ErrLeaseLost) {
		// The job is no longer ours; any finish would be refused.
		w.log.Info("job abandoned", "id", r.lease.ID, "type", r.typ, "reason", cause)
		return
	}
	p := FinishParams{Lease: r.lease}
	switch {
	case err != nil && errors.Is(cause, ErrShutdown):
		// Stopped by the shutdown, not failed: hand the job back without
		// using up the attempt.
		p.As = Release
	case err != nil && errors.Is(cause, ErrTimedOut):
		p.As, p.Error = Fail, lifecycle.TimedOutAfter(r.view.Timeout)
	case err == nil:
		r.mu.Lock()
		p.As, p.Result = Complete, r.result
		r.mu.Unlock()
	default:
		endWith(err, &p)
	}
	w.closeLog(r)
	if len(w.c.hooks.finish) == 0 {
		// Nothing to run after the finish here: the runner goes on to its
		// next job, and the finisher settles this one.
		async = true
		r.fin = runFinish{w: w, r: r, p: p, finished: finished}
		w.finisher.Go(p, &r.fin)
		return
	}
	ferr := w.finish(r, p)
	if !run {
		return // handed back without running: no run to report
	}
	ctx := context.Background()
	for _, h := range w.c.hooks.finish {
		h.AfterFinish(ctx, &r.view, p, took, ferr)
	}
}

// done ends r's run in the worker once its finish is done or given up:
// the heartbeats stop, Run's shutdown no longer waits for it, and
// finished frees its place among the finishes in flight.
func (w *Worker) done(r *runningJob, finished func()) {
	w.forget(r)
	w.settle(r)
	finished()
}

// endWith sets how a handler's error ends its job. It is apart from
// execute so that its errors.As targets, which escape to the heap, cost
// only jobs that fail.
func endWith(err error, p *FinishParams) {
	var snooze *SnoozeError
	var perm *PermanentError
	var cancelErr *CancelError
	switch {
	case errors.As(err, &snooze):
		p.As, p.RunAt = Snooze, time.Now().Add(snooze.Delay)
	case errors.As(err, &cancelErr):
		p.As, p.Error = Cancel, err.Error()
	case errors.As(err, &perm):
		p.As, p.Error, p.Permanent = Fail, err.Error(), true
	default:
		p.As, p.Error = Fail, err.Error()
	}
}

// Back-off between tries of a heartbeat or finish that failed for a
// reason that may pass.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 5 * time.Second
)

// retryable reports whether a failed heartbeat or finish may succeed if
// sent again. Answers about the job itself (the lease is lost, the job is
// cancelled or gone, the call is malformed, or the server refused the
// worker's token) will not change; anything
// else, such as a server that is restarting or unreachable, a dropped
// connection, or ErrUnavailable, may. Trying again is bounded by the
// lease, and giving up too soon costs a whole run of the job.
func retryable(err error) bool {
	for _, final := range []error{ErrWorkerConflict, ErrCanceled, ErrNotFound, ErrFinished, ErrInvalid, ErrClosed, ErrUnauthorized} {
		if errors.Is(err, final) {
			return false
		}
	}
	return true
}

// finish sends p for r's job, trying again with back-off while the error
// may pass and the lease holds: a finish that is given up on leaves the
// job to run again once its lease expires. The finisher bounds each store
// call (finishTimeout).
func (w *Worker) finish(r *runningJob, p FinishParams) error {
	return w.finishFrom(r, p, retryFirst)
}

// finishFrom is finish, with wait the back-off after the next failure.
func (w *Worker) finishFrom(r *runningJob, p FinishParams, wait time.Duration) error {
	for {
		errs, err := w.finisher.Do(context.Background(), p)
		if err == nil {
			err = errs[0]
		}
		if err == nil {
			return nil
		}
		d, again := w.finishFailed(r, p, err, wait)
		if !again {
			return err
		}
		time.Sleep(d)
		wait = min(2*wait, retryMax)
	}
}

// runFinish is a finish sent without waiting for it (finisher.Go): the
// runner goes on to its next job, sparing a goroutine blocked for every
// finish in flight and the wake-up of each when its batch commits. It
// lives in its runningJob, so that sending it allocates nothing more.
type runFinish struct {
	w        *Worker
	r        *runningJob
	p        FinishParams
	finished func()
}

// Answer takes the finisher's answer, on its goroutine: the job is done
// (Worker.done), unless the finish failed in a way that may pass while
// the lease holds; then it is tried again, as finish does, on a goroutine
// of its own.
func (f *runFinish) Answer(res, err error) {
	if err == nil {
		err = res
	}
	if err != nil {
		if d, again := f.w.finishFailed(f.r, f.p, err, retryFirst); again {
			go func() {
				time.Sleep(d)
				f.w.finishFrom(f.r, f.p, min(2*retryFirst, retryMax))
				f.w.done(f.r, f.finished)
			}()
			return
		}
	}
	f.w.done(f.r, f.finished)
}

// finishFailed logs a finish of r's job (p) that failed with err, and
// says whether to try it again and after how long (at most wait): while
// the error may pass and the lease holds.
func (w *Worker) finishFailed(r *runningJob, p FinishParams, err error, wait time.Duration) (time.Duration, bool) {
	r.mu.Lock()
	left := time.Until(r.leaseUntil)
	r.mu.Unlock()
	// The logger is made only when there is something to say: With
	// formats its attributes at once.
	log := w.log.With("id", r.lease.ID, "type", r.typ, "ending", p.As)
	switch {
	case errors.Is(err, ErrCanceled):
		log.Info("finish refused: the job was cancelled or removed", "err", err)
		return 0, false
	case errors.Is(err, ErrWorkerConflict):
		log.Warn("finish refused: the lease was lost, so the job runs again (or already has)", "err", err)
		return 0, false
	case errors.Is(err, ErrUnauthorized):
		log.Error("finish refused; the job runs again when its lease expires", "err", err)
		w.refuse(err)
		return 0, false
	case !retryable(err):
		log.Error("finish failed", "err", err)
		return 0, false
	case left <= 0:
		log.Error("finish failed, and the lease has run out: giving up; the job runs again", "err", err)
		return 0, false
	}
	// At most a quarter of the lease, so that several tries fit in it.
	d := min(wait, max(r.leaseLen/4, 5*time.Millisecond), left)
	log.Warn("finish failed; trying again while the lease holds", "err", err, "retry_in", d, "lease_left", left.Round(time.Millisecond))
	return d, true
}

// call runs the handler, turning a panic into an error with its stack.
func (w *Worker) call(r *runningJob) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	h := w.handlers[r.typ] // wrapped in the middleware by Run
	return h.Work(r.ctx, &r.view)
}

// cancelAll cancels the handlers still running with cause; their jobs
// are finished (or handed back) as each handler returns.
func (w *Worker) cancelAll(cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.running {
		r.mu.Lock()
		if !r.ended {
			r.cancel(cause)
		}
		r.mu.Unlock()
	}
}

// releaseWaiting cancels the jobs leased ahead whose handlers have not
// started (cause ErrShutdown), so that execute hands them back instead of
// running them.
func (w *Worker) releaseWaiting() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.running {
		w.holdBack(r)
	}
}

// holdBack cancels r with cause ErrShutdown unless its handler started.
func (w *Worker) holdBack(r *runningJob) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		r.started = true
		r.cancel(ErrShutdown)
	}
}

// releaseAll hands the jobs of handlers that are still running back to
// pending without using up an attempt: the last resort of a shutdown.
func (w *Worker) releaseAll() {
	w.mu.Lock()
	var ps []FinishParams
	var rs []*runningJob
	for _, r := range w.running {
		r.mu.Lock()
		if !r.ended {
			r.ended = true
			ps = append(ps, FinishParams{Lease: r.lease, As: Release})
			rs = append(rs, r)
		}
		r.mu.Unlock()
		r.cancel(ErrShutdown)
	}
	w.mu.Unlock()
	defer func() {
		for _, r := range rs {
			w.settle(r)
		}
	}()
	if len(ps) == 0 {
		return
	}
	w.log.Warn("handlers still running after the shutdown grace period; handing their jobs back anyway", "jobs", len(ps))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.c.FinishMany(ctx, ps); err != nil {
		w.log.Error("handing back unfinished jobs failed; they run again when their leases expire", "jobs", len(ps), "err", err)
		return
	}
	w.log.Info("handed back unfinished jobs", "jobs", len(ps))
}

// heartbeatLoop extends the leases of running jobs in batches, each when
// a third of its lease has passed. Heartbeats that fail for a reason that
// may pass are tried again with back-off (see heartbeatRetry); a job whose
// lease runs out before one gets through is no longer the worker's, and
// its handler is cancelled (ErrLeaseLost), as the store will hand the job
// to another.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	tick := time.NewTimer(0)
	defer tick.Stop()
	var backoff time.Duration // zero while heartbeats get through
	var retryAt time.Time     // while they do not, when to try again
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-w.kick:
		}
		w.beatBy.Store(0) // looking: a job that starts from now on kicks
		now := time.Now()
		next := time.Second
		var due, lost []*runningJob
		w.mu.Lock()
		for _, r := range w.running {
			r.mu.Lock()
			if !r.ended {
				left := r.leaseUntil.Sub(now)
				switch {
				case left <= 0:
					lost = append(lost, r)
				case left < r.leaseLen*2/3:
					due = append(due, r)
				}
				if left > 0 { // look again when a lease ends, at the latest
					next = min(next, max(r.leaseLen/4, 5*time.Millisecond), left)
				}
			}
			r.mu.Unlock()
		}
		w.mu.Unlock()
		for _, r := range lost {
			if r.ctx.Err() == nil {
				if r.timedOut(now) {
					r.cancel(ErrTimedOut)
					continue
				}
				w.log.Error("lease lost: it ran out before a heartbeat extended it; stopping the job", "id", r.lease.ID, "type", r.typ)
				r.cancel(ErrLeaseLost)
			}
		}
		switch {
		case len(due) == 0:
			backoff = 0
		case !now.Before(retryAt):
			if w.beatDue(ctx, due) {
				backoff = 0
			} else {
				backoff = heartbeatRetry(backoff, due)
				retryAt = time.Now().Add(backoff)
			}
		}
		if backoff > 0 {
			next = min(next, max(time.Until(retryAt), 5*time.Millisecond))
		}
		if !tick.Stop() {
			select {
			case <-tick.C:
			default:
			}
		}
		tick.Reset(next)
		w.beatBy.Store(time.Now().Add(next).UnixNano())
	}
}

// heartbeatRetry is the back-off after a failed try of the heartbeats of
// rs, the previous one being prev (zero after a success): from retryFirst,
// doubling up to retryMax, but at most a quarter of the shortest lease, so
// that several tries fit in what is left of it.
func heartbeatRetry(prev time.Duration, rs []*runningJob) time.Duration {
	d := min(max(2*prev, retryFirst), retryMax)
	for _, r := range rs {
		d = min(d, max(r.leaseLen/4, 5*time.Millisecond))
	}
	return d
}

// beatDue sends the heartbeats of the loop and reports whether they all
// got an answer that needs no retry.
func (w *Worker) beatDue(ctx context.Context, rs []*runningJob) bool {
	res, err := w.beat(ctx, rs, nil)
	if errors.Is(err, ErrUnauthorized) {
		w.refuse(err)
		return true // no retry can help
	}
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("heartbeat failed; trying again while the leases hold", "jobs", len(rs), "err", err)
		}
		return false
	}
	ok := true
	for i, hr := range res {
		if hr.Err != nil && retryable(hr.Err) {
			w.log.Warn("heartbeat failed; trying again while the lease holds", "id", rs[i].lease.ID, "type", rs[i].typ, "err", hr.Err)
			ok = false
		}
	}
	return ok
}

// beat sends heartbeats and applies their answers: a new lease end, or a
// lost lease. A job's heartbeat that may succeed if sent again changes
// nothing.
func (w *Worker) beat(ctx context.Context, rs []*runningJob, progress *float64) ([]HeartbeatResult, error) {
	ps := make([]HeartbeatParams, len(rs))
	for i, r := range rs {
		ps[i] = HeartbeatParams{Lease: r.lease, Progress: progress}
	}
	res, err := w.c.HeartbeatMany(ctx, ps)
	if err != nil {
		return nil, err
	}
	for i, r := range rs {
		switch err := res[i].Err; {
		case err == nil:
			r.mu.Lock()
			r.leaseUntil = res[i].LeaseUntil.Add(r.skew)
			r.mu.Unlock()
		case errors.Is(err, ErrCanceled):
			r.cancel(ErrCanceled)
		case retryable(err):
			// Left as it is: the loop tries again while the lease holds.
		case r.timedOut(time.Now()):
			r.cancel(ErrTimedOut)
		default:
			r.cancel(ErrLeaseLost)
		}
	}
	return res, nil
}

// timedOut says whether the run has lasted its job's Timeout by now. The
// lease, capped at the run's end, runs out at that same instant, so a
// lease that ends, a heartbeat refused or the store's take-back seen then
// is the timeout, and the handler learns it as ErrTimedOut whichever
// comes first. The store's take-back can arrive a little before the local
// deadline, which counts from when the accept's answer arrived: a loss
// within a moment of the run's end (a tenth of the timeout, at most 50ms)
// is the run's end.
func (r *runningJob) timedOut(now time.Time) bool {
	deadline, ok := r.ctx.Deadline()
	if !ok || r.view.Timeout <= 0 {
		return false
	}
	slack := min(50*time.Millisecond, r.view.Timeout/10)
	return !now.Add(slack).Before(deadline)
}

type runningKey struct{}

type jobContext struct {
	w *Worker
	r *runningJob
}

// runContext is a run's context: the run's cancellation and deadline,
// with its jobContext as the value of runningKey. It lives in the
// runningJob, where context.WithValue would cost an allocation per run.
type runContext struct {
	context.Context
	jc jobContext
}

func (c *runContext) Value(key any) any {
	if _, ok := key.(runningKey); ok {
		return &c.jc
	}
	return c.Context.Value(key)
}

func (c *runContext) String() string { return "rota job context" }

// SetResult records the result a job completes with, from inside its
// handler: v is encoded as JSON and stored when the handler returns nil.
func SetResult(ctx context.Context, v any) error {
	jc, ok := ctx.Value(runningKey{}).(*jobContext)
	if !ok {
		return errors.New("rota: SetResult called outside a job handler")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("rota: SetResult: %w", err)
	}
	if _, err := check.Result(b); err != nil {
		return fmt.Errorf("rota: SetResult: %w", err)
	}
	jc.r.mu.Lock()
	jc.r.result = b
	jc.r.mu.Unlock()
	return nil
}

// SetProgress reports a running job's progress (0..100) from inside its
// handler; it also extends the lease. It fails with ErrCanceled or
// ErrWorkerConflict when the job is no longer the handler's.
func SetProgress(ctx context.Context, percent float64) error {
	jc, ok := ctx.Value(runningKey{}).(*jobContext)
	if !ok {
		return errors.New("rota: SetProgress called outside a job handler")
	}
	res, err := jc.w.beat(ctx, []*runningJob{jc.r}, &percent)
	if err != nil {
		return err
	}
	return res[0].Err
}
