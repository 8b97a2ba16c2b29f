package rota

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/rotajobs/rota/store"
)

// Per-job logs: a handler's records kept with its job's attempt.
type (
	// LogRecord is one record of a job's log: Attempt and Seq (its place,
	// set by the store), Time, Level, Message and Attrs (one JSON object,
	// groups nested).
	LogRecord = store.LogRecord
	// LogsParams asks for a page of job ID's log: Attempt (zero: the
	// latest that logged), After (the Seq the page starts after) and
	// Limit (zero: store.MaxLogPage, 1,000).
	LogsParams = store.LogsParams
	// LogsResult is a page of a job's log: Attempt, the attempt it is of;
	// Attempts, every attempt that logged (records, bytes and records
	// dropped); Records; Next, the After of the next page (0: none).
	LogsResult = store.LogsResult
	// LogAttempt sums up one attempt's log: Attempt, Records, Bytes,
	// Dropped.
	LogAttempt = store.LogAttempt
	// AppendLogsParams appends Records to the log of the attempt a Lease
	// holds, with Dropped, the records the caller dropped itself.
	AppendLogsParams = store.AppendLogsParams
	// AppendLogsResult answers one append: Kept, Dropped (past the
	// bound), Err (a lost lease: ErrWorkerConflict, ErrCanceled).
	AppendLogsResult = store.AppendLogsResult
)

// MaxLogBytes bounds what one attempt of a job keeps of its log (64 KiB):
// records past it are counted and dropped, so that a job that logs in a
// loop cannot fill the store. A record counts its message and attributes
// plus 32 bytes.
const MaxLogBytes = store.MaxLogBytes

// ErrNoLogs: the client's store keeps no per-job logs.
var ErrNoLogs = errors.New("rota: the store keeps no per-job logs")

// Logs reads a page of job p.ID's log: by default the latest attempt that
// logged, from its first record. A job out of the caller's reach is a
// missing one (ErrNotFound).
func (c *Client) Logs(ctx context.Context, p LogsParams) (LogsResult, error) {
	lg, ok := c.st.(store.Logs)
	if !ok {
		return LogsResult{}, ErrNoLogs
	}
	return read(ctx, c, func() (LogsResult, error) { return lg.Logs(ctx, p) })
}

// AppendLogs appends records to the logs of attempts the caller holds,
// fenced by their leases as heartbeats are; one result per item. A
// Worker does this for its handlers (Logger); a worker of its own calls it
// before it finishes each job, since a finished run's lease appends no
// more.
func (c *Client) AppendLogs(ctx context.Context, ps []AppendLogsParams) ([]AppendLogsResult, error) {
	lg, ok := c.st.(store.Logs)
	if !ok {
		return nil, ErrNoLogs
	}
	return lg.AppendLogs(ctx, ps)
}

// Logger returns the logger of the job a handler runs, from the handler's
// context: its records are kept with the job's attempt (read with
// Client.Logs, rota logs ID, GET /v1/jobs/{id}/logs and the job's
// dashboard page), and go to the worker's logger too, with the job's id,
// type and attempt. The worker keeps records at WorkerConfig.JobLogLevel
// and above (Info by default), at most MaxLogBytes per attempt (the rest
// are counted and dropped), and sends them to the store in batches: every
// second while the job runs and before it finishes, so that logging costs
// no store call per record, and a job that logs nothing costs nothing. A
// worker killed outright loses what it had not sent, at most its last
// second. Outside a handler Logger returns slog.Default().
func Logger(ctx context.Context) *slog.Logger {
	jc, ok := ctx.Value(runningKey{}).(*jobContext)
	if !ok {
		return slog.Default()
	}
	return jc.r.jobLog().logger
}

// JobLogHandler returns the handler of the running job's log, from a
// handler's context, that keeps records with the job's attempt only (not
// also in the worker's logger, as Logger's do): for output the program
// shows otherwise, such as rota work's copy of a program's stderr. It is
// nil outside a handler.
func JobLogHandler(ctx context.Context) slog.Handler {
	jc, ok := ctx.Value(runningKey{}).(*jobContext)
	if !ok {
		return nil
	}
	l := jc.r.jobLog()
	return &logHandler{log: l, json: l.json}
}

// jobLog is a run's log: the records not yet sent, bounded as the store
// bounds the attempt's (store.MaxLogBytes), and the logger that fills it.
type jobLog struct {
	w      *Worker
	r      *runningJob
	logger *slog.Logger
	json   slog.Handler // formats a record's attributes (sink)
	sink   logSink

	mu      sync.Mutex
	pending []store.LogRecord
	bytes   int  // kept by this run, sent or not
	dropped int  // dropped and not yet reported
	full    bool // a record was dropped: every later one is
	closed  bool // the run ended: its lease appends no more

	flushMu sync.Mutex // one append of the run at a time, in order
}

// logSink captures what the JSON handler writes for one record: its
// attributes as a JSON object.
type logSink struct {
	mu  sync.Mutex
	out []byte
}

func (s *logSink) Write(p []byte) (int, error) {
	s.out = append(s.out[:0], p...)
	return len(p), nil
}

