package main

// `peers compare`: rota and its peers on the same workloads, interleaved
// (A B C … A B C …) so that each round sees the same machine, several
// rounds, one JSON line per run, the machine and its load recorded, and a
// table of medians at the end.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// childEnv marks a process started by compare to run one peer command;
// the test binary, which is its own executable in tests, dispatches on it.
const childEnv = "ROTA_PEERS_CHILD"

// compareConfig is what one compare runs.
type compareConfig struct {
	out          string
	workloads    []string
	systems      []string // labels to run; empty: all
	jobs         int
	rounds       int
	steadyRounds int
	scaleRounds  int
	rate         float64
	duration     time.Duration
	warmup       time.Duration
	// hog runs a busy loop on one core beside each steady run, as well as
	// the run without it, interleaved.
	hog               bool
	rateLimit         int           // rate: the set rate of rota bench rate
	rateDuration      time.Duration // rate: how long rota bench rate measures
	faninJobs         int
	batchSizes        string // comma-separated
	clientConcurrency int
	python, node      string
	backlogSizes      string // comma-separated, k and M suffixes
	backlogMeasure    int
	memoryJobs        int
	fairness          [4]int // big, small groups, jobs of each small group, workers
	pgDSN             string
	rotaBin           string
	redisServer       string
	logw              io.Writer // progress, one line per run
}

// defaultConfig is compare's defaults, the flags' defaults.
func defaultConfig() compareConfig {
	return compareConfig{
		workloads: workloads, jobs: 20_000, rounds: 5, steadyRounds: 5, scaleRounds: 1,
		rate: 500, duration: 15 * time.Second, warmup: time.Second, hog: true,
		rateLimit: 50, rateDuration: 10 * time.Second, faninJobs: 10_000, batchSizes: "10000,100000",
		clientConcurrency: 64, python: "python3", node: "node",
		backlogSizes: "10k,100k,1M", backlogMeasure: 20_000, memoryJobs: 1_000_000,
		fairness: [4]int{20_000, 99, 20, 8}, redisServer: "redis-server", logw: os.Stderr,
	}
}

