package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
)

const (
	// progressDirective starts a stdout line that reports progress.
	progressDirective = "rota:progress"
	// maxTextResult bounds a result stored as a JSON string.
	maxTextResult = 64 << 10
	// maxErrorTail is how much of the end of stderr becomes the error.
	maxErrorTail = 2 << 10
	// exitPermanent is the exit status that fails a job for good
	// (EX_DATAERR from sysexits.h).
	exitPermanent = 65
)

// runner is the handler "rota work" registers: it runs the program once
// per job.
type runner struct {
	argv    []string
	timeout time.Duration
	grace   time.Duration
	log     *slog.Logger
	client  *rota.Client
	stderr  io.Writer
	progs   *programs
	handled *handledJobs
	// stopNow ends when running programs must stop at once; shutdown
	// ends when the worker's shutdown grace period has passed.
	stopNow  context.Context
	shutdown context.Context
}

// Work runs the program for one job and turns how it ended into the job's
// outcome.
func (r *runner) Work(ctx context.Context, job *rota.Job) error {
	start := time.Now()
	log := r.log.With("id", job.ID, "type", job.Type, "attempt", job.Attempt)
	log.Info("job started")

	// stopCtx ends when the program must stop; its cause says why.
	stopCtx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	if r.timeout > 0 {
		t := time.AfterFunc(r.timeout, func() { stop(errTimedOut) })
		defer t.Stop()
	}
	stopAfter := context.AfterFunc(r.stopNow, func() { stop(errStopNow) })
	defer stopAfter()
	g := &guard{c: r.client, log: log, lease: job.Lease(), leaseLen: time.Until(job.LeaseUntil), shutdown: r.shutdown}
	programDone := make(chan struct{})
	go g.watch(ctx, stop, programDone)

	progress := newProgressReporter(ctx, g, log)
	out := &stdoutParser{limit: store.MaxDataSize, onProgress: progress.set,
		onBad: func(line string) {
			log.Warn("ignoring a bad progress line; want \"rota:progress N\" with N in 0..100", "line", line)
		}}
	tail := &tailBuffer{max: maxErrorTail}
	echo := &linePrefixer{w: r.stderr, prefix: fmt.Sprintf("job %d | ", job.ID)}

	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	data := job.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	cmd.Stdin = bytes.NewReader(append(bytes.Clone(data), '\n'))
	cmd.Stdout = out
	cmd.Stderr = io.MultiWriter(tail, echo)
	cmd.Env = append(os.Environ(),
		"ROTA_JOB_ID="+strconv.FormatInt(job.ID, 10),
		"ROTA_JOB_TYPE="+job.Type,
		"ROTA_JOB_ATTEMPT="+strconv.Itoa(job.Attempt),
		"ROTA_JOB_MAX_ATTEMPTS="+strconv.Itoa(job.MaxAttempts),
		"ROTA_JOB_KEY="+job.Key,
		"ROTA_JOB_GROUP="+job.Group,
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A program that exits but leaves a child holding stdout or stderr
	// open does not hold up the job for longer than this.
	cmd.WaitDelay = r.grace

	startErr, waitErr, stopped := runProgram(stopCtx, cmd, r.grace, r.progs)
	close(programDone)
	out.flush()
	echo.flush()
	progress.stop()
	took := time.Since(start).Round(time.Millisecond)

	// Decide the outcome.
	p := rota.FinishParams{Lease: job.Lease()}
	var exitErr *exec.ExitError
	switch {
	case startErr != nil:
		p.As, p.Error = rota.Fail, fmt.Sprintf("cannot start %s: %v", r.argv[0], startErr)
		log.Error("job failed: cannot start the program", "err", startErr)
	case stopped:
		switch cause := context.Cause(stopCtx); {
		case errors.Is(cause, errTimedOut):
			p.As, p.Error = rota.Fail, withTail(fmt.Sprintf("timed out after %v and was stopped", r.timeout), tail)
			log.Warn("job failed", "err", firstLine(p.Error), "took", took)
		case errors.Is(cause, errStopNow) || errors.Is(cause, rota.ErrShutdown) && g.isDetached():
			p.As = rota.Release // gives the attempt back
			log.Info("job handed back: the worker is stopping", "took", took)
		default: // cancelled, removed, lease lost, shutdown: not ours to finish
			log.Info("job stopped", "reason", cause, "took", took)
			r.handled.add(job.ID) // this says what the runtime's "job abandoned" would
			return cause
		}
	case waitErr == nil || errors.Is(waitErr, exec.ErrWaitDelay):
		if waitErr != nil {
			log.Warn("the program exited but something it started kept its output open; carrying on without it")
		}
		p.As, p.Result = rota.Complete, out.result()
	case errors.As(waitErr, &exitErr):
		ws, _ := exitErr.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			p.Error = withTail("killed by signal "+ws.Signal().String(), tail)
		} else {
			p.Error = withTail(fmt.Sprintf("exit status %d", exitErr.ExitCode()), tail)
		}
		p.As, p.Permanent = rota.Fail, exitErr.ExitCode() == exitPermanent
		if p.Permanent {
			log.Warn("job failed for good", "err", firstLine(p.Error), "took", took)
		} else {
			log.Warn("job failed", "err", firstLine(p.Error), "took", took)
		}
	default:
		p.As, p.Error = rota.Fail, withTail(waitErr.Error(), tail)
		log.Error("job failed", "err", waitErr, "took", took)
	}

	// Finish the job here rather than through the handler's return
	// value: the runtime's own completion carries no result, and it
	// finishes nothing at all when it has (wrongly) given the job up (see
	// guard). The runtime's own finish that follows, with the same lease,
	// then changes nothing; r.handled keeps its complaint out of the log.
	err := r.finish(log, p)
	if err != nil && !lost(err) {
		// Let the runtime try once more.
		switch {
		case p.As == rota.Release:
			return rota.SnoozeFor(0)
		case p.As == rota.Fail && p.Permanent:
			return rota.Permanent(errors.New(p.Error))
		case p.As == rota.Fail:
			return errors.New(p.Error)
		}
		return err
	}
	r.handled.add(job.ID)
	if err == nil && p.As == rota.Complete {
		log.Info("job completed", "took", took, "result_bytes", len(p.Result))
	}
	return nil
}

