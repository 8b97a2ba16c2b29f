package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rotajobs/rota"
)

// RateConfig shapes the rate workload: a type at Rate jobs a second with
// Burst (0: the default, Rate), a backlog that outlasts Duration, run by
// Nodes nodes with Concurrency slots each.
type RateConfig struct {
	Rate, Burst int
	Duration    time.Duration
	Nodes       int
	Concurrency int
}

// DefaultRate is the workload: 50/s for 10s on two nodes.
var DefaultRate = RateConfig{Rate: 50, Duration: 10 * time.Second, Nodes: 2, Concurrency: 16}

// Rate measures a rate-limited type: jobs all due at once, more than the
// rate allows in Duration, started by no-op handlers on Nodes nodes. It
// reports the achieved rate after the burst (JobsPerSec) against the set
// one (TargetRate), the most starts in any one-second window, and how late
// each job started after the moment its token came: the k-th start after
// the burst is due at the first start + (k - burst)/rate, so lateness is
// how long acceptors took to wake for a token and run the job.
func Rate(ctx context.Context, o Options, cfg RateConfig) (Result, error) {
	if cfg.Rate <= 0 || cfg.Burst < 0 || cfg.Nodes <= 0 || cfg.Concurrency <= 0 || cfg.Duration < 2*time.Second {
		return Result{}, fmt.Errorf("rate: rate, nodes and concurrency must be positive, burst not negative, duration at least 2s")
	}
	e, err := newEnv(ctx, o, "rate")
	if err != nil {
		return Result{}, err
	}
	defer e.close()
	typ := e.typ("rate")
	burst := rota.Rate{N: cfg.Rate, Per: time.Second}.BurstOf(cfg.Burst)
	if err := e.server.SetTypeConfig(ctx, rota.TypeConfig{Type: typ, Rate: rota.Rate{N: cfg.Rate, Per: time.Second}, Burst: cfg.Burst}); err != nil {
		return Result{}, err
	}
	jobs := burst + int(float64(cfg.Rate)*cfg.Duration.Seconds()*1.5) + 100
	if err := e.fill(ctx, typ, jobs, nil, func(int) {}); err != nil {
		return Result{}, err
	}
	clients, err := e.nodes(ctx, cfg.Nodes)
	if err != nil {
		return Result{}, fmt.Errorf("rate: %w", err)
	}
	var (
		mu      sync.Mutex
		starts  []time.Time // the handlers' starts
		perNode = make([]int, len(clients))
	)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, len(clients))
	for n, c := range clients {
		w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: cfg.Concurrency, Logger: quietLogger()})
		w.Handle(typ, rota.HandlerFunc(func(context.Context, *rota.Job) error {
			now := time.Now()
			mu.Lock()
			starts = append(starts, now)
			perNode[n]++
			k := len(starts)
			mu.Unlock()
			if k%50 == 0 {
				o.progress(k, burst+int(float64(cfg.Rate)*cfg.Duration.Seconds()))
			}
			return nil
		}))
		go func() { ran <- w.Run(wctx) }()
	}
	cpu0, psi := cpuTime(), pressureSince()
	select {
	case <-time.After(cfg.Duration):
	case <-ctx.Done():
	}
	cpu, pressure := cpuTime()-cpu0, psi()
	stop()
	for range clients {
		if err := <-ran; err != nil {
			return Result{}, fmt.Errorf("rate: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	if len(starts) <= burst {
		return Result{}, fmt.Errorf("rate: only %d jobs started, no more than the burst of %d", len(starts), burst)
	}
	t0 := starts[0]
	// Starts after the burst, within the span: the rate achieved.
	end := t0.Add(cfg.Duration - time.Second)
	var late []time.Duration
	n := 0
	for k, s := range starts[burst:] {
		if !s.Before(end) {
			break
		}
		n++
		due := t0.Add(time.Duration(float64(k+1) / float64(cfg.Rate) * float64(time.Second)))
		late = append(late, max(s.Sub(due), 0))
	}
	span := end.Sub(t0).Seconds()
	most := 0
	for i, j := 0, 0; i < len(starts); i++ {
		for starts[i].Sub(starts[j]) >= time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	p := percentiles(late, 0.5, 0.99, 0.999, 1)
	return Result{Workload: "rate", Store: o.storeName(), Via: o.via(), Jobs: len(starts), Concurrency: cfg.Concurrency,
		Seconds: span, JobsPerSec: float64(n) / span, TargetRate: float64(cfg.Rate), StoreInfo: e.info,
		CPUUsPerJob: float64(cpu.Microseconds()) / float64(max(len(starts), 1)), CPUPressure: pressure,
		P50Ms: p[0], P99Ms: p[1], P999Ms: p[2], MaxMs: p[3], Nodes: len(clients), MostInASecond: most,
		Baseline: "the set rate (jobs/s)", BaselineValue: float64(cfg.Rate), Ratio: float64(n) / span / float64(cfg.Rate),
		Note: fmt.Sprintf("%d/s with a burst of %d on %d node(s) for %v: %d started (per node %v), at most %d in any second (burst + rate: %d)",
			cfg.Rate, burst, len(clients), cfg.Duration, len(starts), perNode, most, burst+cfg.Rate)}, nil
}