func compareMain(args []string) error {
	c := defaultConfig()
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.StringVar(&c.out, "out", "", "directory for the results (default: a new one named peers-YYYYMMDD-HHMMSS in the current directory)")
	wl := fs.String("workloads", "all", "comma-separated, of "+strings.Join(workloads, ", ")+"; or all")
	sys := fs.String("systems", "", "only these labels, comma-separated (default: all; see README.md)")
	fs.IntVar(&c.jobs, "n", c.jobs, "drain, rate, clients, scale's HTTP drain: no-op jobs each system drains")
	fs.IntVar(&c.rounds, "rounds", c.rounds, "drain, rate, fanin, batch, clients: rounds")
	fs.IntVar(&c.steadyRounds, "steady-rounds", c.steadyRounds, "steady: rounds")
	fs.IntVar(&c.scaleRounds, "scale-rounds", c.scaleRounds, "scale: rounds")
	fs.Float64Var(&c.rate, "rate", c.rate, "steady: jobs added per second, one at a time")
	fs.DurationVar(&c.duration, "duration", c.duration, "steady: how long the measured arrivals last")
	fs.DurationVar(&c.warmup, "warmup", c.warmup, "steady: arrivals before the measured ones, not counted")
	fs.BoolVar(&c.hog, "hog", c.hog, "steady: run each system also beside a busy loop pinned to one core, interleaved with the run without it (-hog=false: without only)")
	fs.IntVar(&c.rateLimit, "rate-limit", c.rateLimit, "rate: the set rate (jobs/s) of the rate that binds (rota bench rate)")
	fs.DurationVar(&c.rateDuration, "rate-duration", c.rateDuration, "rate: how long the rate that binds is measured (at least 2s)")
	fs.IntVar(&c.faninJobs, "fanin-jobs", c.faninJobs, "fanin: jobs after the root and before the sink")
	fs.StringVar(&c.batchSizes, "batch-sizes", c.batchSizes, "batch: batch sizes, comma-separated, each against a drain of as many")
	fs.IntVar(&c.clientConcurrency, "client-concurrency", c.clientConcurrency, "clients: each worker's slots")
	fs.StringVar(&c.python, "python", c.python, "clients: the Python interpreter of the Python worker")
	fs.StringVar(&c.node, "node", c.node, "clients and bullmq: the Node.js of the TypeScript worker and of BullMQ")
	fs.StringVar(&c.backlogSizes, "backlog-sizes", c.backlogSizes, "scale: backlog sizes, comma-separated (k, M suffixes; add 10M for the full check: several GB and many minutes)")
	fs.IntVar(&c.backlogMeasure, "backlog-measure", c.backlogMeasure, "scale: jobs accepted and finished at each backlog size")
	fs.IntVar(&c.memoryJobs, "memory-jobs", c.memoryJobs, "scale: jobs queued while rota serve's memory is read")
	fs.IntVar(&c.fairness[0], "fairness-big", c.fairness[0], "scale: the flooding group's jobs in the fairness run")
	fs.StringVar(&c.pgDSN, "pg", os.Getenv("ROTA_BENCH_POSTGRES"), "PostgreSQL database for the benchmark alone (default $ROTA_BENCH_POSTGRES): its schema rota is dropped before each rota run and River's tables emptied before each River run; empty: the PostgreSQL systems are left out")
	fs.StringVar(&c.rotaBin, "rota", "", "a built rota command (default: built from the repository around this directory)")
	fs.StringVar(&c.redisServer, "redis-server", c.redisServer, "the redis-server program the Redis of Asynq and BullMQ is started from (Debian: apt-get install redis-server)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.workloads = nil
	for _, w := range strings.Split(*wl, ",") {
		if w = strings.TrimSpace(w); w == "all" {
			c.workloads = append(c.workloads, workloads...)
		} else if w != "" {
			c.workloads = append(c.workloads, w)
		}
	}
	for _, s := range strings.Split(*sys, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.systems = append(c.systems, s)
		}
	}
	if c.out == "" {
		c.out = "peers-" + time.Now().UTC().Format("20060102-150405")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := compare(ctx, c); err != nil {
		return err
	}
	s, err := summarize(c.out)
	if err != nil {
		return err
	}
	fmt.Print(s)
	return nil
}

// check says what is wrong with c, naming the flag.
func (c compareConfig) check() error {
	if len(c.workloads) == 0 {
		return errors.New("-workloads: give one or more of " + strings.Join(workloads, ", ") + ", or all")
	}
	for _, w := range c.workloads {
		if !slices.Contains(workloads, w) {
			return fmt.Errorf("-workloads: unknown workload %q (%s, or all)", w, strings.Join(workloads, ", "))
		}
	}
	for _, s := range c.systems {
		if _, ok := lookup(s); !ok {
			return fmt.Errorf("-systems: unknown label %q (%s)", s, strings.Join(allLabels(), ", "))
		}
	}
	if c.jobs <= 0 || c.rounds <= 0 || c.steadyRounds <= 0 || c.scaleRounds <= 0 {
		return errors.New("-n, -rounds, -steady-rounds and -scale-rounds must be positive")
	}
	if c.rate <= 0 || c.duration <= 0 || c.warmup < 0 {
		return errors.New("-rate and -duration must be positive, -warmup not negative")
	}
	if c.rateLimit <= 0 || c.rateDuration < 2*time.Second {
		return errors.New("-rate-limit must be positive and -rate-duration at least 2s")
	}
	if c.faninJobs <= 0 || c.clientConcurrency <= 0 || c.backlogMeasure <= 0 || c.memoryJobs <= 0 {
		return errors.New("-fanin-jobs, -client-concurrency, -backlog-measure and -memory-jobs must be positive")
	}
	for _, f := range c.fairness {
		if f <= 0 {
			return errors.New("-fairness-big must be positive")
		}
	}
	for _, l := range []struct{ flag, list string }{{"-batch-sizes", c.batchSizes}, {"-backlog-sizes", c.backlogSizes}} {
		for _, v := range strings.Split(l.list, ",") {
			v = strings.TrimSpace(v)
			if n, err := strconv.Atoi(strings.TrimRight(v, "kKmM")); err != nil || n <= 0 {
				return fmt.Errorf("%s: %q is not a positive count", l.flag, v)
			}
		}
	}
	return nil
}

// wants says whether label runs in this compare: named by -systems (or
// no -systems), its database given, its tools found.
func (h *harness) wants(label string) bool {
	c := h.c
	if len(c.systems) > 0 && !slices.Contains(c.systems, label) {
		return false
	}
	s, _ := lookup(label)
	if s.store == "postgres" && c.pgDSN == "" {
		return false
	}
	return h.skipped[label] == ""
}

// compare runs c's rounds, writing a JSON-lines file per workload
// (drain.jsonl, steady.jsonl, …), load.log and machine.json into c.out.
// It returns an error when a run failed (its error is in the JSON lines
// too).
func compare(ctx context.Context, c compareConfig) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "rota-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	h := &harness{c: c, work: work, self: self, skipped: map[string]string{}}
	machine := describeMachine()
	machine["started"] = time.Now().UTC().Format(time.RFC3339)
	machine["workloads"] = c.workloads
	machine["jobs"], machine["rounds"], machine["steady_rounds"], machine["scale_rounds"] = c.jobs, c.rounds, c.steadyRounds, c.scaleRounds
	machine["rate"], machine["duration"], machine["warmup"], machine["hog"] = c.rate, c.duration.String(), c.warmup.String(), c.hog
	machine["rate_limit"], machine["rate_duration"] = c.rateLimit, c.rateDuration.String()
	machine["fanin_jobs"], machine["batch_sizes"], machine["client_concurrency"] = c.faninJobs, c.batchSizes, c.clientConcurrency
	machine["backlog_sizes"], machine["backlog_measure"], machine["memory_jobs"] = c.backlogSizes, c.backlogMeasure, c.memoryJobs
	machine["fairness"] = map[string]int{"big": c.fairness[0], "small_groups": c.fairness[1], "small_jobs": c.fairness[2], "workers": c.fairness[3]}
	wanted := func(w string) bool { return slices.Contains(c.workloads, w) }

	// Build or check rota (and, for the clients, the Go remote worker).
	root, rootErr := repoRoot()
	h.repo = root
	if c.rotaBin == "" {
		if rootErr != nil {
			return fmt.Errorf("building rota: %w (or give -rota)", rootErr)
		}
		h.rota = filepath.Join(work, "rota")
		fmt.Fprintf(c.logw, "building rota from %s\n", root)
		if err := goBuild(ctx, root, h.rota, "./cmd/rota"); err != nil {
			return fmt.Errorf("building rota: %w", err)
		}
		if rev, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output(); err == nil {
			machine["rota_commit"] = strings.TrimSpace(string(rev))
		}
	} else if h.rota, err = filepath.Abs(c.rotaBin); err != nil {
		return err
	} else {
		machine["rota_bin"] = h.rota
	}
	if v, err := exec.Command(h.rota, "version").Output(); err == nil {
		machine["rota_version"] = strings.TrimSpace(string(v))
	}
	if wanted("clients") {
		versions := h.checkClients(ctx, rootErr)
		machine["client_versions"] = versions
		if len(h.skipped) > 0 {
			machine["skipped"] = h.skipped
		}
	}

	if (wanted("drain") || wanted("steady")) && h.wants("bullmq") {
		if v := h.checkBullMQ(ctx, rootErr); v != "" {
			machine["bullmq_node"] = v
		}
		if h.skipped["bullmq"] != "" {
			machine["skipped"] = h.skipped
		}
	}

	// Redis for Asynq and BullMQ, on a loopback port of its own.
	if (wanted("drain") && (h.wants("asynq") || h.wants("bullmq"))) || (wanted("steady") && (h.wants("asynq-1ms") || h.wants("bullmq"))) {
		addr, stopRedis, err := startRedis(ctx, c.redisServer, filepath.Join(work, "redis"))
		if err != nil {
			return err
		}
		defer stopRedis()
		h.redis = addr
	}
	if c.pgDSN != "" {
		v, err := pgVersion(ctx, c.pgDSN)
		if err != nil {
			return fmt.Errorf("-pg: %w", err)
		}
		machine["postgres_version"] = v
	} else {
		machine["postgres"] = "not given (-pg or $ROTA_BENCH_POSTGRES): the PostgreSQL systems were left out"
	}
	if err := writeJSON(filepath.Join(c.out, "machine.json"), machine); err != nil {
		return err
	}

	for _, w := range workloads { // in this order, whatever -workloads's
		if !wanted(w) {
			continue
		}
		rounds := c.rounds
		switch w {
		case "steady":
			rounds = c.steadyRounds
		case "scale":
			rounds = c.scaleRounds
		}
		for r := 1; r <= rounds; r++ {
			if err := h.logLoad(w, r); err != nil {
				return err
			}
			for _, s := range systems[w] {
				if !h.wants(s.label) {
					continue
				}
				// Beside a hog and without, the order turning each round,
				// so that neither always runs first.
				hogs := []bool{false}
				if w == "steady" && c.hog {
					hogs = []bool{r%2 == 0, r%2 == 1}
				}
				for _, hog := range hogs {
					if err := ctx.Err(); err != nil {
						return err
					}
					if err := h.run(ctx, w, r, s.label, hog); err != nil {
						return err
					}
				}
			}
		}
	}
	machine["ended"] = time.Now().UTC().Format(time.RFC3339)
	if err := writeJSON(filepath.Join(c.out, "machine.json"), machine); err != nil {
		return err
	}
	if h.failed > 0 {
		return fmt.Errorf("%d runs failed (their errors are in %s)", h.failed, c.out)
	}
	return nil
}

