// `peers asynq` measures Asynq (github.com/hibiken/asynq) on Redis, for
// comparison with `rota bench`: a drain of N pre-enqueued no-op tasks, or
// steady enqueue→start latency at a fixed rate. It prints one JSON line.
//
// Asynq has no completion feed. A task is done when the server has removed it
// from the active list and counted it (its "done" script increments
// asynq:{queue}:processed), so the drain's clock stops when that counter
// reaches N (polled every 200 µs once every handler has returned).

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

const queue = "default"

type asynqOptions struct {
	mode          string
	jobs          int
	concurrency   int
	checkInterval time.Duration
	rate          float64
	duration      time.Duration
	warmup        time.Duration
}

// asynqMain is `peers asynq`.
func asynqMain(args []string) error {
	var o asynqOptions
	fs := flag.NewFlagSet("asynq", flag.ContinueOnError)
	addr := fs.String("redis", "127.0.0.1:6391", "Redis address (its database 0 is flushed)")
	fs.StringVar(&o.mode, "mode", "drain", "drain or steady")
	fs.IntVar(&o.jobs, "n", 50_000, "drain: tasks to enqueue and drain")
	fs.IntVar(&o.concurrency, "concurrency", 100, "asynq.Config.Concurrency")
	fs.DurationVar(&o.checkInterval, "check-interval", 0, "asynq.Config.TaskCheckInterval: how long the processor sleeps when the queue is empty (0: Asynq's default, 1s)")
	fs.Float64Var(&o.rate, "rate", 500, "steady: tasks enqueued per second")
	fs.DurationVar(&o.duration, "duration", 15*time.Second, "steady: measured arrivals last this long")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "steady: arrivals before the measured ones, not counted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stop := startCPUProfile()
	r, err := runAsynq(context.Background(), *addr, o)
	stop()
	if err != nil {
		return err
	}
	emit(r)
	return nil
}

func runAsynq(ctx context.Context, addr string, o asynqOptions) (map[string]any, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		return nil, err
	}
	info := map[string]any{"system": "asynq", "store": "redis", "workers": o.concurrency,
		"version": moduleVersion("github.com/hibiken/asynq")}
	ci := o.checkInterval
	if ci == 0 {
		ci = time.Second
	}
	info["task_check_interval"] = ci.String()
	serverPID := 0
	if s, err := rdb.Info(ctx, "server").Result(); err == nil {
		info["store_version"] = infoField(s, "redis_version")
		serverPID, _ = strconv.Atoi(infoField(s, "process_id"))
		if f := procStat(serverPID); len(f) < 2 || !strings.HasPrefix(f[1], "redis") {
			serverPID = 0 // not on this machine
		}
	}
	for _, k := range []string{"appendonly", "appendfsync", "save"} {
		if v, err := rdb.ConfigGet(ctx, k).Result(); err == nil {
			info[k] = v[k]
		}
	}
	switch o.mode {
	case "drain":
		return asynqDrain(ctx, rdb, addr, serverPID, info, o)
	case "steady":
		return asynqSteady(ctx, addr, info, o)
	}
	return nil, fmt.Errorf("unknown mode %q", o.mode)
}

func infoField(info, name string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			return v
		}
	}
	return ""
}

func newServer(addr string, o asynqOptions) *asynq.Server {
	return asynq.NewServer(asynq.RedisClientOpt{Addr: addr}, asynq.Config{
		Concurrency:       o.concurrency,
		TaskCheckInterval: o.checkInterval,
		Queues:            map[string]int{queue: 1},
		LogLevel:          asynq.WarnLevel,
	})
}

