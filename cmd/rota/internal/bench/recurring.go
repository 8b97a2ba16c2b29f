package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rotajobs/rota"
)

// RecurringConfig shapes the recurring workload: Jobs recurring jobs,
// each due every Interval, run for Duration by Nodes nodes.
type RecurringConfig struct {
	Jobs     int
	Interval time.Duration
	Duration time.Duration
	// Nodes is how many nodes run the jobs: each a store of its own on the
	// same PostgreSQL database, with its own client (and so its own lease
	// monitor and notification listener) and worker, as separate `rota
	// serve` processes would be. SQLite has one node.
	Nodes       int
	Concurrency int
}

// DefaultRecurring is issue 16's "recurring jobs firing per second across
// nodes": 1,000 jobs due every second, for 10 seconds.
var DefaultRecurring = RecurringConfig{Jobs: 1000, Interval: time.Second, Duration: 10 * time.Second, Nodes: 1, Concurrency: 256}

// Recurring measures recurring jobs firing: Jobs jobs on the schedule
// "SCHEDULED, +Interval", all first due at the same whole second, run by
// no-op handlers on Nodes nodes. Over Duration it counts the runs of each
// job's slots (a slot run twice is a duplicate, a slot never run is
// missed) and the lateness of each run's start after its slot. JobsPerSec
// is the runs per second of the slots in the measured span.
func Recurring(ctx context.Context, o Options, cfg RecurringConfig) (Result, error) {
	if cfg.Jobs <= 0 || cfg.Concurrency <= 0 || cfg.Nodes <= 0 {
		return Result{}, fmt.Errorf("recurring: jobs, nodes and concurrency must be positive")
	}
	if cfg.Interval < time.Second || cfg.Interval%time.Second != 0 {
		return Result{}, fmt.Errorf("recurring: the interval must be a whole number of seconds, not %v", cfg.Interval)
	}
	if cfg.Duration < cfg.Interval {
		return Result{}, fmt.Errorf("recurring: the duration (%v) must be at least one interval (%v)", cfg.Duration, cfg.Interval)
	}
	e, err := newEnv(ctx, o, "recurring")
	if err != nil {
		return Result{}, err
	}
	defer e.close()
	typ := e.typ("recurring")
	clients, err := e.nodes(ctx, cfg.Nodes)
	if err != nil {
		return Result{}, fmt.Errorf("recurring: %w", err)
	}

	// The first slot is a whole second far enough ahead for the adds.
	first := time.Now().Add(time.Second + time.Duration(cfg.Jobs)*50*time.Microsecond).Truncate(time.Second).Add(time.Second)
	end := first.Add(cfg.Duration) // slots before end are measured
	schedule := fmt.Sprintf("SCHEDULED, +%d SECONDS", int(cfg.Interval/time.Second))
	for start := 0; start < cfg.Jobs; start += 1000 {
		ps := make([]rota.AddParams, min(1000, cfg.Jobs-start))
		for i := range ps {
			ps[i] = rota.AddParams{Type: typ, Schedule: schedule, RunAt: first}
		}
		if _, err := e.client.AddMany(ctx, ps); err != nil {
			return Result{}, err
		}
	}

	type slot struct {
		id   int64
		slot int64
	}
	var (
		mu       sync.Mutex
		runs     = map[slot]int{}
		late     []time.Duration
		perNode  = make([]int, len(clients))
		inWindow = cfg.Jobs * int(cfg.Duration/cfg.Interval)
		allIn    = make(chan struct{})
	)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, len(clients))
	for n, c := range clients {
		w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: cfg.Concurrency, Logger: quietLogger(), PollWait: time.Second})
		w.Handle(typ, rota.HandlerFunc(func(_ context.Context, j *rota.Job) error {
			started := time.Now()
			s := j.Slot
			if s.IsZero() {
				s = j.RunAt
			}
			if !s.Before(end) {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			k := slot{j.ID, s.UnixMicro()}
			runs[k]++
			if runs[k] == 1 {
				late = append(late, started.Sub(s))
				perNode[n]++
				if len(late) == inWindow {
					close(allIn)
				}
			}
			return nil
		}))
		go func() { ran <- w.Run(wctx) }()
	}
	begin, cpu0, psi := time.Now(), cpuTime(), pressureSince()
	// The last slot in the span may start a little late: wait for it up to
	// two intervals past the span.
	select {
	case <-allIn:
	case <-time.After(time.Until(end.Add(2 * cfg.Interval))):
	case <-ctx.Done():
	}
	elapsed, cpu, pressure := time.Since(begin), cpuTime()-cpu0, psi()
	stop()
	for range clients {
		if err := <-ran; err != nil {
			return Result{}, fmt.Errorf("recurring: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for _, n := range runs {
		dups += n - 1
	}
	p := percentiles(late, 0.5, 0.99, 0.999, 1)
	note := fmt.Sprintf("%d jobs every %v for %v on %d node(s): %d of %d slots ran (runs per node %v), %d duplicates",
		cfg.Jobs, cfg.Interval, cfg.Duration, len(clients), len(late), inWindow, perNode, dups)
	return Result{Workload: "recurring", Store: o.storeName(), Via: o.via(), Jobs: len(late), Concurrency: cfg.Concurrency,
		Seconds: cfg.Duration.Seconds(), JobsPerSec: float64(len(late)) / cfg.Duration.Seconds(), StoreInfo: e.info,
		CPUUsPerJob: float64(cpu.Microseconds()) / float64(max(len(late), 1)), CPUPressure: pressure,
		P50Ms: p[0], P99Ms: p[1], P999Ms: p[2], MaxMs: p[3],
		Nodes: len(clients), MissedSlots: inWindow - len(late), Duplicates: dups,
		Note: note + "; " + fmt.Sprintf("measured over %.1fs", elapsed.Seconds())}, nil
}