// goBuild builds pkg of the module at root into out.
func goBuild(ctx context.Context, root, out, pkg string) error {
	b := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	b.Dir, b.Env = root, append(os.Environ(), "CGO_ENABLED=1")
	if msg, err := b.CombinedOutput(); err != nil {
		return fmt.Errorf("%w\n%s", err, msg)
	}
	return nil
}

// harness holds what the runs of one compare share.
type harness struct {
	c       compareConfig
	work    string // temporary directory: SQLite files, Redis's files, rota
	self    string // this program, for the peers' commands
	repo    string // rota's repository, for the clients' workers
	rota    string
	godrain string
	bullmq  string // bullmq/bullmq.mjs, its packages installed
	redis   string
	// skipped holds the labels left out for a missing tool, and why.
	skipped map[string]string
	failed  int
}

// run runs one label once (beside a CPU hog when hog is set) and appends
// its JSON lines, tagged with the round, the label, the load average at
// its start and the hog, to the workload's file; a failed run is appended
// as a line with its error.
func (h *harness) run(ctx context.Context, workload string, rnd int, label string, hog bool) error {
	if s, _ := lookup(label); s.store == "postgres" && isRota(label) {
		// A fresh schema each run, as a fresh database would be: a table
		// bloated by the rounds before would slow rota, not the peers.
		if err := dropSchema(ctx, h.c.pgDSN, "rota"); err != nil {
			return fmt.Errorf("-pg: %w", err)
		}
	}
	prog, args := h.command(workload, label)
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	load1 := loadAverage()
	var stopHog func() (float64, error)
	if hog {
		var err error
		if stopHog, err = startHog(h.self); err != nil {
			return fmt.Errorf("starting the CPU hog: %w", err)
		}
	}
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0).Seconds()
	hogShare := 0.0
	if stopHog != nil {
		var herr error
		if hogShare, herr = stopHog(); herr != nil && err == nil {
			err = fmt.Errorf("the CPU hog: %w", herr)
		}
	}
	var lines []map[string]any
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var o map[string]any
		if json.Unmarshal(sc.Bytes(), &o) == nil {
			lines = append(lines, o)
		}
	}
	if err == nil && len(lines) == 0 {
		err = errors.New("no JSON line on stdout")
	}
	f, ferr := os.OpenFile(filepath.Join(h.c.out, workload+".jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if ferr != nil {
		return ferr
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	name := label
	if hog {
		name += " +hog"
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h.failed++
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 600 {
			msg = "…" + msg[len(msg)-600:]
		}
		fmt.Fprintf(h.c.logw, "  %s %s: FAILED: %v: %s\n", workload, name, err, msg)
		return enc.Encode(map[string]any{"round": rnd, "label": label, "hog": hog, "error": fmt.Sprintf("%v: %s", err, msg)})
	}
	for _, o := range lines {
		o["round"], o["label"], o["wall_s"], o["load1"] = rnd, label, round(wall, 1), load1
		if workload == "steady" {
			o["hog"] = hog
			if hog {
				o["hog_cpu_share"] = round(hogShare, 2)
			}
		}
		if err := enc.Encode(o); err != nil {
			return err
		}
		r := record(o)
		fmt.Fprintf(h.c.logw, "  %s [%s]: %s\n", name, r.key(workload), r.brief())
	}
	return nil
}

// loadAverage is the machine's load average over the last minute.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// logLoad appends the load average and CPU pressure before a round to
// load.log, and says it on the progress writer.
func (h *harness) logLoad(workload string, round int) error {
	line := fmt.Sprintf("%s %s round %d: %s\n", time.Now().UTC().Format("15:04:05"), workload, round, loadNow())
	fmt.Fprint(h.c.logw, line)
	f, err := os.OpenFile(filepath.Join(h.c.out, "load.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(line)
	return err
}

// loadNow is the load average and the CPU pressure ("some": the share of
// time some runnable task waited for a CPU) over the last 10 and 60 s.
func loadNow() string {
	s := "load average"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			s += " " + strings.Join(f[:3], " ")
		}
	}
	if b, err := os.ReadFile("/proc/pressure/cpu"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "some "); ok {
				f := strings.Fields(rest)
				if len(f) >= 2 {
					s += ", cpu pressure " + f[0] + " " + f[1]
				}
			}
		}
	}
	return s
}

