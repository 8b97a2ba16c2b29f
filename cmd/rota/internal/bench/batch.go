package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
)

// BatchConfig shapes the batch workload: for each of Sizes, a plain drain
// of that many no-op jobs and a batch of as many, with an on_complete
// callback, drained by one worker with Concurrency slots.
type BatchConfig struct {
	Sizes       []int
	Concurrency int
	// CPUProfile, when set, is a file to write a CPU profile of the
	// batches' measured parts to.
	CPUProfile string
}

// DefaultBatch is issue 27's batch: 1,000 to 100,000 members, so that a
// flat cost per member shows as a flat rate.
var DefaultBatch = BatchConfig{Sizes: []int{1_000, 10_000, 100_000}, Concurrency: 512}

// Batch measures batches with callbacks against the plain drain of the
// same run: for each size, a drain of that many plain jobs, then a batch
// of as many members (added open in adds of 10,000, then closed: set-up,
// not timed) run by a worker until its on_complete callback has completed.
// The batch's Ratio is its jobs/s over the drain's.
func Batch(ctx context.Context, o Options, cfg BatchConfig) ([]Result, error) {
	if len(cfg.Sizes) == 0 || cfg.Concurrency <= 0 {
		return nil, fmt.Errorf("batch: sizes and concurrency must be given")
	}
	var out []Result
	for _, n := range cfg.Sizes {
		if n <= 0 {
			return nil, fmt.Errorf("batch: size %d is not positive", n)
		}
		d, err := Drain(ctx, o, DrainConfig{Jobs: n, Concurrency: cfg.Concurrency})
		if err != nil {
			return nil, err
		}
		b, err := batchRun(ctx, o, n, cfg)
		if err != nil {
			return nil, err
		}
		b.Baseline, b.BaselineValue, b.Ratio = "drain", d.JobsPerSec, b.JobsPerSec/d.JobsPerSec
		out = append(out, d, b)
	}
	return out, nil
}

func batchRun(ctx context.Context, o Options, n int, cfg BatchConfig) (Result, error) {
	e, err := newEnv(ctx, o, "batch")
	if err != nil {
		return Result{}, err
	}
	defer e.close()
	typ, after := e.typ("member"), e.typ("after")
	b, _, err := e.server.AddBatch(ctx, rota.NewBatch{Open: true, OnComplete: &rota.AddParams{Type: after},
		Description: fmt.Sprintf("bench: %d members", n)})
	if err != nil {
		return Result{}, fmt.Errorf("batch: %w", err)
	}
	total := n * 5 / 4
	for done := 0; done < n; {
		ps := make([]rota.AddParams, min(store.MaxAddBatch, n-done))
		for i := range ps {
			ps[i] = rota.AddParams{Type: typ, Data: json.RawMessage(noopData), Batch: b.ID}
		}
		if _, err := e.server.AddMany(ctx, ps); err != nil {
			return Result{}, fmt.Errorf("batch: add members: %w", err)
		}
		done += len(ps)
		o.progress(done/4, total)
	}
	if _, err := e.server.CloseBatch(ctx, b.ID); err != nil {
		return Result{}, fmt.Errorf("batch: %w", err)
	}
	checkpoint(ctx, e.st)
	members, count, unwatchMembers := countCompleted(e.st, typ, n, nil)
	defer unwatchMembers()
	callback, _, unwatch := countCompleted(e.st, after, 1, nil)
	defer unwatch()
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
	// The members' worker takes one type, as the drain's does; the
	// callback has a worker of its own.
	w := rota.NewWorker(e.client, rota.WorkerConfig{Concurrency: cfg.Concurrency, Logger: quietLogger(), PollWait: time.Second})
	cw := rota.NewWorker(e.client, rota.WorkerConfig{Concurrency: 1, Logger: quietLogger(), PollWait: time.Second})
	noop := rota.HandlerFunc(func(context.Context, *rota.Job) error { return nil })
	w.Handle(typ, noop)
	cw.Handle(after, noop)
	ran := make(chan error, 2)
	go func() { ran <- w.Run(wctx) }()
	go func() { ran <- cw.Run(wctx) }()
	err = waitDone(ctx, members, count, n, 5*time.Minute, func(d, t int) { o.progress(n/4+d, total) })
	if err == nil {
		select {
		case <-callback:
		case <-time.After(time.Minute):
			err = fmt.Errorf("the batch's callback did not complete within a minute of its members")
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	elapsed, cpu, pressure, scpu := time.Since(begin), cpuTime()-cpu0, psi(), serverCPU()
	stopProfile()
	stop()
	for range 2 {
		if rerr := <-ran; err == nil {
			err = rerr
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("batch: %w", err)
	}
	got, err := e.server.GetBatch(ctx, b.ID)
	if err != nil {
		return Result{}, fmt.Errorf("batch: %w", err)
	}
	if !got.Done || got.Counts.Completed != int64(n) || got.CompleteJob == 0 {
		return Result{}, fmt.Errorf("batch: after the run the batch is %+v, want done with %d completed", got, n)
	}
	return Result{Workload: "batch", Store: o.storeName(), Via: o.via(), Jobs: n, Concurrency: cfg.Concurrency,
		Seconds: elapsed.Seconds(), JobsPerSec: float64(n) / elapsed.Seconds(), StoreInfo: e.info,
		CPUUsPerJob: float64(cpu.Microseconds()) / float64(n), CPUPressure: pressure,
		ServerCPUUsPerJob: float64(scpu.Microseconds()) / float64(n),
		Note:              "a batch's members, then its on_complete callback, against a plain drain of as many"}, nil
}