// handledJobs are jobs their handler finished itself, whose redundant
// finish by the runtime (or its "abandoned" notice) is not worth logging.
type handledJobs struct {
	mu    sync.Mutex
	jobs  map[int64]time.Time
	sweep int // size at which to drop old entries
}

func (h *handledJobs) add(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.jobs == nil {
		h.jobs = map[int64]time.Time{}
	}
	now := time.Now()
	// The runtime logs right after the handler returns, or never (a
	// second completion just succeeds), so old entries are dropped.
	if len(h.jobs) >= h.sweep {
		for id, at := range h.jobs {
			if now.Sub(at) > time.Minute {
				delete(h.jobs, id)
			}
		}
		h.sweep = max(256, 2*len(h.jobs))
	}
	h.jobs[id] = now
}

func (h *handledJobs) take(id int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.jobs[id]
	delete(h.jobs, id)
	return ok
}

// quietHandler drops the runtime's log records about jobs their handler
// already finished: "finish failed" (the job was no longer running) and
// "job abandoned".
type quietHandler struct {
	slog.Handler
	handled *handledJobs
}

func (q quietHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Message == "finish failed" || rec.Message == "job abandoned" {
		var id int64
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "id" && a.Value.Kind() == slog.KindInt64 {
				id = a.Value.Int64()
				return false
			}
			return true
		})
		if id != 0 && q.handled.take(id) {
			return nil
		}
	}
	return q.Handler.Handle(ctx, rec)
}

func (q quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{q.Handler.WithAttrs(attrs), q.handled}
}

func (q quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{q.Handler.WithGroup(name), q.handled}
}

// finish ends the job with p, retrying a failed request twice.
func (r *runner) finish(log *slog.Logger, p rota.FinishParams) error {
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := r.client.Finish(ctx, p)
		cancel()
		if err == nil || p.As == rota.Release && errors.Is(err, rota.ErrWorkerConflict) {
			return nil // a release may race with the runtime's own
		}
		if lost(err) || errors.Is(err, rota.ErrInvalid) || i == 2 {
			log.Warn("could not record how the job ended", "ending", p.As, "err", err)
			return err
		}
		time.Sleep(time.Duration(i+1) * 500 * time.Millisecond)
	}
}

// guard decides when a job's program must stop because the job is no
// longer the worker's.
//
// The runtime cancels a handler's context when it believes the lease lost.
// Over a remote server it can be wrong: the event stream may deliver the
// job's own earlier "pending" change (from its add, or a retry) after the
// accept answer, which the runtime takes for a lost lease. So before
// stopping the program for a lost lease, the guard asks the server with a
// heartbeat. If the job is still ours, it carries on "detached": it keeps
// checking the lease itself, reports progress with plain heartbeats, and
// finishes the job itself, since the runtime will not.
type guard struct {
	c        *rota.Client
	log      *slog.Logger
	lease    rota.Lease
	leaseLen time.Duration
	shutdown context.Context

	mu       sync.Mutex
	detached bool
}