// jobLog returns the run's log, made at the first call: a job that does
// not log pays nothing for it.
func (r *runningJob) jobLog() *jobLog {
	r.logOnce.Do(func() {
		w := r.rc.jc.w
		l := &jobLog{w: w, r: r}
		l.json = slog.NewJSONHandler(&l.sink, &slog.HandlerOptions{
			Level: slog.Level(-1 << 20), // the record's level is decided by Enabled
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
					return slog.Attr{}
				}
				return a
			},
		})
		next := w.log.Handler().WithAttrs([]slog.Attr{slog.Int64("id", r.lease.ID), slog.String("type", r.typ), slog.Int("attempt", r.view.Attempt)})
		l.logger = slog.New(&logHandler{log: l, json: l.json, next: next})
		r.log.Store(l)
	})
	return r.log.Load()
}

// logHandler is the slog.Handler of a job's logger: it keeps records in
// the run's log and passes them on to next (the worker's logger, nil for
// JobLogHandler).
type logHandler struct {
	log  *jobLog
	json slog.Handler
	next slog.Handler
}

func (h *logHandler) keeps(level slog.Level) bool {
	return h.log.w.logs != nil && level >= h.log.w.cfg.JobLogLevel.Level()
}

func (h *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.keeps(level) || h.next != nil && h.next.Enabled(ctx, level)
}

func (h *logHandler) Handle(ctx context.Context, rec slog.Record) error {
	var err error
	if h.next != nil && h.next.Enabled(ctx, rec.Level) {
		err = h.next.Handle(ctx, rec)
	}
	if !h.keeps(rec.Level) {
		return err
	}
	t := rec.Time
	if t.IsZero() {
		t = time.Now()
	}
	kept := store.LogRecord{Time: t.UTC(), Level: rec.Level, Message: cleanText(rec.Message)}
	s := &h.log.sink
	s.mu.Lock()
	if jerr := h.json.Handle(ctx, rec); jerr == nil {
		attrs := bytes.TrimSpace(s.out)
		if len(attrs) > 2 { // not {}
			kept.Attrs = bytes.Clone(attrs)
		}
	}
	s.mu.Unlock()
	h.log.add(kept)
	return err
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.json = h.json.WithAttrs(as)
	if h.next != nil {
		c.next = h.next.WithAttrs(as)
	}
	return &c
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.json = h.json.WithGroup(name)
	if h.next != nil {
		c.next = h.next.WithGroup(name)
	}
	return &c
}

// cleanText is s as text a store keeps: valid UTF-8 without NUL bytes.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

// add keeps rec to send, or counts it as dropped past the attempt's bound.
func (l *jobLog) add(rec store.LogRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if size := rec.Size(); l.full || l.bytes+size > store.MaxLogBytes {
		l.full = true
		l.dropped++
		return
	}
	l.bytes += rec.Size()
	l.pending = append(l.pending, rec)
}

// take returns what is to send (ok false: nothing), and closes the log
// when last.
func (l *jobLog) take(last bool) (p store.AppendLogsParams, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return p, false
	}
	l.closed = last
	p = store.AppendLogsParams{Lease: l.r.lease, Records: l.pending, Dropped: l.dropped}
	l.pending, l.dropped = nil, 0
	return p, len(p.Records) > 0 || p.Dropped > 0
}

// giveBack puts records that could not be sent back before those logged
// since, to be sent at the next flush.
func (l *jobLog) giveBack(p store.AppendLogsParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.pending = append(p.Records, l.pending...)
	l.dropped += p.Dropped
}

// logFlushInterval is how often a worker sends its running jobs' records.
const logFlushInterval = time.Second

// logLoop sends the running jobs' records every logFlushInterval until
// ctx ends.
func (w *Worker) logLoop(ctx context.Context) {
	t := time.NewTicker(logFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var ls []*jobLog
		w.mu.Lock()
		for _, r := range w.running {
			if l := r.log.Load(); l != nil {
				ls = append(ls, l)
			}
		}
		w.mu.Unlock()
		w.flushLogs(ctx, ls, false)
	}
}

// flushLogs sends the records of logs ls in one call; with last, the runs
// are ending and their logs take no more records. A log another flush is
// sending is left for later, unless last (then it waits, so that records
// arrive in order before the finish).
func (w *Worker) flushLogs(ctx context.Context, ls []*jobLog, last bool) {
	var ps []store.AppendLogsParams
	var sent []*jobLog
	for _, l := range ls {
		if last {
			l.flushMu.Lock()
		} else if !l.flushMu.TryLock() {
			continue
		}
		if p, ok := l.take(last); ok {
			ps = append(ps, p)
			sent = append(sent, l)
		} else {
			l.flushMu.Unlock()
		}
	}
	if len(ps) == 0 {
		return
	}
	defer func() {
		for _, l := range sent {
			l.flushMu.Unlock()
		}
	}()
	res, err := w.logFlusher.Do(ctx, ps...)
	if err != nil {
		if !last && retryable(err) {
			for i, l := range sent {
				l.giveBack(ps[i])
			}
		}
		w.log.Warn("sending jobs' log records failed", "jobs", len(ps), "err", err)
		return
	}
	for i, r := range res {
		if r.Err != nil && retryable(r.Err) && !last {
			sent[i].giveBack(ps[i])
		}
	}
}

// closeLog sends what is left of r's log before its run is finished
// (whose lease then appends no more).
func (w *Worker) closeLog(r *runningJob) {
	l := r.log.Load()
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	w.flushLogs(ctx, []*jobLog{l}, true)
}

// logsOf is st's per-job logs, nil when it keeps none.
func logsOf(st store.Store) store.Logs {
	lg, _ := st.(store.Logs)
	return lg
}