// asynqDrain: enqueue o.jobs no-op tasks (not timed; 32 producers), rewrite the
// AOF so that an automatic rewrite is unlikely during the measurement, then
// time from just before the server starts until the last task is done.
func asynqDrain(ctx context.Context, rdb *redis.Client, addr string, serverPID int, r map[string]any, o asynqOptions) (map[string]any, error) {
	client := asynq.NewClient(asynq.RedisClientOpt{Addr: addr})
	defer client.Close()
	fill0 := time.Now()
	var next atomic.Int64
	var fillErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(o.jobs) {
					return
				}
				payload := []byte(`{"num":` + strconv.FormatInt(i, 10) + `}`)
				if _, err := client.EnqueueContext(ctx, asynq.NewTask("peer_noop", payload), asynq.Queue(queue)); err != nil {
					fillErr.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if e := fillErr.Load(); e != nil {
		return nil, fmt.Errorf("enqueue: %w", *e)
	}
	fill := time.Since(fill0)
	if err := rewriteAOF(ctx, rdb); err != nil {
		return nil, err
	}
	processedKey := "asynq:{" + queue + "}:processed"
	if n, _ := rdb.Get(ctx, processedKey).Int(); n != 0 {
		return nil, fmt.Errorf("processed counter is %d before the drain", n)
	}

	var handled atomic.Int64
	allHandled := make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc("peer_noop", func(context.Context, *asynq.Task) error {
		if handled.Add(1) == int64(o.jobs) {
			close(allHandled)
		}
		return nil
	})
	srv := newServer(addr, o)
	poll := redis.NewClient(&redis.Options{Addr: addr})
	defer poll.Close()
	poll.Ping(ctx)

	scpu := procCPUSince(serverPID, true)
	begin, cpu0, psi := time.Now(), cpuTime(), pressureSince()
	if err := srv.Start(mux); err != nil {
		return nil, err
	}
	started := time.Since(begin)
	select {
	case <-allHandled:
	case <-time.After(10 * time.Minute):
		return nil, errors.New("drain: timed out")
	}
	var end time.Time
	for deadline := time.Now().Add(time.Minute); ; {
		n, err := poll.Get(ctx, processedKey).Int()
		if err == nil && n >= o.jobs {
			end = time.Now()
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("drain: %d of %d tasks done a minute after the last handler returned (%v)", n, o.jobs, err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	elapsed, cpu, pr, sc := end.Sub(begin), cpuTime()-cpu0, psi(), scpu()
	srv.Shutdown()
	pending, _ := rdb.LLen(ctx, "asynq:{"+queue+"}:pending").Result()
	active, _ := rdb.LLen(ctx, "asynq:{"+queue+"}:active").Result()
	failed, _ := rdb.Get(ctx, "asynq:{"+queue+"}:failed").Int()
	if pending != 0 || active != 0 || failed != 0 {
		return nil, fmt.Errorf("drain: %d pending, %d active, %d failed after the drain", pending, active, failed)
	}
	r["workload"] = "drain"
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

// rewriteAOF compacts the append-only file and waits for the rewrite to end.
func rewriteAOF(ctx context.Context, rdb *redis.Client) error {
	if v, _ := rdb.ConfigGet(ctx, "appendonly").Result(); v["appendonly"] != "yes" {
		return nil
	}
	for i := 0; ; i++ {
		err := rdb.BgRewriteAOF(ctx).Err()
		if err == nil {
			break
		}
		if i > 100 { // a rewrite (or save) already running
			return fmt.Errorf("bgrewriteaof: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		s, err := rdb.Info(ctx, "persistence").Result()
		if err == nil && infoField(s, "aof_rewrite_in_progress") == "0" && infoField(s, "aof_rewrite_scheduled") == "0" {
			return nil
		}
	}
	return errors.New("aof rewrite did not finish")
}

// asynqSteady: as rota bench steady: tasks enqueued one at a time at o.rate per
// second, each arrival sent by a goroutine of its own at begin + i/rate (an
// open loop). Enqueue is the moment before Enqueue is called; start is the
// handler's first line. (Asynq has no completion feed, so no finish latency.)
func asynqSteady(ctx context.Context, addr string, r map[string]any, o asynqOptions) (map[string]any, error) {
	warm := int(o.rate * o.warmup.Seconds())
	n := int(o.rate * o.duration.Seconds())
	total := warm + n
	var mu sync.Mutex
	startLat := make([]time.Duration, 0, n)
	addLat := make([]time.Duration, 0, n)
	var handled atomic.Int64
	allHandled := make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc("peer_steady", func(_ context.Context, t *asynq.Task) error {
		now := time.Now()
		var a struct {
			T int64 `json:"t"`
			M bool  `json:"m"`
		}
		if err := json.Unmarshal(t.Payload(), &a); err != nil {
			return err
		}
		if a.M {
			mu.Lock()
			startLat = append(startLat, now.Sub(time.Unix(0, a.T)))
			mu.Unlock()
		}
		if handled.Add(1) == int64(total) {
			close(allHandled)
		}
		return nil
	})
	srv := newServer(addr, o)
	if err := srv.Start(mux); err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	client := asynq.NewClient(asynq.RedisClientOpt{Addr: addr})
	defer client.Close()
	time.Sleep(500 * time.Millisecond)

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
			payload := []byte(`{"t":` + strconv.FormatInt(t0.UnixNano(), 10) + `,"m":` + strconv.FormatBool(measured) + `}`)
			_, err := client.EnqueueContext(ctx, asynq.NewTask("peer_steady", payload), asynq.Queue(queue))
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
		return nil, fmt.Errorf("steady: enqueue: %w", *e)
	}
	select {
	case <-allHandled:
	case <-time.After(2 * time.Minute):
		return nil, errors.New("steady: timed out waiting for the handlers")
	}
	elapsed, pr := time.Since(measuredBegin), psi()
	mu.Lock()
	defer mu.Unlock()
	s := percentiles(startLat, 0.5, 0.99, 0.999, 1)
	a := percentiles(addLat, 0.5, 0.99)
	r["workload"] = "steady"
	r["jobs"] = n
	r["target_rate"] = o.rate
	r["jobs_per_sec"] = round(float64(n)/sent.Seconds(), 1)
	r["seconds"] = round(elapsed.Seconds(), 3)
	r["p50_ms"], r["p99_ms"], r["p999_ms"], r["max_ms"] = round(s[0], 3), round(s[1], 3), round(s[2], 3), round(s[3], 3)
	r["add_p50_ms"], r["add_p99_ms"] = round(a[0], 3), round(a[1], 3)
	r["cpu_pressure"] = round(pr, 3)
	if len(startLat) != n {
		r["note"] = "measured " + strconv.Itoa(len(startLat)) + " starts of " + strconv.Itoa(n)
	}
	return r, nil
}
