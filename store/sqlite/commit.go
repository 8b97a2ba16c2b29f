package sqlite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rotajobs/rota/store"
)

// The commit pipeline. Every write is a request to the writer goroutine,
// which runs the requests that are waiting together in one transaction
// (group commit) and commits it with synchronous=NORMAL: SQLite writes the
// transaction to the write-ahead log but does not fsync it. The writer
// then hands the committed batch to the syncer goroutine and goes on with
// the next batch at once. The syncer fdatasyncs the log, once for every
// batch committed before the sync began, and only then answers the callers
// of adds and finishes and publishes their changes. So an acknowledged add
// or finish is on disk, as with synchronous=FULL, but the writer never
// waits for the disk: while one fsync runs, the next batches execute.
//
// Requests that need no fsync (accepts, heartbeats that only extend
// leases) are answered as soon as every durable batch committed before
// them is synced, without a sync of their own: losing them in a power
// failure only makes a job run again. Answers and changes go out in commit
// order, so a caller never learns of a job whose add could still be lost.

// request is one caller's unit of work for the writer. fn runs inside the
// shared transaction, within a savepoint of its own, so that its failure
// undoes only its own writes.
type request struct {
	ctx     context.Context
	fn      func(w *txn) error
	durable bool // must be fsynced before the caller is answered
	done    chan error
	err     error // fn's own outcome, answered after the commit
}

// committed is a part of one transaction, after its commit: the requests
// to answer and the changes to publish, once durable ones are synced.
type committed struct {
	reqs    []*request
	changes []store.Event
	durable bool
}

// write runs fn in the writer's next transaction and waits for its
// commit (and, when durable, for the fsync that follows it).
func (s *Store) write(ctx context.Context, durable bool, fn func(w *txn) error) error {
	r := &request{ctx: ctx, fn: fn, durable: durable, done: make(chan error, 1)}
	// Check closing first: select picks at random among ready cases, and
	// s.reqs has room even after the writer has stopped.
	select {
	case <-s.closing:
		return store.ErrClosed
	default:
	}
	select {
	case s.reqs <- r:
	case <-s.closing:
		return store.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, the request is answered, unless the writer stopped
	// first; waiting for the answer even when ctx ends keeps
	// "acknowledged" and "committed" the same.
	select {
	case err := <-r.done:
		return diskFull(err)
	case <-s.stopped:
		// Every committed batch is answered before stopped closes, so an
		// answer may still be waiting.
		select {
		case err := <-r.done:
			return diskFull(err)
		default:
			return store.ErrClosed
		}
	}
}

func (s *Store) writeLoop() {
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		s.syncLoop()
	}()
	defer func() {
		close(s.commits)
		<-synced
		for _, st := range s.stmts {
			st.Close()
		}
		s.conn.Close()
		close(s.stopped)
	}()
	batch := make([]*request, 0, s.cfg.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		case <-s.closing:
			s.failAll(store.ErrClosed)
			return
		}
	fill:
		for len(batch) < s.cfg.MaxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		if err := s.failed(); err != nil {
			for _, r := range batch {
				r.done <- err
			}
			continue
		}
		// Requests that need no fsync run first, so that they can be
		// answered before the durable part of the same transaction is
		// synced: a worker gets its jobs without waiting for another
		// worker's finishes to reach the disk.
		// Both parts go on to the syncer, so they are new slices.
		var light, heavy []*request
		for _, r := range batch {
			if r.durable {
				heavy = append(heavy, r)
			} else {
				light = append(light, r)
			}
		}
		s.runBatch(light, heavy)
	}
}

// failed returns the error that stopped the store taking writes, if any.
func (s *Store) failed() error {
	if err := s.broken.Load(); err != nil {
		return *err
	}
	return nil
}

func (s *Store) failAll(err error) {
	for {
		select {
		case r := <-s.reqs:
			r.done <- err
		default:
			return
		}
	}
}

