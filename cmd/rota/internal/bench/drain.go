package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
)

// DrainConfig shapes the drain workload: Jobs no-op jobs are added first
// (not timed), then one worker with Concurrency slots runs them all.
type DrainConfig struct {
	Jobs        int
	Concurrency int
	// Baseline also measures the ceiling in the same run: raw batched SQL
	// claim+complete on the same kind of database file (SQLite only).
	Baseline bool
	// CPUProfile, when set, is a file to write a CPU profile of the
	// measured part to (not the set-up).
	CPUProfile string
	// Nodes is how many nodes drain the queue together, each a store of
	// its own on the same PostgreSQL database with its own client and a
	// worker of Concurrency slots, as separate `rota serve` processes
	// would be (here in one process, so CPU µs/job covers them all). With
	// more than one, the baseline is the same drain on one node.
	Nodes int
	// Work is how long each job's handler takes (a sleep, not CPU), so
	// that the workers' slots rather than the store can bound the rate;
	// zero runs no-op jobs.
	Work time.Duration
	// Rate, when set, is a rate per second on the type, with a burst of
	// the same size: set high, it does not bind, and the drain measures
	// what keeping it costs.
	Rate int
	// MaxRunning, when set, bounds the type's running jobs (set above the
	// slots, it does not bind either).
	MaxRunning int
}

// DefaultDrain sizes the drain to run in a few seconds on 2 cores.
var DefaultDrain = DrainConfig{Jobs: 100_000, Concurrency: 512, Baseline: true}

// Drain measures how fast the worker runtime drains a queue: from the
// worker's start until the last completion has committed (with
// synchronous=FULL on SQLite, so until it is on disk).
func Drain(ctx context.Context, o Options, cfg DrainConfig) (Result, error) {
	if cfg.Jobs <= 0 || cfg.Concurrency <= 0 {
		return Result{}, fmt.Errorf("drain: jobs and concurrency must be positive")
	}
	e, err := newEnv(ctx, o, "drain")
	if err != nil {
		return Result{}, err
	}
	defer e.close()
	typ := e.typ("drain")
	if cfg.Rate > 0 || cfg.MaxRunning > 0 {
		tc := rota.TypeConfig{Type: typ, MaxRunning: cfg.MaxRunning}
		if cfg.Rate > 0 {
			tc.Rate, tc.Burst = rota.Rate{N: cfg.Rate, Per: time.Second}, cfg.Rate
		}
		if err := e.server.SetTypeConfig(ctx, tc); err != nil {
			return Result{}, err
		}
	}
	// Adding is set-up: a quarter of the progress bar.
	total := cfg.Jobs * 5 / 4
	if err := e.fill(ctx, typ, cfg.Jobs, nil, func(done int) { o.progress(done/4, total) }); err != nil {
		return Result{}, err
	}
	checkpoint(ctx, e.st)
	done, count, unwatch := countCompleted(e.st, typ, cfg.Jobs, nil)
	defer unwatch()

	clients, err := e.nodes(ctx, cfg.Nodes)
	if err != nil {
		return Result{}, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	stopProfile, err := startProfile(cfg.CPUProfile)
	if err != nil {
		return Result{}, err
	}
	defer stopProfile()
	serverCPU := func() time.Duration { return 0 }
	if o.storeName() == "postgres" {
		serverCPU = serverCPUSince(ctx, o.DSN)
	}
	begin, cpu0, psi := time.Now(), cpuTime(), pressureSince()
	ran := make(chan error, len(clients))
	for _, c := range clients {
		w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: cfg.Concurrency, Logger: quietLogger(), PollWait: time.Second})
		w.Handle(typ, rota.HandlerFunc(func(context.Context, *rota.Job) error {
			if cfg.Work > 0 {
				time.Sleep(cfg.Work)
			}
			return nil
		}))
		go func() { ran <- w.Run(wctx) }()
	}
	err = waitDone(ctx, done, count, cfg.Jobs, 5*time.Minute, func(d, t int) { o.progress(cfg.Jobs/4+d, total) })
	elapsed, cpu, pressure, scpu := time.Since(begin), cpuTime()-cpu0, psi(), serverCPU()
	stopProfile()
	stop()
	for range clients {
		if rerr := <-ran; err == nil {
			err = rerr
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("drain: %w", err)
	}
	if n, err := statsCount(ctx, e.server, typ, store.Completed); err != nil || n != cfg.Jobs {
		return Result{}, fmt.Errorf("drain: %d of %d jobs completed (%v)", n, cfg.Jobs, err)
	}
	r := Result{Workload: "drain", Store: o.storeName(), Via: o.via(), Jobs: cfg.Jobs, Concurrency: cfg.Concurrency, Nodes: len(clients),
		Seconds: elapsed.Seconds(), JobsPerSec: float64(cfg.Jobs) / elapsed.Seconds(), StoreInfo: e.info,
		CPUUsPerJob: float64(cpu.Microseconds()) / float64(cfg.Jobs), CPUPressure: pressure,
		ServerCPUUsPerJob: float64(scpu.Microseconds()) / float64(cfg.Jobs)}
	if cfg.Rate > 0 {
		r.FlowControl = fmt.Sprintf("rate %d/s", cfg.Rate)
	}
	if cfg.MaxRunning > 0 {
		r.FlowControl = strings.TrimPrefix(r.FlowControl+fmt.Sprintf(", max_running %d", cfg.MaxRunning), ", ")
	}
	return r, nil
}

// checkpoint folds SQLite's write-ahead log back into the database after
// set-up, so that the measured part does not pay for the set-up's log.
func checkpoint(ctx context.Context, st store.Store) {
	if s, ok := st.(interface{ DB() (*sql.DB, error) }); ok {
		if db, err := s.DB(); err == nil {
			db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
		}
	}
}

// vacuum vacuums and analyzes PostgreSQL's hot table (in the default
// schema, which the bench opens) after a bulk fill, as autovacuum would
// have done to a backlog that built up over time: after millions of
// inserts, the first read of each page would otherwise set its hint bits,
// and autovacuum would run during the measurement.
func vacuum(ctx context.Context, st store.Store) {
	if s, ok := st.(interface{ DB() *sql.DB }); ok {
		s.DB().ExecContext(ctx, `VACUUM (ANALYZE) rota.jobs`)
	}
}

// startProfile starts a CPU profile into path ("" does nothing); the
// returned function stops it and may be called more than once.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}
