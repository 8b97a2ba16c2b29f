package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/internal/rules/check"
)

const workLong = `work runs CMD as a worker: it takes jobs of the given types from the server
and runs CMD ARGS... once for each, up to --concurrency at a time. Put "--"
before CMD when its arguments start with "-".

For each job, the program gets:
  stdin   the job's data, a JSON object, followed by a newline
  env     the worker's environment plus ROTA_JOB_ID, ROTA_JOB_TYPE,
          ROTA_JOB_ATTEMPT (1 on the first run), ROTA_JOB_MAX_ATTEMPTS,
          ROTA_JOB_KEY and ROTA_JOB_GROUP; for a job added after others
          (rota add --after), ROTA_JOB_DEPS, a file holding their outcomes
          as a JSON array (id, type, key, group, state, result, error)

How it ends decides the job:
  exit 0       the job completes. If stdout is valid JSON (an object, an
               array, a string, a number...), it is the job's result;
               otherwise stdout, trimmed and cut to 64 KiB, is stored as a
               JSON string. Empty stdout means no result.
  exit 65      (EX_DATAERR) the job fails for good, without retries: use it
               when the data is bad and running again cannot help.
  other exit   the attempt fails and the job retries with back-off until it
  or a signal  runs out of attempts. 75 (EX_TEMPFAIL) is an ordinary
               retryable failure, like 1.
The last 2 KiB of stderr become the attempt's error (last_error), after
"exit status N: ". Stderr is also copied to the worker's stderr, each line
prefixed with the job's id, and kept with the job's attempt, each line a
record of its log (at most 64 KiB an attempt; the rest are counted and
dropped), which rota logs ID shows.

Progress: a stdout line "rota:progress N" (N from 0 to 100, such as 42 or
42.5; a trailing % is allowed) reports the job's progress; it is what
"rota wait" and "rota watch" show. Lines that begin with "rota:progress"
are never part of the result.

Heartbeats are automatic while the program runs. The program is stopped
(SIGTERM to its process group, then SIGKILL after --kill-grace) when its job
is cancelled or removed, when the worker loses the job's lease, when
--timeout or the job's own timeout (rota add --timeout) passes (a
retryable failure), or when the worker shuts down.
When the program exits, whatever it started that still runs in its process
group is killed; so is every program's group when the worker exits.
A heartbeat or finish that fails because the server cannot be reached for
now is tried again, with back-off, while the job's lease holds.

SIGINT or SIGTERM shuts the worker down gracefully: it takes no new jobs
and waits up to --shutdown-timeout for running programs, then stops them
and, once each has exited (or been killed after --kill-grace), hands its
job back to pending without using up an attempt. Until then the worker
keeps the job's lease, so no other worker starts it while it still runs.
A second SIGINT or SIGTERM stops them at once.`

type workOptions struct {
	types           []string
	concurrency     int
	lease           time.Duration
	timeout         time.Duration
	killGrace       time.Duration
	shutdownTimeout time.Duration
	name            string
}

func workCommand(g *globals) *cobra.Command {
	var o workOptions
	cmd := &cobra.Command{
		Use:   "work --type TYPE [--type TYPE...] [flags] -- CMD [ARGS...]",
		Short: "Run a program as a worker, once per job",
		Long:  workLong,
		Example: `  rota work --type resize -- ./resize.sh
  rota work --type email.send --type email.digest --concurrency 8 -- python3 send.py
  rota work --type report --timeout 10m -- sh -c 'jq .month | make-report'`,
		Args: minArgs(1, "a command to run for each job (after --)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(o.types) == 0 {
				return usageErrorf("give at least one --type")
			}
			seen := map[string]bool{}
			for _, t := range o.types {
				if err := check.Type(t); err != nil {
					return usageError{fmt.Errorf("--type: %w (work takes exact type names)", err)}
				}
				if seen[t] {
					return usageErrorf("--type %q is given twice", t)
				}
				seen[t] = true
			}
			switch {
			case o.concurrency < 1:
				return usageErrorf("--concurrency %d must be at least 1", o.concurrency)
			case o.lease < 0:
				return usageErrorf("--lease %v must not be negative", o.lease)
			case o.lease > 0 && o.lease < time.Second:
				return usageErrorf("--lease %v is too short; give at least 1s", o.lease)
			case o.timeout < 0:
				return usageErrorf("--timeout %v must not be negative", o.timeout)
			case o.killGrace <= 0:
				return usageErrorf("--kill-grace %v must be positive", o.killGrace)
			case o.shutdownTimeout <= 0:
				return usageErrorf("--shutdown-timeout %v must be positive", o.shutdownTimeout)
			}
			if _, err := exec.LookPath(args[0]); err != nil {
				return usageErrorf("cannot run %q: %v", args[0], err)
			}
			return runWork(cmd, g, o, args)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after CMD are CMD's
	f.StringArrayVar(&o.types, "type", nil, "job type to run (repeatable)")
	f.IntVar(&o.concurrency, "concurrency", 1, "how many programs run at once")
	f.DurationVar(&o.lease, "lease", 0, "lease timeout for the jobs it takes (default: the type's, 30s unless configured)")
	f.DurationVar(&o.timeout, "timeout", 0, "stop a program that runs longer than this and fail the attempt (0: no limit)")
	f.DurationVar(&o.killGrace, "kill-grace", 5*time.Second, "how long a stopped program gets between SIGTERM and SIGKILL")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "on shutdown, how long to wait for running programs before stopping them")
	f.StringVar(&o.name, "name", "", "worker name shown in jobs (default host:pid)")
	return cmd
}

