package main

// The River workloads, generic over the driver (PostgreSQL through
// riverpgxv5, SQLite through riversqlite). drain follows River's own `river bench -n N` burn-down
// (cmd/river/riverbench): InsertMany in batches of 5,000, then a client with
// a no-op worker, completions counted through the subscription channel, which
// River feeds only after the completer has committed the completion.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// backend is what differs between River's PostgreSQL and SQLite drivers.
type backend[TTx any] struct {
	store  string // "postgres" or "sqlite"
	driver riverdriver.Driver[TTx]
	schema string
	// reset empties River's tables before a run (after migrating).
	reset func(context.Context) error
	// afterFill runs after the jobs are inserted, before the clock starts.
	afterFill func(context.Context) error
	// serverCPUSince measures the database server's CPU (0 without one).
	serverCPUSince func() func() time.Duration
	// completed counts completed jobs in the database, for the final check.
	completed func(context.Context) (int, error)
	info      map[string]any
}

type riverOptions struct {
	mode          string
	jobs          int
	workers       int
	fetchCooldown time.Duration
	fetchPoll     time.Duration
	rate          float64
	duration      time.Duration
	warmup        time.Duration
}

type NoopArgs struct {
	Num int `json:"num"`
}

func (NoopArgs) Kind() string { return "peer_noop" }

// SteadyArgs carries the enqueue time (ns) and whether the job is measured.
type SteadyArgs struct {
	T int64 `json:"t"`
	M bool  `json:"m"`
}

func (SteadyArgs) Kind() string { return "peer_steady" }

func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func migrate[TTx any](ctx context.Context, b backend[TTx]) error {
	m, err := rivermigrate.New(b.driver, &rivermigrate.Config{Logger: logger(), Schema: b.schema})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func newClient[TTx any](b backend[TTx], o riverOptions, workers *river.Workers) (*river.Client[TTx], error) {
	return river.NewClient(b.driver, &river.Config{
		FetchCooldown:     o.fetchCooldown,
		FetchPollInterval: o.fetchPoll,
		Logger:            logger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Schema:            b.schema,
		Workers:           workers,
	})
}

func baseResult[TTx any](b backend[TTx], o riverOptions, workload string) map[string]any {
	r := map[string]any{
		"system": "river", "store": b.store, "workload": workload, "workers": o.workers,
		"version":        moduleVersion("github.com/riverqueue/river"),
		"fetch_cooldown": o.fetchCooldown.String(), "fetch_poll_interval": o.fetchPoll.String(),
	}
	for k, v := range b.info {
		r[k] = v
	}
	return r
}

func runRiver[TTx any](ctx context.Context, b backend[TTx], o riverOptions) (map[string]any, error) {
	if err := migrate(ctx, b); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if err := b.reset(ctx); err != nil {
		return nil, fmt.Errorf("reset: %w", err)
	}
	switch o.mode {
	case "drain":
		return riverDrain(ctx, b, o)
	case "steady":
		return riverSteady(ctx, b, o)
	}
	return nil, fmt.Errorf("unknown mode %q", o.mode)
}

// riverDrain: insert o.jobs no-op jobs (not timed), then start the client and time
// from just before Start until the subscription has seen the last completion.
func riverDrain[TTx any](ctx context.Context, b backend[TTx], o riverOptions) (map[string]any, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[NoopArgs]) error { return nil }))
	client, err := newClient(b, o, workers)
	if err != nil {
		return nil, err
	}
	fill0 := time.Now()
	const batch = 5_000 // as River's bench
	params := make([]river.InsertManyParams, 0, batch)
	for i := 0; i < o.jobs; i += batch {
		params = params[:0]
		for j := i; j < min(i+batch, o.jobs); j++ {
			params = append(params, river.InsertManyParams{Args: NoopArgs{Num: j}})
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return nil, fmt.Errorf("insert: %w", err)
		}
	}
	fill := time.Since(fill0)
	if err := b.afterFill(ctx); err != nil {
		return nil, fmt.Errorf("after fill: %w", err)
	}

	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: o.jobs + 1000, // a dropped event would stall the count
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer unsubscribe()
	var failed atomic.Int64
	done := make(chan time.Time, 1)
	go func() {
		n := 0
		for ev := range events {
			if ev.Kind != river.EventKindJobCompleted {
				failed.Add(1)
			}
			if n++; n == o.jobs {
				done <- time.Now()
				return
			}
		}
	}()

	scpu := b.serverCPUSince()
	begin, cpu0, psi := time.Now(), cpuTime(), pressureSince()
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	started := time.Since(begin)
	var end time.Time
	select {
	case end = <-done:
	case <-time.After(10 * time.Minute):
		return nil, errors.New("drain: timed out")
	}
	elapsed, cpu, pr, sc := end.Sub(begin), cpuTime()-cpu0, psi(), scpu()
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return nil, fmt.Errorf("stop: %w", err)
	}
	if f := failed.Load(); f != 0 {
		return nil, fmt.Errorf("drain: %d jobs failed or were cancelled", f)
	}
	if n, err := b.completed(ctx); err != nil || n != o.jobs {
		return nil, fmt.Errorf("drain: %d of %d jobs completed in the database (%v)", n, o.jobs, err)
	}
	r := baseResult(b, o, "drain")
	r["jobs"] = o.jobs
	r["seconds"] = round(elapsed.Seconds(), 4)
	r["jobs_per_sec"] = round(float64(o.jobs)/elapsed.Seconds(), 1)
	r["start_ms"] = round(float64(started.Microseconds())/1000, 2)
	r["fill_seconds"] = round(fill.Seconds(), 3)
	r["cpu_us_per_job"] = round(float64(cpu.Microseconds())/float64(o.jobs), 2)
	if sc > 0 {
		r["server_cpu_us_per_job"] = round(float64(sc.Microseconds())/float64(o.jobs), 2)
	}
	r["cpu_pressure"] = round(pr, 3)
	return r, nil
}

