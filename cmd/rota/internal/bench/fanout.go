package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
)

// FanoutConfig shapes the fan-out workload: one parent job adds Children
// children while it runs, waits for them, and runs again to see them all.
type FanoutConfig struct {
	Children    int
	Concurrency int
	// CPUProfile, when set, is a file to write a CPU profile to.
	CPUProfile string
}

// DefaultFanout is the parent/child fan-out of issue 16: 10,000 children.
var DefaultFanout = FanoutConfig{Children: 10_000, Concurrency: 512}

// Fanout measures a parent/child fan-out: from the worker's start, a
// parent adds its children (in adds of 1,000), completes its run and waits;
// the children run (no-ops); the parent runs again, checks that it sees
// every child, and completes. Jobs counts the children; the time is the
// whole of it, until the parent's second completion has committed.
func Fanout(ctx context.Context, o Options, cfg FanoutConfig) (Result, error) {
	if cfg.Children <= 0 || cfg.Concurrency <= 0 {
		return Result{}, fmt.Errorf("fanout: children and concurrency must be positive")
	}
	e, err := newEnv(ctx, o, "fanout")
	if err != nil {
		return Result{}, err
	}
	defer e.close()
	parentType, childType := e.typ("parent"), e.typ("child")
	res, err := e.client.Add(ctx, rota.AddParams{Type: parentType, Data: json.RawMessage(`{"bench":"fanout"}`)})
	if err != nil {
		return Result{}, err
	}
	parent := res.Job.ID
	var seen atomic.Int64 // children the parent's second run saw
	var done atomic.Int64
	w := rota.NewWorker(e.client, rota.WorkerConfig{Concurrency: cfg.Concurrency, Logger: quietLogger(), PollWait: time.Second})
	w.Handle(parentType, rota.HandlerFunc(func(ctx context.Context, j *rota.Job) error {
		if j.HasChildren {
			seen.Store(int64(len(j.Children)))
			return nil
		}
		for start := 0; start < cfg.Children; start += 1000 {
			ps := make([]rota.AddParams, min(1000, cfg.Children-start))
			for i := range ps {
				ps[i] = rota.AddParams{Type: childType, Parent: j.ID}
			}
			if _, err := e.client.AddMany(ctx, ps); err != nil {
				return err
			}
		}
		return nil
	}))
	w.Handle(childType, rota.HandlerFunc(func(context.Context, *rota.Job) error {
		if n := done.Add(1); int(n)%1000 == 0 {
			o.progress(int(n), cfg.Children)
		}
		return nil
	}))
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	stopProfile, err := startProfile(cfg.CPUProfile)
	if err != nil {
		return Result{}, err
	}
	defer stopProfile()
	begin, cpu0 := time.Now(), cpuTime()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	deadline := time.Now().Add(5 * time.Minute)
	var j rota.Job
	for {
		if j, err = e.server.Get(ctx, parent); err != nil {
			break
		}
		if j.State == store.Completed && j.HasChildren {
			break
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("the parent is still %v after 5 minutes (%d children done)", j.State, done.Load())
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed, cpu := time.Since(begin), cpuTime()-cpu0
	stop()
	if rerr := <-ran; err == nil {
		err = rerr
	}
	if err != nil {
		return Result{}, fmt.Errorf("fanout: %w", err)
	}
	if int(seen.Load()) != cfg.Children {
		return Result{}, fmt.Errorf("fanout: the parent's second run saw %d of %d children", seen.Load(), cfg.Children)
	}
	return Result{Workload: "fanout", Store: o.storeName(), Via: o.via(), Jobs: cfg.Children, Concurrency: cfg.Concurrency,
		Seconds: elapsed.Seconds(), JobsPerSec: float64(cfg.Children) / elapsed.Seconds(), StoreInfo: e.info,
		CPUUsPerJob: float64(cpu.Microseconds()) / float64(cfg.Children),
		Note:        "one parent adds its children, waits for them, and runs again to see them all"}, nil
}