func runWork(cmd *cobra.Command, g *globals, o workOptions, argv []string) error {
	ctx := cmd.Context()
	errw := cmd.ErrOrStderr()
	var h slog.Handler = slog.NewTextHandler(errw, nil)
	if g.json {
		h = slog.NewJSONHandler(errw, nil)
	}
	logger := slog.New(h)
	c, err := g.client()
	if err != nil {
		return err
	}
	defer c.Close()
	// Check the server and the token before taking jobs, so that a wrong
	// address fails at once instead of logging retries for ever.
	if _, err := c.List(ctx, rota.ListParams{Limit: 1}); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return g.explain(err)
	}

	// The guard kills the programs' groups if the worker dies without
	// doing so itself; without one, only the programs themselves die then.
	gd, err := startGuard()
	if err != nil {
		logger.Warn("a worker killed outright will leave behind what its programs started", "err", err)
	}
	progs := &programs{running: map[*program]struct{}{}, guard: gd}
	defer func() {
		// Whichever way the worker ends, no program, nor anything one
		// started, outlives it. Normally none is left by now: the runtime
		// returns once every handler has, and a handler returns once its
		// program has ended.
		progs.killAll()
		if !progs.wait(o.killGrace + time.Second) {
			logger.Warn("programs still running after they were killed")
		}
		gd.close()
	}()

	// stopNow ends when the worker is told a second time to stop: running
	// programs are then stopped at once.
	stopNow, stopAll := context.WithCancel(context.Background())
	defer stopAll()
	// finished ends the signal handling, which lasts as long as the worker
	// does, so that a late signal cannot kill it by default while its
	// programs run.
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		sigs := make(chan os.Signal, 2)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sigs)
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		logger.Info("shutting down: waiting for running programs (signal again to stop them now)", "timeout", o.shutdownTimeout)
		n := 0
		for {
			select {
			case <-sigs:
				// The first signal is the one that ended ctx.
				if n++; n == 2 {
					logger.Info("stopping running programs now")
					stopAll()
				}
			case <-finished:
				return
			}
		}
	}()

	r := &runner{
		argv: argv, timeout: o.timeout, grace: o.killGrace, log: logger,
		stderr: &lockedWriter{w: errw}, progs: progs, stopNow: stopNow,
	}
	w := rota.NewWorker(c, rota.WorkerConfig{
		Name: o.name, Concurrency: o.concurrency, LeaseTimeout: o.lease,
		ShutdownTimeout: o.shutdownTimeout, Logger: logger,
		// A stopped program gets --kill-grace before SIGKILL, and then up
		// to --kill-grace for anything that escaped its group to let go of
		// its output: its handler returns within that, and the runtime
		// holds the job's lease until then. The margin is only a backstop.
		ShutdownGrace: 2*o.killGrace + 5*time.Second,
	})
	for _, t := range o.types {
		w.Handle(t, r)
	}
	logger.Info("rota worker started", "server", strings.TrimRight(g.server, "/"), "types", strings.Join(o.types, ","),
		"concurrency", o.concurrency, "command", strings.Join(argv, " "))
	if err := w.Run(ctx); err != nil {
		var ee *exitError
		if errors.As(g.explain(err), &ee) && ee.err != nil {
			return &exitError{code: ee.code, err: fmt.Errorf("the worker stopped: %w", ee.err)}
		}
		return err
	}
	logger.Info("rota worker stopped")
	return nil
}

// programs tracks the process groups of running programs, so that none
// outlives the worker.
type programs struct {
	mu      sync.Mutex
	running map[*program]struct{}
	wg      sync.WaitGroup
	guard   *guard // nil: none
}

// program is a running program, the leader of its own process group.
type program struct {
	pid   int
	guard *guard

	mu      sync.Mutex
	reaped  bool // its pid, the group's id, may belong to another by now
	stopped bool // it was signalled to stop
}

// stop sends sig to the program's group, unless the program was reaped,
// and reports whether it did.
func (p *program) stop(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return false
	}
	p.stopped = true
	syscall.Kill(-p.pid, sig)
	return true
}

// reap marks the program as about to be reaped, or reaped, after which
// its group is no longer signalled; killGroup first kills what is left in
// the group. It reports whether the program was stopped.
func (p *program) reap(killGroup bool) (stopped bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if killGroup {
		syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	p.guard.remove(p.pid)
	p.reaped = true
	return p.stopped
}

func (ps *programs) add(pid int) *program {
	p := &program{pid: pid, guard: ps.guard}
	ps.guard.add(pid)
	ps.mu.Lock()
	ps.running[p] = struct{}{}
	ps.wg.Add(1)
	ps.mu.Unlock()
	return p
}

func (ps *programs) remove(p *program) {
	ps.mu.Lock()
	delete(ps.running, p)
	ps.wg.Done()
	ps.mu.Unlock()
}

// killAll kills the process groups of the running programs.
func (ps *programs) killAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for p := range ps.running {
		p.stop(syscall.SIGKILL)
	}
}

// wait waits up to d for the programs to end, and reports whether they
// did.
func (ps *programs) wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		ps.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// lockedWriter serializes writes from concurrent programs.
type lockedWriter struct {
	mu sync.Mutex
	w  interface{ Write([]byte) (int, error) }
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// errTimedOut is the cause of a program's stop when its job's time limit
// passed.
var errTimedOut = errors.New("timed out")

// errStopNow is the cause when the worker was told to stop at once.
var errStopNow = errors.New("worker stopping now")
