// Package bench holds rota's benchmark workloads, run by `rota bench`.
// Each runs the real engine (store, client, worker runtime) and reports
// figures together with a baseline measured in the same run.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rotajobs/rota"
)

// FairnessConfig shapes the fairness workload: one big group submits Big
// jobs, then Small groups submit SmallJobs each; Workers run them, each
// job taking Work.
type FairnessConfig struct {
	Big       int
	Small     int
	SmallJobs int
	Workers   int
	Work      time.Duration
}

// DefaultFairness is the workload: 20,000 jobs of one group, then
// 99 groups of 20, 8 workers, 1 ms per job.
var DefaultFairness = FairnessConfig{Big: 20000, Small: 99, SmallJobs: 20, Workers: 8, Work: time.Millisecond}

// FairnessResult is one mode's outcome.
type FairnessResult struct {
	Workload   string  `json:"workload"`
	Mode       string  `json:"mode"` // "rota" (groups) or "fifo" (one queue)
	Store      string  `json:"store"`
	Via        string  `json:"via"`
	Jobs       int     `json:"jobs"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	// BigDoneFractionWhenSmallDone is the share of the big group's jobs
	// finished when the last job of the small groups finished.
	BigDoneFractionWhenSmallDone float64 `json:"big_done_fraction_when_small_done"`
	// SmallDoneSeconds is when the last small-group job finished.
	SmallDoneSeconds float64 `json:"small_done_seconds"`
	// JainIndex is Jain's fairness index of the jobs each group started
	// while every group was backlogged (1 is perfectly even, 1/n is one
	// group taking everything).
	JainIndex float64 `json:"jain_index"`
	// BigShare and SmallShareMean are shares of the jobs started while
	// every group was backlogged.
	BigShare       float64 `json:"big_share_while_backlogged"`
	SmallShareMean float64 `json:"small_share_mean_while_backlogged"`
	BacklogJobs    int     `json:"jobs_while_all_backlogged"`
	StoreInfo
}

// Fairness runs the workload twice, with groups and as one FIFO queue.
func Fairness(ctx context.Context, o Options, cfg FairnessConfig) ([]FairnessResult, error) {
	var out []FairnessResult
	for _, mode := range []string{"rota", "fifo"} {
		r, err := fairnessRun(ctx, o, cfg, mode)
		if err != nil {
			return nil, fmt.Errorf("fairness (%s): %w", mode, err)
		}
		out = append(out, r)
	}
	return out, nil
}

type started struct {
	group string
	at    time.Time
}

func fairnessRun(ctx context.Context, o Options, cfg FairnessConfig, mode string) (FairnessResult, error) {
	e, err := newEnv(ctx, o, "fairness-"+mode)
	if err != nil {
		return FairnessResult{}, err
	}
	defer e.close()
	typ := e.typ("fair")
	c := e.client

	groupOf := func(g string) string {
		if mode == "fifo" {
			return "" // one queue: jobs come out in submission order
		}
		return g
	}
	total := cfg.Big + cfg.Small*cfg.SmallJobs
	var batch []rota.AddParams
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := c.AddMany(ctx, batch)
		batch = batch[:0]
		return err
	}
	for i := range total {
		g := "big"
		if i >= cfg.Big {
			g = fmt.Sprintf("small-%02d", (i-cfg.Big)/cfg.SmallJobs)
		}
		// The data names the tenant, which FIFO mode does not store as
		// the job's group.
		data, _ := json.Marshal(map[string]string{"tenant": g})
		batch = append(batch, rota.AddParams{Type: typ, Group: groupOf(g), Data: data})
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return FairnessResult{}, err
			}
		}
	}
	if err := flush(); err != nil {
		return FairnessResult{}, err
	}
	var mu sync.Mutex
	var starts []started
	var finishes []started
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: cfg.Workers, Logger: quietLogger()})
	rota.Handle(w, typ, func(ctx context.Context, job *rota.Job, args struct{ Tenant string }) error {
		g := args.Tenant
		now := time.Now()
		mu.Lock()
		starts = append(starts, started{g, now})
		mu.Unlock()
		time.Sleep(cfg.Work)
		mu.Lock()
		finishes = append(finishes, started{g, time.Now()})
		n := len(finishes)
		mu.Unlock()
		if n%500 == 0 {
			o.progress(n, total)
		}
		return nil
	})
	begin := time.Now()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	for {
		mu.Lock()
		n := len(finishes)
		mu.Unlock()
		if n >= total || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(begin)
	stop()
	if err := <-done; err != nil {
		return FairnessResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return FairnessResult{}, err
	}
	// Finish order is approximate at the millisecond; the handler's own
	// clock reading orders it.
	sort.SliceStable(finishes, func(i, j int) bool { return finishes[i].at.Before(finishes[j].at) })
	sort.SliceStable(starts, func(i, j int) bool { return starts[i].at.Before(starts[j].at) })
	r := FairnessResult{Workload: "fairness", Mode: mode, Store: o.storeName(), Via: o.via(), Jobs: total,
		Seconds: elapsed.Seconds(), JobsPerSec: float64(total) / elapsed.Seconds(), StoreInfo: e.info}
	smallLeft := cfg.Small * cfg.SmallJobs
	bigDone := 0
	for _, f := range finishes {
		if f.group == "big" {
			bigDone++
			continue
		}
		if smallLeft--; smallLeft == 0 {
			r.BigDoneFractionWhenSmallDone = float64(bigDone) / float64(cfg.Big)
			r.SmallDoneSeconds = f.at.Sub(begin).Seconds()
			break
		}
	}
	// The window in which every group was backlogged ends when the first
	// group has started all its jobs.
	left := map[string]int{"big": cfg.Big}
	for i := range cfg.Small {
		left[fmt.Sprintf("small-%02d", i)] = cfg.SmallJobs
	}
	got := map[string]int{}
	for _, s := range starts {
		got[s.group]++
		r.BacklogJobs++
		if left[s.group]--; left[s.group] == 0 {
			break
		}
	}
	shares := make([]float64, 0, len(left))
	for g := range left {
		shares = append(shares, float64(got[g]))
	}
	r.JainIndex = jain(shares)
	if r.BacklogJobs > 0 {
		r.BigShare = float64(got["big"]) / float64(r.BacklogJobs)
		r.SmallShareMean = (1 - r.BigShare) / float64(cfg.Small)
	}
	return r, nil
}

// jain is Jain's fairness index (Σx)² / (n·Σx²).
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}