// describeMachine records what the figures depend on.
func describeMachine() map[string]any {
	m := map[string]any{"cores": runtime.NumCPU(), "go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				m["memory_gib"] = round(float64(kb)/(1<<20), 1)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m["kernel"] = strings.TrimSpace(string(b))
	}
	if v, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		m["go"] = strings.TrimSpace(string(v))
	}
	m["load_before"] = loadNow()
	return m
}

// repoRoot finds rota's repository from the current directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/rotajobs/rota\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no rota repository (go.mod of github.com/rotajobs/rota) above the current directory")
		}
		dir = parent
	}
}

// startRedis starts redis-server on a free loopback port with its files in
// dir, persisting as a production Asynq would (AOF, fsync every second, no
// snapshots), and returns its address and a function that stops it.
func startRedis(ctx context.Context, program, dir string) (string, func(), error) {
	path, err := exec.LookPath(program)
	if err != nil {
		return "", nil, fmt.Errorf("the Asynq runs need Redis: %s not found (Debian: apt-get install redis-server; scripts/setup.sh installs it), or leave Asynq out with -systems: %w", program, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
		"--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log"))
	// Redis dies with the harness, however the harness ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting %s: %w", path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	for deadline := time.Now().Add(15 * time.Second); ; {
		if err := rdb.Ping(ctx).Err(); err == nil {
			return addr, stop, nil
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			return "", nil, fmt.Errorf("%s exited at start (%v): %s", path, err, strings.TrimSpace(string(log)))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("%s did not answer on %s within 15 s", path, addr)
		}
	}
}

func pgVersion(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var v string
	err = conn.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v, err
}

func dropSchema(ctx context.Context, dsn, schema string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
