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
	stderr  io.Writer
	progs   *programs
	// stopNow ends when running programs must stop at once.
	stopNow context.Context
}

// Work runs the program for one job and turns how it ended into the
// handler's outcome; the worker runtime records it. The runtime cancels
// ctx when the job is cancelled or removed, when its lease is lost, and
// when the worker's shutdown grace period ends (it then hands the job
// back itself): the program is stopped, and what Work returns then
// changes nothing.
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
	stopLost := context.AfterFunc(ctx, func() { stop(context.Cause(ctx)) })
	defer stopLost()
	stopAfter := context.AfterFunc(r.stopNow, func() { stop(errStopNow) })
	defer stopAfter()

	progress := newProgressReporter(ctx, log)
	out := &stdoutParser{limit: store.MaxDataSize, onProgress: progress.set,
		onBad: func(line string) {
			log.Warn("ignoring a bad progress line; want \"rota:progress N\" with N in 0..100", "line", line)
		}}
	tail := &tailBuffer{max: maxErrorTail}
	echo := &linePrefixer{w: r.stderr, prefix: fmt.Sprintf("job %d | ", job.ID), keep: keepLine(ctx)}

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
	if e := r.progs.guard.env(); e != "" {
		cmd.Env = append(cmd.Env, e)
	}
	if len(job.Deps) > 0 {
		// The outcomes of the jobs it runs after, as JSON in a file of
		// its own (a fan-in's are too many for the environment).
		path, err := writeDepsFile(job)
		if err != nil {
			log.Error("job failed: cannot write its dependencies' outcomes", "err", err)
			return fmt.Errorf("cannot write the dependencies' outcomes: %v", err)
		}
		defer os.Remove(path)
		cmd.Env = append(cmd.Env, "ROTA_JOB_DEPS="+path)
	}
	cmd.SysProcAttr = programAttr()
	// A program that exits but leaves a child holding stdout or stderr
	// open does not hold up the job for longer than this.
	cmd.WaitDelay = r.grace

	startErr, waitErr, stopped := runProgram(stopCtx, cmd, r.grace, r.progs)
	out.flush()
	echo.flush()
	progress.stop()
	took := time.Since(start).Round(time.Millisecond)

	var exitErr *exec.ExitError
	switch {
	case startErr != nil:
		log.Error("job failed: cannot start the program", "err", startErr)
		return fmt.Errorf("cannot start %s: %v", r.argv[0], startErr)
	case stopped:
		switch cause := context.Cause(stopCtx); {
		case errors.Is(cause, errTimedOut):
			msg := withTail(fmt.Sprintf("timed out after %v and was stopped", r.timeout), tail)
			log.Warn("job failed", "err", firstLine(msg), "took", took)
			return errors.New(msg)
		case errors.Is(cause, rota.ErrTimedOut):
			// The job's own timeout (rota add --timeout): the runtime
			// fails the attempt as "timed out after …".
			log.Warn("job failed: it ran longer than its timeout and was stopped", "timeout", job.Timeout, "took", took)
			return cause
		case errors.Is(cause, errStopNow):
			// A snooze with no delay hands the job back to pending now,
			// without using up the attempt, as the runtime's own
			// shutdown would once its grace period ended.
			log.Info("job handed back: the worker is stopping", "took", took)
			return rota.SnoozeFor(0)
		case errors.Is(cause, rota.ErrShutdown):
			// The runtime hands the job back now that the program has
			// ended: it kept the lease until then, so the job cannot have
			// started elsewhere meanwhile.
			log.Info("job stopped: the worker is shutting down", "took", took)
			return cause
		default: // cancelled, removed or lease lost: not ours to finish
			// The runtime logs it as "job abandoned", with the reason.
			log.Debug("job stopped", "reason", cause, "took", took)
			return cause
		}
	case waitErr == nil || errors.Is(waitErr, exec.ErrWaitDelay):
		if waitErr != nil {
			log.Warn("the program exited but something it started kept its output open; carrying on without it")
		}
		result := out.result()
		if result != nil {
			if err := rota.SetResult(ctx, result); err != nil {
				log.Error("job failed: cannot record its result", "err", err, "took", took)
				return err
			}
		}
		if ctx.Err() == nil { // else the job is no longer the worker's to complete
			log.Info("job completed", "took", took, "result_bytes", len(result))
		}
		return nil
	case errors.As(waitErr, &exitErr):
		var msg string
		if ws, _ := exitErr.Sys().(syscall.WaitStatus); ws.Signaled() {
			msg = withTail("killed by signal "+ws.Signal().String(), tail)
		} else {
			msg = withTail(fmt.Sprintf("exit status %d", exitErr.ExitCode()), tail)
		}
		if exitErr.ExitCode() == exitPermanent {
			log.Warn("job failed for good", "err", firstLine(msg), "took", took)
			return permanentError(msg)
		}
		log.Warn("job failed", "err", firstLine(msg), "took", took)
		return errors.New(msg)
	default:
		log.Error("job failed", "err", waitErr, "took", took)
		return errors.New(withTail(waitErr.Error(), tail))
	}
}