func (g *guard) isDetached() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.detached
}

func (g *guard) watch(ctx context.Context, stop context.CancelCauseFunc, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	cause := context.Cause(ctx)
	if !errors.Is(cause, rota.ErrLeaseLost) {
		stop(cause)
		return
	}
	if err := g.heartbeat(nil); lost(err) {
		stop(cause)
		return
	}
	g.log.Debug("the runtime reported the job's lease lost, but the server says the job is still ours; carrying on")
	g.mu.Lock()
	g.detached = true
	g.mu.Unlock()
	interval := max(g.leaseLen/3, 500*time.Millisecond)
	for {
		select {
		case <-done:
			return
		case <-g.shutdown.Done():
			// The runtime hands back running jobs now; a detached one
			// is handed back by its handler.
			stop(rota.ErrShutdown)
			return
		case <-time.After(interval):
		}
		if err := g.heartbeat(nil); lost(err) {
			stop(err)
			return
		} else if err != nil {
			g.log.Warn("heartbeat failed", "err", err)
		}
	}
}

// heartbeat extends the lease, and sets the progress if given.
func (g *guard) heartbeat(progress *float64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := g.c.Heartbeat(ctx, rota.HeartbeatParams{Lease: g.lease, Progress: progress})
	return err
}

// lost reports whether err says the job is no longer the worker's.
func lost(err error) bool {
	return errors.Is(err, rota.ErrCanceled) || errors.Is(err, rota.ErrWorkerConflict) || errors.Is(err, rota.ErrNotFound)
}

// runProgram starts cmd in its own process group and waits for it. When
// ctx ends first, it sends SIGTERM to the group, and SIGKILL after grace
// (or once the program itself has exited, to whatever it left behind);
// stopped reports that.
func runProgram(ctx context.Context, cmd *exec.Cmd, grace time.Duration, progs *programs) (startErr, waitErr error, stopped bool) {
	if err := cmd.Start(); err != nil {
		return err, nil, false
	}
	pid := cmd.Process.Pid
	progs.add(pid)
	defer progs.remove(pid)

	var mu sync.Mutex // orders signals against the reaping of the program
	exited := false
	signal := func(sig syscall.Signal) bool {
		mu.Lock()
		defer mu.Unlock()
		if exited {
			return false
		}
		stopped = true
		syscall.Kill(-pid, sig)
		return true
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		if !signal(syscall.SIGTERM) {
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			signal(syscall.SIGKILL)
		}
	}()
	waitErr = cmd.Wait()
	mu.Lock()
	exited = true
	if stopped {
		syscall.Kill(-pid, syscall.SIGKILL) // anything left in its group
	}
	wasStopped := stopped
	mu.Unlock()
	close(done)
	return nil, waitErr, wasStopped
}

func withTail(msg string, tail *tailBuffer) string {
	if t := tail.text(); t != "" {
		return msg + ": " + t
	}
	return msg
}

func firstLine(s string) string { return truncate(s, 200) }

// ---- stdout ----

// stdoutParser takes a program's stdout: lines starting with
// "rota:progress" report progress, the rest is kept (up to limit bytes)
// for the result.
type stdoutParser struct {
	limit      int
	onProgress func(float64)
	onBad      func(line string)

	buf      []byte // output so far, without directives
	overflow bool   // more than limit bytes came
	line     []byte // the start of the current line, while it may be a directive
	plain    bool   // the current line is known not to be a directive
}

// maxDirective bounds how long a progress line may be.
const maxDirective = 64

func (s *stdoutParser) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		chunk := p
		i := bytes.IndexByte(p, '\n')
		if i >= 0 {
			chunk, p = p[:i+1], p[i+1:]
		} else {
			p = nil
		}
		complete := i >= 0
		if s.plain {
			s.keep(chunk)
			s.plain = !complete
			continue
		}
		s.line = append(s.line, chunk...)
		if complete {
			s.endLine()
			continue
		}
		if !mayBeDirective(s.line) {
			s.keep(s.line)
			s.line, s.plain = s.line[:0], true
		}
	}
	return n, nil
}

// mayBeDirective reports whether a line that has begun so may turn out to
// be a progress line.
func mayBeDirective(b []byte) bool {
	if len(b) > maxDirective {
		return false
	}
	if len(b) < len(progressDirective) {
		return strings.HasPrefix(progressDirective, string(b))
	}
	return bytes.HasPrefix(b, []byte(progressDirective))
}

