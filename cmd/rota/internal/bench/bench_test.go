package bench

import (
	"context"
	"testing"
	"time"
)

// The workloads run end to end at small sizes; the figures are not checked
// (performance is never asserted in tests).
func TestWorkloads(t *testing.T) {
	ctx := context.Background()
	for _, via := range []string{"inprocess", "http"} {
		o := Options{Via: via, Dir: t.TempDir()}
		t.Run(via, func(t *testing.T) {
			rs, err := DrainWithBaselines(ctx, o, DrainConfig{Jobs: 2000, Concurrency: 64, Baseline: true})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"inprocess": 2, "http": 3}[via]; len(rs) != want {
				t.Fatalf("drain: %d results, want %d", len(rs), want)
			}
			for _, r := range rs {
				if r.JobsPerSec <= 0 || r.Jobs != 2000 {
					t.Errorf("drain: %+v", r)
				}
			}
			if rs[1].Ratio <= 0 {
				t.Errorf("drain: no ratio to the raw SQL ceiling: %+v", rs[1])
			}
			s, err := Steady(ctx, o, SteadyConfig{Rate: 200, Duration: time.Second, Concurrency: 8})
			if err != nil {
				t.Fatal(err)
			}
			if s.Jobs != 200 || s.P50Ms <= 0 || s.FinishP50Ms < s.P50Ms || s.Note != "" {
				t.Errorf("steady: %+v", s)
			}
			b, err := Backlog(ctx, o, BacklogConfig{Sizes: []int{300, 600}, Measure: 200, Batch: 20})
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != 2 || b[1].Ratio <= 0 || b[0].MicrosPerJob <= 0 {
				t.Errorf("backlog: %+v", b)
			}
			f, err := Fairness(ctx, o, FairnessConfig{Big: 200, Small: 5, SmallJobs: 4, Workers: 4})
			if err != nil {
				t.Fatal(err)
			}
			if len(f) != 2 || f[0].Jobs != 220 {
				t.Errorf("fairness: %+v", f)
			}
			fo, err := Fanout(ctx, o, FanoutConfig{Children: 1500, Concurrency: 32})
			if err != nil {
				t.Fatal(err)
			}
			if fo.Jobs != 1500 || fo.JobsPerSec <= 0 {
				t.Errorf("fanout: %+v", fo)
			}
			bs, err := Batch(ctx, o, BatchConfig{Sizes: []int{300, 600}, Concurrency: 32})
			if err != nil {
				t.Fatal(err)
			}
			if len(bs) != 4 || bs[1].Workload != "batch" || bs[3].Jobs != 600 || bs[3].Ratio <= 0 {
				t.Errorf("batch: %+v", bs)
			}
			rc, err := Recurring(ctx, o, RecurringConfig{Jobs: 50, Interval: time.Second, Duration: 2 * time.Second, Nodes: 1, Concurrency: 16})
			if err != nil {
				t.Fatal(err)
			}
			// Every slot runs once; on a loaded machine a slot may run
			// late, never twice.
			if rc.Jobs+rc.MissedSlots != 100 || rc.Duplicates != 0 || rc.Jobs == 0 {
				t.Errorf("recurring: %+v", rc)
			}
			if _, err := Recurring(ctx, o, RecurringConfig{Jobs: 1, Interval: time.Second, Duration: time.Second, Nodes: 2, Concurrency: 1}); err == nil {
				t.Error("recurring: two nodes on SQLite were accepted")
			}
		})
	}
	m, err := Memory(ctx, Options{Dir: t.TempDir()}, MemoryConfig{Jobs: 1000, Work: 100})
	if err != nil {
		t.Fatal(err)
	}
	if m.PeakRSSMB <= 0 || m.Method == "" {
		t.Errorf("memory: %+v", m)
	}
}

// BenchmarkDrain drains b.N no-op jobs through the worker runtime in
// process, the path `rota bench drain` measures; one op is one job. Use
// it for profiles: go test -run X -bench Drain -cpuprofile cpu.out.
func BenchmarkDrain(b *testing.B) {
	benchDrain(b, "inprocess")
}

// BenchmarkDrainHTTP is BenchmarkDrain with the worker on the remote
// client, through a loopback HTTP server.
func BenchmarkDrainHTTP(b *testing.B) {
	benchDrain(b, "http")
}

func benchDrain(b *testing.B, via string) {
	ctx := context.Background()
	n := max(b.N, 1000)
	r, err := Drain(ctx, Options{Via: via, Dir: b.TempDir()}, DrainConfig{Jobs: n, Concurrency: DefaultDrain.Concurrency})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.JobsPerSec, "jobs/s")
	b.ReportMetric(0, "ns/op") // the fill is not timed by the workload, but is by b
}

// BenchmarkSteady adds jobs at 500/s for b.N jobs and reports the
// enqueue→start percentiles.
func BenchmarkSteady(b *testing.B) {
	ctx := context.Background()
	d := time.Duration(max(b.N, 500)) * time.Second / 500
	r, err := Steady(ctx, Options{Dir: b.TempDir()}, SteadyConfig{Rate: 500, Duration: d, Concurrency: DefaultSteady.Concurrency})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.P50Ms, "p50-ms")
	b.ReportMetric(r.P99Ms, "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// TestFlowControlBaselines: a drain with a rate or a bound that does not
// bind runs the same drain without them first, in the same run, and its
// ratio is against that; the rate workload's ratio is the achieved rate
// over the set one.
func TestFlowControlBaselines(t *testing.T) {
	ctx := context.Background()
	o := Options{Dir: t.TempDir()}
	for _, cfg := range []DrainConfig{
		{Jobs: 1000, Concurrency: 64, Baseline: true, Rate: 1_000_000},
		{Jobs: 1000, Concurrency: 64, Baseline: true, MaxRunning: 100_000},
	} {
		rs, err := DrainWithBaselines(ctx, o, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 || rs[0].FlowControl != "" || rs[1].FlowControl == "" {
			t.Fatalf("drain %+v: want the plain drain, then the flow-controlled one: %+v", cfg, rs)
		}
		if want := rs[1].JobsPerSec / rs[0].JobsPerSec; rs[1].Ratio != want || rs[1].BaselineValue != rs[0].JobsPerSec {
			t.Errorf("drain %+v: ratio %v against %v, want %v against the plain drain's %v", cfg, rs[1].Ratio, rs[1].BaselineValue, want, rs[0].JobsPerSec)
		}
	}
	r, err := Rate(ctx, o, RateConfig{Rate: 20, Duration: 2 * time.Second, Nodes: 1, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ratio <= 0 || r.Ratio != r.JobsPerSec/20 {
		t.Errorf("rate: ratio %v, want achieved %v over the set 20/s", r.Ratio, r.JobsPerSec)
	}
}
