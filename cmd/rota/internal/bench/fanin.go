package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
)

// FaninConfig shapes the fan-out/fan-in workload: one job, Jobs jobs after
// it, and one job after all of those.
type FaninConfig struct {
	Jobs        int
	Concurrency int
	// CPUProfile, when set, is a file to write a CPU profile of the
	// workflow's drain to.
	CPUProfile string
}

// DefaultFanin is issue 27's fan-out/fan-in: one job after 10,000 others.
var DefaultFanin = FaninConfig{Jobs: 10_000, Concurrency: 512}

// Fanin measures dependencies (AddParams.After) against a plain drain of
// as many jobs in the same run. The workflow is a root job, Jobs jobs
// each after the root (a fan-out: the root's end releases them all), and a
// sink after all of them (a fan-in: each of their ends counts one down on
// the sink); its worker checks that the sink sees every outcome. Both
// drains are timed from the worker's start to the last completion's
// commit, with the same worker; the adds are set-up, reported apart. It
// returns the plain drain (the baseline) and the workflow's, whose Ratio
// is its rate over the plain one's.
func Fanin(ctx context.Context, o Options, cfg FaninConfig) ([]Result, error) {
	if cfg.Jobs <= 0 || cfg.Concurrency <= 0 {
		return nil, fmt.Errorf("fanin: jobs and concurrency must be positive")
	}
	if cfg.Jobs > store.MaxAfter {
		return nil, fmt.Errorf("fanin: at most %d jobs (a job's dependencies)", store.MaxAfter)
	}
	e, err := newEnv(ctx, o, "fanin")
	if err != nil {
		return nil, err
	}
	defer e.close()
	total := cfg.Jobs + 2
	plainType, wfType := e.typ("plain"), e.typ("workflow")
	progress := func(phase, done int) { o.progress(phase*total+done, 4*total) }

	// The plain drain: as many jobs, no dependencies.
	if err := e.fill(ctx, plainType, total, nil, func(done int) { progress(0, done) }); err != nil {
		return nil, err
	}
	checkpoint(ctx, e.st)
	plain, err := e.drainFanin(ctx, cfg, plainType, total, nil, "", func(done int) { progress(1, done) })
	if err != nil {
		return nil, fmt.Errorf("fanin: plain drain: %w", err)
	}

	// The workflow: root → Jobs jobs → sink.
	addBegin := time.Now()
	root, err := e.server.Add(ctx, rota.AddParams{Type: wfType, Data: noopData})
	if err != nil {
		return nil, err
	}
	mids := make([]int64, 0, cfg.Jobs)
	for start := 0; start < cfg.Jobs; start += 1000 {
		ps := make([]rota.AddParams, min(1000, cfg.Jobs-start))
		for i := range ps {
			ps[i] = rota.AddParams{Type: wfType, Data: noopData, After: []int64{root.Job.ID}}
		}
		res, err := e.server.AddMany(ctx, ps)
		if err != nil {
			return nil, fmt.Errorf("fanin: add the fan-out: %w", err)
		}
		for _, r := range res {
			mids = append(mids, r.Job.ID)
		}
		progress(2, len(mids))
	}
	sink, err := e.server.Add(ctx, rota.AddParams{Type: wfType, Data: []byte(`{"sink":true}`), After: mids})
	if err != nil {
		return nil, fmt.Errorf("fanin: add the fan-in: %w", err)
	}
	if sink.Job.State != store.Waiting {
		return nil, fmt.Errorf("fanin: the sink is %s, want waiting", sink.Job.State)
	}
	addSecs := time.Since(addBegin).Seconds()
	checkpoint(ctx, e.st)
	var sinkSaw atomic.Int64
	seen := func(j *rota.Job) {
		if j.ID == sink.Job.ID {
			n := 0
			for _, d := range j.Deps {
				if d.State == store.Completed {
					n++
				}
			}
			sinkSaw.Store(int64(n))
		}
	}
	wf, err := e.drainFanin(ctx, cfg, wfType, total, seen, cfg.CPUProfile, func(done int) { progress(3, done) })
	if err != nil {
		return nil, fmt.Errorf("fanin: workflow: %w", err)
	}
	if int(sinkSaw.Load()) != cfg.Jobs {
		return nil, fmt.Errorf("fanin: the sink saw %d of %d completed dependencies", sinkSaw.Load(), cfg.Jobs)
	}
	plain.Workload, plain.Note = "fanin-plain", "the baseline: as many jobs without dependencies, drained by the same worker"
	wf.Workload = "fanin"
	wf.Baseline, wf.BaselineValue, wf.Ratio = "fanin-plain jobs/s", plain.JobsPerSec, wf.JobsPerSec/plain.JobsPerSec
	wf.FillJobsPerSec = float64(total) / addSecs
	wf.Note = fmt.Sprintf("one job, %d jobs after it, one job after those; the sink saw every outcome", cfg.Jobs)
	return []Result{plain, wf}, nil
}

// drainFanin runs a worker on typ until n jobs have completed, calling
// seen with each job it runs, and measures it.
func (e *env) drainFanin(ctx context.Context, cfg FaninConfig, typ string, n int, seen func(*rota.Job), profile string, progress func(int)) (Result, error) {
	done, count, unwatch := countCompleted(e.st, typ, n, nil)
	defer unwatch()
	w := rota.NewWorker(e.client, rota.WorkerConfig{Concurrency: cfg.Concurrency, Logger: quietLogger(), PollWait: time.Second})
	w.Handle(typ, rota.HandlerFunc(func(_ context.Context, j *rota.Job) error {
		if seen != nil {
			seen(j)
		}
		return nil
	}))
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	stopProfile, err := startProfile(profile)
	if err != nil {
		return Result{}, err
	}
	defer stopProfile()
	o := e.opts
	serverCPU := func() time.Duration { return 0 }
	if o.storeName() == "postgres" {
		serverCPU = serverCPUSince(ctx, o.DSN)
	}
	begin, cpu0, psi := time.Now(), cpuTime(), pressureSince()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	err = waitDone(ctx, done, count, n, 10*time.Minute, func(d, _ int) { progress(d) })
	elapsed, cpu, pressure, scpu := time.Since(begin), cpuTime()-cpu0, psi(), serverCPU()
	stopProfile()
	stop()
	if rerr := <-ran; err == nil {
		err = rerr
	}
	if err != nil {
		return Result{}, err
	}
	return Result{Store: o.storeName(), Via: o.via(), Jobs: n, Concurrency: cfg.Concurrency,
		Seconds: elapsed.Seconds(), JobsPerSec: float64(n) / elapsed.Seconds(), StoreInfo: e.info,
		CPUUsPerJob: float64(cpu.Microseconds()) / float64(n), CPUPressure: pressure,
		ServerCPUUsPerJob: float64(scpu.Microseconds()) / float64(n)}, nil
}
