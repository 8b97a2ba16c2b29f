package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rotajobs/rota"
)

// SteadyConfig shapes the steady workload: jobs arrive one at a time at
// Rate per second for Duration (an open loop: each arrival is scheduled
// by the clock, not by the previous one's answer), while one worker with
// Concurrency slots runs them.
type SteadyConfig struct {
	Rate        float64
	Duration    time.Duration
	Concurrency int
	// Warmup is run (and not counted) before the measured arrivals.
	Warmup time.Duration
	// CPUProfile, when set, is a file to write a CPU profile of the
	// measured arrivals to.
	CPUProfile string
}

// DefaultSteady is the target's load: 500 jobs/s.
var DefaultSteady = SteadyConfig{Rate: 500, Duration: 15 * time.Second, Concurrency: 32, Warmup: time.Second}

// Steady measures enqueue→start and enqueue→finish latency under a fixed
// arrival rate. "Enqueue" is the moment the producer calls Add (with
// Via "http", an HTTP request); "start" is the handler's first line;
// "finish" is the commit of the job's completion, as the store reports it.
func Steady(ctx context.Context, o Options, cfg SteadyConfig) (Result, error) {
	if cfg.Rate <= 0 || cfg.Duration <= 0 || cfg.Concurrency <= 0 {
		return Result{}, fmt.Errorf("steady: rate, duration and concurrency must be positive")
	}
	e, err := newEnv(ctx, o, "steady")
	if err != nil {
		return Result{}, err
	}
	defer e.close()
	typ := e.typ("steady")
	warm := int(cfg.Rate * cfg.Warmup.Seconds())
	n := int(cfg.Rate * cfg.Duration.Seconds())
	total := warm + n

	var mu sync.Mutex
	enq := make(map[int64]time.Time, total) // job → enqueue time, for measured jobs
	var startLat, finishLat, addLat []time.Duration
	done, count, unwatch := countCompleted(e.st, typ, total, func(id int64, at time.Time) {
		mu.Lock()
		if t, ok := enq[id]; ok {
			finishLat = append(finishLat, at.Sub(t))
		}
		mu.Unlock()
	})
	defer unwatch()

	w := rota.NewWorker(e.client, rota.WorkerConfig{Concurrency: cfg.Concurrency, Logger: quietLogger()})
	w.Handle(typ, rota.HandlerFunc(func(_ context.Context, job *rota.Job) error {
		now := time.Now()
		// The data carries the enqueue time and whether it is measured.
		var d struct {
			T int64 `json:"t"`
			M bool  `json:"m"`
		}
		if err := json.Unmarshal(job.Data, &d); err != nil {
			return err
		}
		if d.M {
			t := time.Unix(0, d.T)
			mu.Lock()
			enq[job.ID] = t
			startLat = append(startLat, now.Sub(t))
			mu.Unlock()
		}
		return nil
	}))
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	time.Sleep(50 * time.Millisecond) // the worker is waiting for work

	// The producer: arrival i is due at begin + i/rate and is sent by a
	// goroutine of its own, so a slow add never delays the next arrival.
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	var adds sync.WaitGroup
	var addErr error
	var addMu sync.Mutex
	begin := time.Now()
	var measuredBegin time.Time
	var psi func() float64
	for i := 0; i < total && ctx.Err() == nil; i++ {
		due := begin.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		measured := i >= warm
		if i == warm {
			measuredBegin, psi = time.Now(), pressureSince()
			stopProfile, err := startProfile(cfg.CPUProfile)
			if err != nil {
				stop()
				<-ran
				return Result{}, err
			}
			defer stopProfile()
		}
		adds.Add(1)
		go func() {
			defer adds.Done()
			t0 := time.Now()
			data := []byte(`{"t":` + strconv.FormatInt(t0.UnixNano(), 10) + `,"m":` + strconv.FormatBool(measured) + `}`)
			_, err := e.client.Add(ctx, rota.AddParams{Type: typ, Data: data})
			el := time.Since(t0)
			addMu.Lock()
			if err != nil && addErr == nil {
				addErr = err
			}
			if measured {
				addLat = append(addLat, el)
			}
			addMu.Unlock()
		}()
		if i%100 == 0 {
			o.progress(count(), total)
		}
	}
	sent := time.Since(measuredBegin)
	adds.Wait()
	if addErr != nil {
		stop()
		<-ran
		return Result{}, fmt.Errorf("steady: add: %w", addErr)
	}
	err = waitDone(ctx, done, count, total, time.Minute, o.progress)
	elapsed, pressure := time.Since(measuredBegin), psi()
	stop()
	if rerr := <-ran; err == nil {
		err = rerr
	}
	if err != nil {
		return Result{}, fmt.Errorf("steady: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	s := percentiles(startLat, 0.5, 0.99, 0.999, 1)
	f := percentiles(finishLat, 0.5, 0.99, 0.999)
	a := percentiles(addLat, 0.5, 0.99)
	r := Result{Workload: "steady", Store: o.storeName(), Via: o.via(), Jobs: n, Concurrency: cfg.Concurrency,
		Seconds: elapsed.Seconds(), JobsPerSec: float64(n) / sent.Seconds(), TargetRate: cfg.Rate,
		P50Ms: s[0], P99Ms: s[1], P999Ms: s[2], MaxMs: s[3], FinishP50Ms: f[0], FinishP99Ms: f[1], FinishP999Ms: f[2],
		AddP50Ms: a[0], AddP99Ms: a[1], StoreInfo: e.info, CPUPressure: pressure}
	if len(startLat) != n || len(finishLat) != n {
		r.Note = fmt.Sprintf("measured %d starts and %d finishes of %d jobs", len(startLat), len(finishLat), n)
	}
	return r, nil
}