// permanentError fails a job for good with msg as its error. The runtime
// stores the text of the error the handler returns, and rota.Permanent's
// own text starts with "permanent failure: "; the wrapper keeps the
// documented "exit status 65: ..." while errors.As still finds the
// rota.PermanentError.
func permanentError(msg string) error {
	return &textError{msg: msg, err: rota.Permanent(errors.New(msg))}
}

// textError is err with its own text.
type textError struct {
	msg string
	err error
}

func (e *textError) Error() string { return e.msg }
func (e *textError) Unwrap() error { return e.err }

// runProgram starts cmd in its own process group and waits for it. When
// ctx ends first, it sends SIGTERM to the group, and SIGKILL after grace;
// stopped reports that. When the program exits, whatever it started that
// is still in its group is killed: nothing of a job's run outlives it.
func runProgram(ctx context.Context, cmd *exec.Cmd, grace time.Duration, progs *programs) (startErr, waitErr error, stopped bool) {
	if err := cmd.Start(); err != nil {
		return err, nil, false
	}
	p := progs.add(cmd.Process.Pid)
	defer progs.remove(p)

	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		if !p.stop(syscall.SIGTERM) {
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			p.stop(syscall.SIGKILL)
		}
	}()
	defer close(done)
	if waitExited(p.pid) == nil {
		// The program has exited and is not reaped yet, so its group id is
		// still its own.
		stopped = p.reap(true)
		waitErr = cmd.Wait()
		return nil, waitErr, stopped
	}
	// Without a way to wait short of reaping, the group is signalled after
	// the reaping only when it was stopped, as its id might be reused by
	// then (in the moment between).
	waitErr = cmd.Wait()
	stopped = p.reap(false)
	if stopped {
		syscall.Kill(-p.pid, syscall.SIGKILL) // anything left in its group
	}
	return nil, waitErr, stopped
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

// linePrefixer copies lines to w with a prefix, and hands each to keep
// (when set).
type linePrefixer struct {
	w      io.Writer
	prefix string
	line   []byte
	keep   func(line []byte)
}

// keepLine keeps a program's stderr lines with its job's attempt, each an
// INFO record of the job's log (rota.JobLogHandler: not also in the
// worker's own log, which echoes the lines itself), bounded as every
// job's log is.
func keepLine(ctx context.Context) func([]byte) {
	h := rota.JobLogHandler(ctx)
	if h == nil || !h.Enabled(ctx, slog.LevelInfo) {
		return nil
	}
	return func(line []byte) {
		h.Handle(ctx, slog.NewRecord(time.Now(), slog.LevelInfo, string(bytes.TrimRight(line, "\r")), 0))
	}
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
	if l.keep != nil {
		l.keep(l.line)
	}
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

// progressReporter sends the latest progress a program reported with
// rota.SetProgress, one at a time, without holding up the program's
// output.
type progressReporter struct {
	ctx  context.Context
	log  *slog.Logger
	mu   sync.Mutex
	val  float64
	has  bool
	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

func newProgressReporter(ctx context.Context, log *slog.Logger) *progressReporter {
	p := &progressReporter{ctx: ctx, log: log, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
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
	if !has || p.ctx.Err() != nil {
		return // the job is no longer the worker's, or it is shutting down
	}
	// SetProgress fails, and ends the context, when the job is no longer
	// the worker's: that is not worth a warning.
	if err := rota.SetProgress(p.ctx, v); err != nil && p.ctx.Err() == nil {
		p.log.Warn("reporting progress failed", "progress", v, "err", err)
	}
}

// stop sends the last progress and waits for it.
func (p *progressReporter) stop() {
	close(p.quit)
	<-p.done
}

// writeDepsFile writes job's dependencies' outcomes (Job.Deps: id, type,
// key, group, state, result, error) as a JSON array to a temporary file
// and returns its path.
func writeDepsFile(job *rota.Job) (string, error) {
	f, err := os.CreateTemp("", fmt.Sprintf("rota-job-%d-deps-*.json", job.ID))
	if err != nil {
		return "", err
	}
	err = json.NewEncoder(f).Encode(job.Deps)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