// runBatch runs light, then heavy, in one transaction, commits it and
// passes both parts to the syncer.
func (s *Store) runBatch(light, heavy []*request) {
	c := s.conn
	answer := func(err error) {
		for _, part := range [][]*request{light, heavy} {
			for _, r := range part {
				r.done <- err
			}
		}
	}
	if _, err := c.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		answer(fmt.Errorf("sqlite: begin: %w", err))
		return
	}
	w := &txn{s: s, db: c, now: s.cfg.Clock().UTC(), own: true}
	single := len(light)+len(heavy) == 1
	// ended is set when the transaction ended under a request: SQLite
	// rolls the whole transaction back on some errors (a full disk, an I/O
	// error), and then the requests after it must not run, since each
	// savepoint would begin and commit a transaction of its own, for
	// requests answered with the batch's error.
	var ended error
	run := func(r *request) {
		if r.err = r.ctx.Err(); r.err != nil {
			return
		}
		if ended != nil {
			r.err = ended
			return
		}
		mark := len(w.changes)
		w.clocks = nil // each request reads the clocks as it begins
		if single {
			r.err = r.fn(w)
			return
		}
		if _, err := c.ExecContext(bg, "SAVEPOINT req"); err != nil {
			r.err = err
			return
		}
		if r.err = r.fn(w); r.err != nil {
			w.changes = w.changes[:mark]
			if _, err := c.ExecContext(bg, "ROLLBACK TO req"); err != nil {
				ended = fmt.Errorf("sqlite: the transaction was rolled back: %w", r.err)
				r.err = errors.Join(r.err, err)
				return
			}
		}
		if _, err := c.ExecContext(bg, "RELEASE req"); err != nil {
			// The savepoint is gone, so is the transaction.
			ended = fmt.Errorf("sqlite: the transaction ended under a request: %w", err)
			r.err = cmp.Or(r.err, err)
		}
	}
	for _, r := range light {
		run(r)
	}
	split, splitApplied := len(w.changes), len(w.applied)
	for _, r := range heavy {
		run(r)
	}
	if ended != nil {
		c.ExecContext(bg, "ROLLBACK")
		s.startReads(w)
		for _, part := range [][]*request{light, heavy} {
			for _, r := range part {
				r.done <- cmp.Or(r.err, ended)
			}
		}
		return
	}
	if single {
		r := append(light, heavy...)[0]
		if r.err != nil {
			c.ExecContext(bg, "ROLLBACK")
			s.startReads(w)
			r.done <- r.err
			return
		}
	}
	// Reads after the last commit see it and nothing later (readAfter).
	for _, taken := range s.snapshots {
		<-taken
	}
	s.snapshots = s.snapshots[:0]
	if _, err := c.ExecContext(bg, "COMMIT"); err != nil {
		c.ExecContext(bg, "ROLLBACK")
		s.startReads(w)
		answer(fmt.Errorf("sqlite: commit: %w", err))
		return
	}
	s.startReads(w)
	if len(light) > 0 && len(heavy) > 0 && touched(w.changes[:split], w.changes[split:], w.applied[splitApplied:]) {
		// The heavy part changed jobs the light part claimed, and the
		// claims' reads, which began after the commit, see those changes:
		// the accepts are answered once they are durable.
		s.commits <- committed{reqs: append(light, heavy...), changes: w.changes, durable: true}
		return
	}
	if len(light) > 0 {
		s.commits <- committed{reqs: light, changes: w.changes[:split:split]}
	}
	if len(heavy) > 0 {
		s.commits <- committed{reqs: heavy, changes: w.changes[split:], durable: true}
	}
}

// touched reports whether the later changes, or the later plans applied
// to jobs (some of which have no event), touch a job that the claims
// among earlier (their running events) took.
func touched(earlier, later []store.Event, applied []int64) bool {
	var claimed map[int64]bool
	for _, e := range earlier {
		if e.State == store.Running && !e.Removed {
			if claimed == nil {
				claimed = make(map[int64]bool, len(earlier))
			}
			claimed[e.ID] = true
		}
	}
	for _, e := range later {
		if claimed[e.ID] {
			return true
		}
	}
	for _, id := range applied {
		if claimed[id] {
			return true
		}
	}
	return false
}

// startReads starts the reads of w's requests (readAfter) once w's
// transaction has ended. They run whether or not it committed, so that
// whoever waits for one is answered: a read of what a rolled-back
// request wrote finds it undone.
func (s *Store) startReads(w *txn) {
	for _, read := range w.reads {
		taken := make(chan struct{})
		s.snapshots = append(s.snapshots, taken)
		s.reading.Add(1)
		go func() {
			defer s.reading.Done()
			var once sync.Once
			snapshot := func() { once.Do(func() { close(taken) }) }
			defer snapshot()
			read(snapshot)
		}()
	}
}

// syncLoop answers committed batches in commit order, fsyncing the
// write-ahead log first whenever a durable one is among them.
func (s *Store) syncLoop() {
	var pending []committed
	open := true
	for open || len(pending) > 0 {
		if len(pending) == 0 {
			c, ok := <-s.commits
			if !ok {
				return
			}
			pending = append(pending, c)
		}
	more:
		for open {
			select {
			case c, ok := <-s.commits:
				if !ok {
					open = false
					break more
				}
				pending = append(pending, c)
			default:
				break more
			}
		}
		// After a failed sync nothing more is acknowledged or published,
		// not even a batch that needs no sync: it may depend on what the
		// failed sync should have made durable, and a later sync can
		// succeed without having written it (Linux reports a writeback
		// error once).
		if err := s.failed(); err != nil {
			for _, c := range pending {
				s.release(c, err)
			}
			pending = pending[:0]
			continue
		}
		// What comes before the first durable batch needs no sync.
		i := 0
		for ; i < len(pending) && !pending[i].durable; i++ {
			s.release(pending[i], nil)
		}
		pending = pending[i:]
		if len(pending) == 0 {
			continue
		}
		// One sync covers every batch committed before it starts.
		err := s.syncWAL()
		if err != nil {
			err = fmt.Errorf("sqlite: sync %s-wal: %w", s.path, err)
			// The log's state on disk is unknown now: stop taking writes
			// rather than acknowledge anything else.
			s.broken.CompareAndSwap(nil, &err)
		}
		for _, c := range pending {
			s.release(c, err)
		}
		pending = pending[:0]
	}
}

// release answers c's requests and publishes its changes; when the sync
// it waited for failed, it answers with syncErr and publishes nothing.
func (s *Store) release(c committed, syncErr error) {
	if syncErr != nil {
		for _, r := range c.reqs {
			r.done <- syncErr
		}
		return
	}
	s.feed.Deliver(c.changes)
	for _, r := range c.reqs {
		r.done <- r.err
	}
}

// diskFull makes a write refused for want of disk space (SQLite's
// SQLITE_FULL, or an I/O error of ENOSPC, EDQUOT or EFBIG: the disk, a
// quota or the file size limit) match
// store.ErrUnavailable: nothing was written, and the same write may
// succeed once space is freed, so callers answer "try again later" (the
// HTTP API a 503) rather than report an internal error.
func diskFull(err error) error {
	if isDiskFull(err) {
		return fmt.Errorf("%w: the database's disk is full (%v)", store.ErrUnavailable, err)
	}
	return err
}
