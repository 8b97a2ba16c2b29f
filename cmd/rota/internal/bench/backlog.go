package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/rotajobs/rota"
)

// BacklogConfig shapes the backlog workload: for each size, a fresh store
// with that many due jobs queued, then Measure jobs accepted and finished
// in batches of Batch, each batch replaced by as many new jobs (not timed)
// so that the backlog stays at its size.
type BacklogConfig struct {
	Sizes   []int
	Measure int
	Batch   int
}

// DefaultBacklog measures 10k, 100k and 1M queued jobs.
var DefaultBacklog = BacklogConfig{Sizes: []int{10_000, 100_000, 1_000_000}, Measure: 20_000, Batch: 100}

// Backlog reports the accept+finish cost per job at each backlog size
// (elapsed, and this process's CPU time), and the ratio of the CPU cost to
// the first size's.
func Backlog(ctx context.Context, o Options, cfg BacklogConfig) ([]Result, error) {
	if len(cfg.Sizes) == 0 || cfg.Measure <= 0 || cfg.Batch <= 0 {
		return nil, fmt.Errorf("backlog: sizes, measure and batch must be given")
	}
	var out []Result
	work := 0
	for _, s := range cfg.Sizes {
		work += s + cfg.Measure
	}
	base := 0
	for _, size := range cfg.Sizes {
		r, err := backlogRun(ctx, o, cfg, size, func(d int) { o.progress(base+d, work) })
		if err != nil {
			return out, fmt.Errorf("backlog %d: %w", size, err)
		}
		base += size + cfg.Measure
		if len(out) > 0 {
			// CPU time, which other load on the machine disturbs far less
			// than elapsed time.
			r.Baseline = fmt.Sprintf("cpu_us_per_job with %d queued", out[0].Backlog)
			r.BaselineValue = out[0].CPUUsPerJob
			r.Ratio = r.CPUUsPerJob / out[0].CPUUsPerJob
		}
		out = append(out, r)
	}
	return out, nil
}

func backlogRun(ctx context.Context, o Options, cfg BacklogConfig, size int, progress func(int)) (Result, error) {
	e, err := newEnv(ctx, o, fmt.Sprintf("backlog-%d", size))
	if err != nil {
		return Result{}, err
	}
	defer e.close()
	typ := e.typ("backlog")
	t0 := time.Now()
	if err := e.fill(ctx, typ, size, nil, progress); err != nil {
		return Result{}, err
	}
	fillRate := float64(size) / time.Since(t0).Seconds()
	checkpoint(ctx, e.st)
	vacuum(ctx, e.st)
	c := e.client
	refill := make([]rota.AddParams, cfg.Batch)
	for i := range refill {
		refill[i] = rota.AddParams{Type: typ, Data: noopData}
	}
	var acceptTime, finishTime, cpu time.Duration
	calls, measured := 0, 0
	warm := min(cfg.Measure/10, 2000)
	psi := pressureSince()
	for done := 0; done < warm+cfg.Measure; {
		c0, t0 := cpuTime(), time.Now()
		jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{typ}, Limit: cfg.Batch, Worker: "bench"})
		t1 := time.Now()
		if err != nil {
			return Result{}, err
		}
		if len(jobs) == 0 {
			return Result{}, fmt.Errorf("backlog ran dry")
		}
		ps := make([]rota.FinishParams, len(jobs))
		for i, j := range jobs {
			ps[i] = rota.FinishParams{Lease: j.Lease(), As: rota.Complete}
		}
		errs, err := c.FinishMany(ctx, ps)
		t2, c2 := time.Now(), cpuTime()
		if err != nil {
			return Result{}, err
		}
		for _, err := range errs {
			if err != nil {
				return Result{}, err
			}
		}
		if done >= warm {
			acceptTime += t1.Sub(t0)
			finishTime += t2.Sub(t1)
			cpu += c2 - c0
			calls++
			measured += len(jobs)
		}
		done += len(jobs)
		if _, err := c.AddMany(ctx, refill[:len(jobs)]); err != nil {
			return Result{}, err
		}
		progress(size + min(done, cfg.Measure))
	}
	cost := acceptTime + finishTime
	return Result{Workload: "backlog", Store: o.storeName(), Via: o.via(), Jobs: measured, Backlog: size,
		Seconds: cost.Seconds(), JobsPerSec: float64(measured) / cost.Seconds(), BatchSize: cfg.Batch,
		MicrosPerJob: float64(cost.Microseconds()) / float64(measured),
		AcceptCallUs: float64(acceptTime.Microseconds()) / float64(calls), FillJobsPerSec: fillRate, StoreInfo: e.info,
		CPUUsPerJob: float64(cpu.Microseconds()) / float64(measured), CPUPressure: psi()}, nil
}
