package bench

import (
	"context"
	"fmt"
)

// DrainWithBaselines runs the drain with its baselines from the same run
// (when cfg.Baseline): raw batched SQL on the same kind of database (a
// SQLite file, or a schema of its own in the PostgreSQL database), the
// ceiling, against which the in-process figure is a ratio; with Via "http", the in-process drain, against which the HTTP
// figure is a ratio. It returns the baselines' results first.
func DrainWithBaselines(ctx context.Context, o Options, cfg DrainConfig) ([]Result, error) {
	if cfg.Nodes > 1 {
		return drainNodes(ctx, o, cfg)
	}
	if cfg.Rate > 0 || cfg.MaxRunning > 0 {
		return drainFlowControl(ctx, o, cfg)
	}
	var out []Result
	var raw float64
	if cfg.Baseline {
		var v, cpu, scpu float64
		var err error
		var note string
		switch o.storeName() {
		case "sqlite":
			v, cpu, err = RawSQLiteDrain(ctx, o.Dir, cfg.Jobs)
			note = "ceiling: one connection, UPDATE…RETURNING claims of 500 and UPDATE…FROM json_each completions, minimal schema"
		case "postgres":
			v, cpu, scpu, err = RawPostgresDrain(ctx, o.DSN, cfg.Jobs)
			note = "ceiling: SKIP LOCKED claims of 500 (synchronous_commit off) on one connection, pipelined to two connections that complete each batch with one UPDATE by primary key, minimal schema"
		}
		if err != nil {
			return nil, fmt.Errorf("drain baseline: %w", err)
		}
		raw = v
		out = append(out, Result{Workload: "drain", Store: o.storeName(), Via: "raw-sql", Jobs: cfg.Jobs,
			Seconds: float64(cfg.Jobs) / v, JobsPerSec: v, CPUUsPerJob: cpu, ServerCPUUsPerJob: scpu, Note: note})
	}
	inproc := o
	inproc.Via = "inprocess"
	if o.via() == "inprocess" || cfg.Baseline {
		r, err := Drain(ctx, inproc, cfg)
		if err != nil {
			return out, err
		}
		if raw > 0 {
			r.Baseline, r.BaselineValue, r.Ratio = "raw SQL claim+complete (jobs/s)", raw, r.JobsPerSec/raw
		}
		out = append(out, r)
	}
	if o.via() == "http" {
		r, err := Drain(ctx, o, cfg)
		if err != nil {
			return out, err
		}
		if cfg.Baseline {
			in := out[len(out)-1]
			r.Baseline, r.BaselineValue, r.Ratio = "in-process drain (jobs/s)", in.JobsPerSec, r.JobsPerSec/in.JobsPerSec
		}
		out = append(out, r)
	}
	return out, nil
}

// drainFlowControl runs the drain of a type with a rate or a bound on its
// running jobs after, as its baseline, the same drain without them in the
// same run: set too high to bind, the ratio is what keeping them costs.
func drainFlowControl(ctx context.Context, o Options, cfg DrainConfig) ([]Result, error) {
	var out []Result
	var plain float64
	if cfg.Baseline {
		c := cfg
		c.Rate, c.MaxRunning, c.CPUProfile = 0, 0, ""
		r, err := Drain(ctx, o, c)
		if err != nil {
			return nil, err
		}
		r.Note = "the baseline: the same drain without a rate or a bound"
		plain = r.JobsPerSec
		out = append(out, r)
	}
	r, err := Drain(ctx, o, cfg)
	if err != nil {
		return out, err
	}
	if plain > 0 {
		r.Baseline, r.BaselineValue, r.Ratio = "the same drain without a rate or a bound (jobs/s)", plain, r.JobsPerSec/plain
	}
	return append(out, r), nil
}

// drainNodes runs the drain on cfg.Nodes nodes, after the same drain on
// one node as the baseline.
func drainNodes(ctx context.Context, o Options, cfg DrainConfig) ([]Result, error) {
	var out []Result
	var one float64
	if cfg.Baseline {
		c := cfg
		c.Nodes, c.CPUProfile = 1, ""
		r, err := Drain(ctx, o, c)
		if err != nil {
			return nil, err
		}
		one = r.JobsPerSec
		out = append(out, r)
	}
	r, err := Drain(ctx, o, cfg)
	if err != nil {
		return out, err
	}
	if one > 0 {
		r.Baseline, r.BaselineValue, r.Ratio = "the same drain on one node (jobs/s)", one, r.JobsPerSec/one
	}
	return append(out, r), nil
}

// SteadyWithBaseline runs the steady workload; with Via "http" it runs it
// in process first, and the HTTP result's ratio is its p50 start latency
// over the in-process one.
func SteadyWithBaseline(ctx context.Context, o Options, cfg SteadyConfig, baseline bool) ([]Result, error) {
	var out []Result
	if o.via() == "http" && baseline {
		inproc := o
		inproc.Via = "inprocess"
		r, err := Steady(ctx, inproc, cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	r, err := Steady(ctx, o, cfg)
	if err != nil {
		return out, err
	}
	if len(out) > 0 && out[0].P50Ms > 0 {
		r.Baseline, r.BaselineValue, r.Ratio = "in-process p50 enqueue→start (ms)", out[0].P50Ms, r.P50Ms/out[0].P50Ms
	}
	return append(out, r), nil
}
