package main

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// harness starts (and BullMQ on it, when Node.js is here), the clients'
// workers, every workload (steady beside the
// CPU hog too), one round; then checks that every system's figures are in
// the output files and in the summary. It proves the harness works end to
// end; the figures themselves mean nothing at this size.
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
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out := t.TempDir()
	var progress strings.Builder
	c := defaultConfig()
	c.out, c.logw = out, &progress
	c.jobs, c.rounds, c.steadyRounds = 300, 1, 1
	c.rate, c.duration, c.warmup = 200, time.Second, 200*time.Millisecond
	c.rateLimit, c.rateDuration = 20, 2*time.Second
	c.faninJobs, c.batchSizes = 200, "200"
	c.backlogSizes, c.backlogMeasure, c.memoryJobs = "300,600", 200, 1000
	c.fairness = [4]int{200, 5, 4, 4}
	c.pgDSN = dsn
	if err := compare(ctx, c); err != nil {
		t.Fatalf("compare: %v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("progress:\n%s", progress.String())
	machine, err := os.ReadFile(filepath.Join(out, "machine.json"))
	if err != nil {
		t.Fatal(err)
	}

	want := map[string][]string{
		"drain":   {"rota-sqlite", "rota-sqlite raw-sql", "rota-sqlite-http http", "river-sqlite", "asynq"},
		"steady":  {"rota-sqlite", "rota-sqlite +hog", "river-sqlite", "river-sqlite +hog", "asynq-1ms", "asynq-1ms +hog"},
		"rate":    {"rota-sqlite", "rota-sqlite (rate 1000000/s)", "rota-sqlite-max-running", "rota-sqlite-max-running (max_running 100000)", "rota-sqlite-rate-limited"},
		"fanin":   {"rota-sqlite fanin-plain", "rota-sqlite"},
		"batch":   {"rota-sqlite drain 200", "rota-sqlite 200"},
		"clients": {"go-remote-sqlite"},
		"scale": {"rota-sqlite-backlog 300 queued", "rota-sqlite-backlog 600 queued", "rota-sqlite-memory",
			"rota-sqlite-http raw-sql", "rota-sqlite-http", "rota-sqlite-http http", "rota-sqlite-fairness rota", "rota-sqlite-fairness fifo"},
	}
	// The clients' workers whose tools are here; the others must be
	// skipped with a reason.
	for _, w := range []string{"python-threads-sqlite", "python-asyncio-sqlite", "typescript-sqlite", "bullmq"} {
		if strings.Contains(string(machine), `"`+w+`": "`) {
			t.Logf("%s was skipped: see machine.json", w)
			continue
		}
		if w == "bullmq" {
			want["drain"] = append(want["drain"], w)
			want["steady"] = append(want["steady"], w, w+" +hog")
		} else {
			want["clients"] = append(want["clients"], w)
		}
	}
	if dsn != "" {
		want["drain"] = append(want["drain"], "rota-pg", "rota-pg raw-sql", "river-pg-100", "river-pg-1000")
		want["steady"] = append(want["steady"], "rota-pg", "rota-pg +hog", "river-pg-pool20", "river-pg-pool20 +hog")
		want["rate"] = append(want["rate"], "rota-pg (rate 1000000/s)", "rota-pg-max-running (max_running 100000)", "rota-pg-rate-limited")
		want["fanin"] = append(want["fanin"], "rota-pg")
		want["batch"] = append(want["batch"], "rota-pg 200")
		want["clients"] = append(want["clients"], "go-remote-pg")
		want["scale"] = append(want["scale"], "rota-pg-backlog 600 queued", "rota-pg-memory", "rota-pg-http http", "rota-pg-fairness rota")
	} else {
		t.Log("ROTA_BENCH_POSTGRES is empty: the PostgreSQL systems were left out")
	}
	figure := map[string]string{"drain": "jobs_per_sec", "steady": "p50_ms", "rate": "jobs_per_sec", "fanin": "jobs_per_sec",
		"batch": "jobs_per_sec", "clients": "jobs_per_sec"}
	for _, w := range workloads {
		rs, err := readRecords(filepath.Join(out, w+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]record{}
		for _, r := range rs {
			if e := r.str("error"); e != "" {
				t.Errorf("%s: %s failed: %s", w, r.key(w), e)
			}
			got[r.key(w)] = r
			if _, ok := r.num("load1"); !ok {
				t.Errorf("%s: %s has no load average", w, r.key(w))
			}
		}
		for _, k := range want[w] {
			r, ok := got[k]
			if !ok {
				t.Errorf("%s: no result for %q (have %v)", w, k, slices.Collect(maps.Keys(got)))
				continue
			}
			if f := figure[w]; f != "" {
				if v, ok := r.num(f); !ok || v <= 0 {
					t.Errorf("%s: %s has %s = %v, want a positive figure", w, k, f, r[f])
				}
			}
			if n, _ := r.num("jobs"); w == "drain" && n != 300 {
				t.Errorf("%s: %s drained %v jobs, want 300", w, k, r["jobs"])
			}
			if h, _ := r["hog"].(bool); h {
				// On a loaded machine the hog gets its core's fair share,
				// not all of it: that it ran is what can be checked.
				if v, _ := r.num("hog_cpu_share"); v <= 0 {
					t.Errorf("%s: %s: the hog took %v of its core, want it running", w, k, r["hog_cpu_share"])
				}
			}
		}
	}

	s, err := summarize(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Machine: ", "Load average", "## Drain: 300 no-op jobs", "## Steady: 200 jobs/s", "load average",
		"+hog ÷ without, p50 by round", "rota ÷ it, p99 by round", "rota ÷ it, total CPU µs/job by round",
		"## Flow control", "## Fan-in", "## Batches", "## Clients' workers", "÷ Go remote worker, by round",
		"## Scale: backlog", "## Scale: memory", "## Scale: the drain over HTTP", "## Scale: fairness",
		"Checks (issue 30 keeps them)", "RSS ", "HTTP ÷ in process", "river-sqlite +hog"} {
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
		{[]string{"-n", "0"}, "-n, -rounds, -steady-rounds and -scale-rounds must be positive"},
		{[]string{"-rate-duration", "1s"}, "-rate-duration at least 2s"},
		{[]string{"-batch-sizes", "10,x"}, `-batch-sizes: "x" is not a positive count`},
		{[]string{"-backlog-sizes", "0"}, `-backlog-sizes: "0" is not a positive count`},
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

// TestSummaryRatios: the summary's "by round" columns set each run against
// the right one of the same round: rota's drain on the same store, rota's
// steady run with the hog or without as the row, the same system without
// the hog, the Go remote worker on the same store.
func TestSummaryRatios(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("machine.json", `{"cpu": "test", "cores": 2, "jobs": 100, "rate": 500, "duration": "15s"}`)
	write("drain.jsonl",
		`{"round":1,"label":"rota-sqlite","workload":"drain","store":"sqlite","via":"inprocess","jobs_per_sec":1000,"cpu_us_per_job":10}`,
		`{"round":1,"label":"rota-pg","workload":"drain","store":"postgres","via":"inprocess","jobs_per_sec":9999,"cpu_us_per_job":1}`,
		`{"round":1,"label":"river-sqlite","system":"river","workload":"drain","store":"sqlite","jobs_per_sec":100,"cpu_us_per_job":50}`,
		`{"round":2,"label":"rota-sqlite","workload":"drain","store":"sqlite","via":"inprocess","jobs_per_sec":2000,"cpu_us_per_job":10}`,
		`{"round":2,"label":"river-sqlite","system":"river","workload":"drain","store":"sqlite","jobs_per_sec":400,"cpu_us_per_job":25}`)
	write("steady.jsonl",
		`{"round":1,"label":"rota-sqlite","workload":"steady","store":"sqlite","via":"inprocess","hog":false,"p50_ms":2,"p99_ms":10}`,
		`{"round":1,"label":"rota-sqlite","workload":"steady","store":"sqlite","via":"inprocess","hog":true,"p50_ms":6,"p99_ms":40}`,
		`{"round":1,"label":"river-sqlite","system":"river","workload":"steady","store":"sqlite","hog":true,"p50_ms":3,"p99_ms":80}`,
		`{"round":1,"label":"river-sqlite","system":"river","workload":"steady","store":"sqlite","hog":false,"p50_ms":4,"p99_ms":20}`)
	write("clients.jsonl",
		`{"round":1,"label":"go-remote-sqlite","workload":"clients","system":"rota","worker":"go-remote","store":"sqlite","via":"http","jobs_per_sec":1000,"cpu_us_per_job":10}`,
		`{"round":1,"label":"go-remote-pg","workload":"clients","system":"rota","worker":"go-remote","store":"postgres","via":"http","jobs_per_sec":7,"cpu_us_per_job":7}`,
		`{"round":1,"label":"python-threads-sqlite","workload":"clients","system":"rota","worker":"python-threads","store":"sqlite","via":"http","jobs_per_sec":250,"cpu_us_per_job":40}`)
	s, err := summarize(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		// rota ÷ River: 10 and 5 by round; total CPU 0.2 and 0.4.
		"| river-sqlite | river | sqlite | 250 (100–400, n=2) | 7.50 (5.00–10.00, n=2) | 37.5 (25.0–50.0, n=2) | 0.30 (0.20–0.40, n=2) |",
		"| rota-sqlite +hog | rota | sqlite | 6.00 | 40.00 | – | – | 3.00 | 4.00 |",
		"| river-sqlite | river | sqlite | 4.00 | 20.00 | 0.50 | 0.50 | – | – |",
		"| river-sqlite +hog | river | sqlite | 3.00 | 80.00 | 2.00 | 0.50 | 0.75 | 4.00 |",
		"| python-threads-sqlite | Python client, Worker (threads) | sqlite | 250 | 0.25 | 40.0 | 4.00 |",
	} {
		if !strings.Contains(s, row) {
			t.Errorf("summary lacks the row\n%s\nin:\n%s", row, s)
		}
	}
}
