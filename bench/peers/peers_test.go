package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets compare start this test binary as the peers' commands, as
// it starts the peers program itself outside tests.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestCompareSmoke runs the whole harness at a tiny size: rota built from
// this repository, River on PostgreSQL and SQLite, Asynq on a Redis the
// harness starts, both workloads, one round; then checks that every
// system's figures are in the output files and in the summary. It proves
// the harness works end to end; the figures themselves mean nothing at this
// size.
func TestCompareSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the harness's smoke test builds rota and starts Redis")
	}
	dsn := os.Getenv("ROTA_BENCH_POSTGRES")
	if dsn == "" && os.Getenv("ROTA_REQUIRE_POSTGRES") != "" {
		t.Fatal("ROTA_REQUIRE_POSTGRES is set but ROTA_BENCH_POSTGRES names no database for the PostgreSQL systems")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("ROTA_REQUIRE_REDIS") != "" {
			t.Fatal("ROTA_REQUIRE_REDIS is set but redis-server is not installed (scripts/setup.sh installs it)")
		}
		t.Skip("redis-server is not installed (Debian: apt-get install redis-server; scripts/setup.sh installs it): Asynq cannot run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := t.TempDir()
	var progress strings.Builder
	c := compareConfig{
		out: out, workloads: []string{"drain", "steady"},
		jobs: 300, rounds: 1, steadyRounds: 1,
		rate: 200, duration: time.Second, warmup: 200 * time.Millisecond,
		pgDSN: dsn, redisServer: "redis-server", logw: &progress,
	}
	if err := compare(ctx, c); err != nil {
		t.Fatalf("compare: %v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("progress:\n%s", progress.String())

	wantDrain := []string{"rota-sqlite", "rota-sqlite raw-sql", "rota-sqlite-http http", "river-sqlite", "asynq"}
	wantSteady := []string{"rota-sqlite", "river-sqlite", "asynq-1ms"}
	if dsn != "" {
		wantDrain = append(wantDrain, "rota-pg", "rota-pg raw-sql", "river-pg-100", "river-pg-1000")
		wantSteady = append(wantSteady, "rota-pg", "river-pg-pool20")
	} else {
		t.Log("ROTA_BENCH_POSTGRES is empty: the PostgreSQL systems were left out")
	}
	check := func(file string, want []string, field string) {
		t.Helper()
		rs, err := readRecords(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]record{}
		for _, r := range rs {
			if e := r.str("error"); e != "" {
				t.Errorf("%s: %s failed: %s", file, r.key(), e)
			}
			got[r.key()] = r
		}
		for _, k := range want {
			r, ok := got[k]
			if !ok {
				t.Errorf("%s: no result for %s (have %d lines)", file, k, len(rs))
				continue
			}
			if v, ok := r.num(field); !ok || v <= 0 {
				t.Errorf("%s: %s has %s = %v, want a positive figure", file, k, field, r[field])
			}
			if n, _ := r.num("jobs"); file == "drain.jsonl" && n != 300 {
				t.Errorf("%s: %s drained %v jobs, want 300", file, k, r["jobs"])
			}
		}
	}
	check("drain.jsonl", wantDrain, "jobs_per_sec")
	check("steady.jsonl", wantSteady, "p50_ms")

	s, err := summarize(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{"Machine: ", "Load before each round", "## Drain: 300 no-op jobs", "## Steady: 200 jobs/s", "load average"}, wantDrain...) {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "Failed:") {
		t.Errorf("summary reports a failed run:\n%s", s)
	}
	t.Logf("summary:\n%s", s)
}

// TestCompareBadInput: a bad flag is refused naming it, before anything runs.
func TestCompareBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-workloads", "burst"}, `-workloads: unknown workload "burst"`},
		{[]string{"-systems", "sidekiq"}, `-systems: unknown label "sidekiq"`},
		{[]string{"-n", "0"}, "-n, -rounds and -steady-rounds must be positive"},
		{[]string{"-rate", "-1"}, "-rate and -duration must be positive"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		err := compareMain(append(tc.args, "-out", out, "-rota", "/bin/false"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("compare %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("compare %v: created %s despite the bad input", tc.args, out)
		}
	}
}

// TestSummarizeNotACompare: summarize names a directory that holds no
// compare's output.
func TestSummarizeNotACompare(t *testing.T) {
	dir := t.TempDir()
	if _, err := summarize(dir); err == nil || !strings.Contains(err.Error(), "is not a compare's output") {
		t.Errorf("summarize of an empty directory: %v", err)
	}
}

func TestCommas(t *testing.T) {
	for in, want := range map[string]string{"1": "1", "1234": "1,234", "1234567.89": "1,234,567.89", "-12345": "-12,345", "999.5": "999.5"} {
		if got := commas(in); got != want {
			t.Errorf("commas(%q) = %q, want %q", in, got, want)
		}
	}
}
