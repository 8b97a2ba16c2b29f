package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// pgOptions runs workloads on the PostgreSQL database $ROTA_BENCH_POSTGRES
// names (a throwaway one: runs leave their jobs behind), or skips.
func pgOptions(tb testing.TB) Options {
	dsn := os.Getenv("ROTA_BENCH_POSTGRES")
	if dsn == "" {
		tb.Skip("ROTA_BENCH_POSTGRES is not set")
	}
	return Options{Store: "postgres", DSN: dsn, OpenPostgres: func(ctx context.Context, dsn string) (store.Store, error) {
		return postgres.Open(ctx, dsn, postgres.Config{Logger: quietLogger()})
	}}
}

func TestWorkloadsPostgres(t *testing.T) {
	o := pgOptions(t)
	ctx := context.Background()
	for _, via := range []string{"inprocess", "http"} {
		o.Via = via
		rs, err := DrainWithBaselines(ctx, o, DrainConfig{Jobs: 2000, Concurrency: 64, Baseline: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.JobsPerSec <= 0 || r.Version == "" && r.Via != "raw-sql" {
				t.Errorf("drain: %+v", r)
			}
		}
		if _, err := Steady(ctx, o, SteadyConfig{Rate: 200, Duration: 500 * 1e6, Concurrency: 8}); err != nil {
			t.Fatal(err)
		}
		if _, err := Backlog(ctx, o, BacklogConfig{Sizes: []int{300}, Measure: 200, Batch: 20}); err != nil {
			t.Fatal(err)
		}
		if bs, err := Batch(ctx, o, BatchConfig{Sizes: []int{500}, Concurrency: 32}); err != nil || len(bs) != 2 || bs[1].Ratio <= 0 {
			t.Fatalf("batch: %+v, %v", bs, err)
		}
	}
	o.Via = "inprocess"
	rs, err := DrainWithBaselines(ctx, o, DrainConfig{Jobs: 2000, Concurrency: 64, Baseline: true, Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Nodes != 1 || rs[1].Nodes != 2 || rs[1].Ratio <= 0 {
		t.Errorf("drain on two nodes: %+v", rs)
	}
	rc, err := Recurring(ctx, o, RecurringConfig{Jobs: 50, Interval: time.Second, Duration: 2 * time.Second, Nodes: 2, Concurrency: 16})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Jobs+rc.MissedSlots != 100 || rc.Duplicates != 0 || rc.Jobs == 0 || rc.Nodes != 2 {
		t.Errorf("recurring on two nodes: %+v", rc)
	}
}

// BenchmarkDrainPostgres is BenchmarkDrain on PostgreSQL.
func BenchmarkDrainPostgres(b *testing.B) {
	o := pgOptions(b)
	rs, err := DrainWithBaselines(context.Background(), o, DrainConfig{Jobs: max(b.N, 1000), Concurrency: DefaultDrain.Concurrency, Baseline: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range rs {
		b.Logf("%s %s: %.0f jobs/s, %.1f CPU µs/job (this process), ratio %.2f; %s; %s", r.Workload, r.Via, r.JobsPerSec, r.CPUUsPerJob, r.Ratio, r.Version, r.Fsync)
	}
	b.ReportMetric(rs[len(rs)-1].JobsPerSec, "jobs/s")
	b.ReportMetric(0, "ns/op")
}

// TestReportPostgres prints the drain (with its baselines, in process and
// over HTTP) and steady results on PostgreSQL as JSON lines, for
// docs/benchmarks.md, when ROTA_BENCH_REPORT is set too (the CLI's
// --store postgres does the same once the PostgreSQL store is in the
// binary).
func TestReportPostgres(t *testing.T) {
	o := pgOptions(t)
	if os.Getenv("ROTA_BENCH_REPORT") == "" {
		t.Skip("ROTA_BENCH_REPORT is not set")
	}
	ctx := context.Background()
	o.Via = "http"
	rs, err := DrainWithBaselines(ctx, o, DefaultDrain)
	if err != nil {
		t.Fatal(err)
	}
	s, err := SteadyWithBaseline(ctx, o, SteadyConfig{Rate: 500, Duration: 10 * time.Second, Concurrency: 32, Warmup: time.Second}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(rs, s...) {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
}