func (s *stdoutParser) endLine() {
	line := s.line
	s.line = s.line[:0]
	if !bytes.HasPrefix(line, []byte(progressDirective)) {
		s.keep(line)
		return
	}
	text := strings.TrimSpace(string(line))
	if v, ok := parseProgress(text); ok {
		s.onProgress(v)
	} else {
		s.onBad(text)
	}
}

// parseProgress parses "rota:progress N" with N in 0..100 and an optional
// trailing %.
func parseProgress(line string) (float64, bool) {
	rest, ok := strings.CutPrefix(line, progressDirective)
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return 0, false
	}
	rest = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "%"))
	v, err := strconv.ParseFloat(rest, 64)
	if err != nil || v != v || v < 0 || v > 100 {
		return 0, false
	}
	return v, true
}

func (s *stdoutParser) keep(b []byte) {
	if s.overflow {
		return
	}
	if room := s.limit - len(s.buf); len(b) > room {
		s.buf = append(s.buf, b[:room]...)
		s.overflow = true
		return
	}
	s.buf = append(s.buf, b...)
}

// flush ends a last line that has no newline.
func (s *stdoutParser) flush() {
	if len(s.line) > 0 {
		s.endLine()
	}
	s.plain = false
}

// result is the job's result: stdout itself when it is JSON, otherwise
// stdout as a JSON string (trimmed, at most 64 KiB); nil when stdout is
// empty.
func (s *stdoutParser) result() json.RawMessage {
	out := bytes.TrimSpace(s.buf)
	if len(out) == 0 {
		return nil
	}
	if !s.overflow && json.Valid(out) {
		return out
	}
	return textResult(out)
}

// textResult encodes text as a JSON string of at most maxTextResult bytes
// of text, cut at a character boundary.
func textResult(b []byte) json.RawMessage {
	if len(b) > maxTextResult {
		cut := maxTextResult
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b = b[:cut]
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(string(b))
	return bytes.TrimSpace(buf.Bytes())
}

// ---- stderr ----

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max       int
	buf       []byte
	truncated bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
		t.truncated = true
	}
	return len(p), nil
}

// text is the tail, trimmed, starting at a character boundary, with "…"
// in front when earlier output was dropped.
func (t *tailBuffer) text() string {
	b := t.buf
	cut := len(b) > t.max
	if cut {
		b = b[len(b)-t.max:]
	}
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if (cut || t.truncated) && s != "" {
		return "…" + s
	}
	return s
}

// linePrefixer copies lines to w with a prefix.
type linePrefixer struct {
	w      io.Writer
	prefix string
	line   []byte
}

const maxEchoLine = 4 << 10

func (l *linePrefixer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.line = append(l.line, p...)
			if len(l.line) > maxEchoLine {
				l.emit()
			}
			break
		}
		l.line = append(l.line, p[:i]...)
		p = p[i+1:]
		l.emit()
	}
	return n, nil
}

func (l *linePrefixer) emit() {
	msg := make([]byte, 0, len(l.prefix)+len(l.line)+1)
	msg = append(append(append(msg, l.prefix...), l.line...), '\n')
	l.w.Write(msg)
	l.line = l.line[:0]
}

func (l *linePrefixer) flush() {
	if len(l.line) > 0 {
		l.emit()
	}
}

// ---- progress ----

// progressReporter sends the latest progress a program reported, one
// heartbeat at a time, without holding up the program's output.
type progressReporter struct {
	ctx  context.Context
	g    *guard
	log  *slog.Logger
	mu   sync.Mutex
	val  float64
	has  bool
	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

func newProgressReporter(ctx context.Context, g *guard, log *slog.Logger) *progressReporter {
	p := &progressReporter{ctx: ctx, g: g, log: log, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progressReporter) set(v float64) {
	p.mu.Lock()
	p.val, p.has = v, true
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *progressReporter) loop() {
	defer close(p.done)
	for {
		select {
		case <-p.kick:
			p.send()
		case <-p.quit:
			p.send()
			return
		}
	}
}

func (p *progressReporter) send() {
	p.mu.Lock()
	v, has := p.val, p.has
	p.has = false
	p.mu.Unlock()
	if !has {
		return
	}
	var err error
	if p.ctx.Err() == nil {
		err = rota.SetProgress(p.ctx, v)
	} else {
		// The runtime let the job go; it may have been wrong (see guard),
		// and a heartbeat is fenced anyway.
		err = p.g.heartbeat(&v)
	}
	if err != nil && !lost(err) && !errors.Is(err, context.Canceled) {
		p.log.Warn("reporting progress failed", "progress", v, "err", err)
	}
}

// stop sends the last progress and waits for it.
func (p *progressReporter) stop() {
	close(p.quit)
	<-p.done
}