// riverSteady: as rota bench steady: jobs inserted one at a time (client.Insert)
// at o.rate per second, each arrival sent by a goroutine of its own at
// begin + i/rate (an open loop). Enqueue is the moment before Insert is
// called; start is the worker's first line; finish is the subscription's
// completion event (after the completion's commit).
func riverSteady[TTx any](ctx context.Context, b backend[TTx], o riverOptions) (map[string]any, error) {
	warm := int(o.rate * o.warmup.Seconds())
	n := int(o.rate * o.duration.Seconds())
	total := warm + n
	var mu sync.Mutex
	startLat := make([]time.Duration, 0, n)
	finishLat := make([]time.Duration, 0, n)
	addLat := make([]time.Duration, 0, n)

	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(_ context.Context, j *river.Job[SteadyArgs]) error {
		now := time.Now()
		if j.Args.M {
			mu.Lock()
			startLat = append(startLat, now.Sub(time.Unix(0, j.Args.T)))
			mu.Unlock()
		}
		return nil
	}))
	client, err := newClient(b, o, workers)
	if err != nil {
		return nil, err
	}
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: total + 1000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer unsubscribe()
	var failed atomic.Int64
	done := make(chan struct{})
	go func() {
		c := 0
		for ev := range events {
			now := time.Now()
			if ev.Kind != river.EventKindJobCompleted {
				failed.Add(1)
			}
			var a SteadyArgs
			if json.Unmarshal(ev.Job.EncodedArgs, &a) == nil && a.M {
				mu.Lock()
				finishLat = append(finishLat, now.Sub(time.Unix(0, a.T)))
				mu.Unlock()
			}
			if c++; c == total {
				close(done)
				return
			}
		}
	}()
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond) // the producer and its listener are up

	interval := time.Duration(float64(time.Second) / o.rate)
	var adds sync.WaitGroup
	var addErr atomic.Pointer[error]
	begin := time.Now()
	var measuredBegin time.Time
	var psi func() float64
	for i := 0; i < total; i++ {
		if d := time.Until(begin.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		measured := i >= warm
		if i == warm {
			measuredBegin, psi = time.Now(), pressureSince()
		}
		adds.Add(1)
		go func() {
			defer adds.Done()
			t0 := time.Now()
			_, err := client.Insert(ctx, SteadyArgs{T: t0.UnixNano(), M: measured}, nil)
			el := time.Since(t0)
			if err != nil {
				addErr.CompareAndSwap(nil, &err)
			}
			if measured {
				mu.Lock()
				addLat = append(addLat, el)
				mu.Unlock()
			}
		}()
	}
	sent := time.Since(measuredBegin)
	adds.Wait()
	if e := addErr.Load(); e != nil {
		return nil, fmt.Errorf("steady: insert: %w", *e)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		return nil, errors.New("steady: timed out waiting for completions")
	}
	elapsed, pr := time.Since(measuredBegin), psi()
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return nil, fmt.Errorf("stop: %w", err)
	}
	if f := failed.Load(); f != 0 {
		return nil, fmt.Errorf("steady: %d jobs failed or were cancelled", f)
	}
	mu.Lock()
	defer mu.Unlock()
	s := percentiles(startLat, 0.5, 0.99, 0.999, 1)
	f := percentiles(finishLat, 0.5, 0.99, 0.999)
	a := percentiles(addLat, 0.5, 0.99)
	r := baseResult(b, o, "steady")
	r["jobs"] = n
	r["target_rate"] = o.rate
	r["jobs_per_sec"] = round(float64(n)/sent.Seconds(), 1)
	r["seconds"] = round(elapsed.Seconds(), 3)
	r["p50_ms"], r["p99_ms"], r["p999_ms"], r["max_ms"] = round(s[0], 3), round(s[1], 3), round(s[2], 3), round(s[3], 3)
	r["finish_p50_ms"], r["finish_p99_ms"], r["finish_p999_ms"] = round(f[0], 3), round(f[1], 3), round(f[2], 3)
	r["add_p50_ms"], r["add_p99_ms"] = round(a[0], 3), round(a[1], 3)
	r["cpu_pressure"] = round(pr, 3)
	if len(startLat) != n || len(finishLat) != n {
		r["note"] = "measured " + strconv.Itoa(len(startLat)) + " starts and " + strconv.Itoa(len(finishLat)) + " finishes of " + strconv.Itoa(n)
	}
	return r, nil
}

// jobStateCompleted is River's state name for a completed job.
const jobStateCompleted = string(rivertype.JobStateCompleted)

// riverFlags are the flags both River commands take.
func riverFlags(fs *flag.FlagSet, o *riverOptions) {
	fs.StringVar(&o.mode, "mode", "drain", "drain or steady")
	fs.IntVar(&o.jobs, "n", 50_000, "drain: jobs to insert and drain")
	fs.IntVar(&o.workers, "workers", 100, "MaxWorkers of the default queue")
	fs.DurationVar(&o.fetchCooldown, "fetch-cooldown", time.Millisecond, "River FetchCooldown (its default, 100ms, caps a drain near 1k jobs/s)")
	fs.DurationVar(&o.fetchPoll, "fetch-poll", 20*time.Millisecond, "River FetchPollInterval")
	fs.Float64Var(&o.rate, "rate", 500, "steady: jobs inserted per second")
	fs.DurationVar(&o.duration, "duration", 15*time.Second, "steady: measured arrivals last this long")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "steady: arrivals before the measured ones, not counted")
}
