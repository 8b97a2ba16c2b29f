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
	rate         float64
	duration     time.Duration
	warmup       time.Duration
	pgDSN        string
	rotaBin      string
	redisServer  string
	logw         io.Writer // progress, one line per run
}

// The labels compare knows, in the order they run within a round.
var (
	drainLabels  = []string{"rota-sqlite", "rota-sqlite-http", "river-sqlite", "asynq", "rota-pg", "river-pg-100", "river-pg-1000"}
	steadyLabels = []string{"rota-sqlite", "river-sqlite", "asynq-1ms", "rota-pg", "river-pg-pool20"}
)

func compareMain(args []string) error {
	c := compareConfig{logw: os.Stderr}
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.StringVar(&c.out, "out", "", "directory for the results (default: a new one named peers-YYYYMMDD-HHMMSS in the current directory)")
	workloads := fs.String("workloads", "drain,steady", "drain, steady or both")
	systems := fs.String("systems", "", "only these labels, comma-separated (default: all; see README.md)")
	fs.IntVar(&c.jobs, "n", 20_000, "drain: no-op jobs each system drains")
	fs.IntVar(&c.rounds, "rounds", 3, "drain: rounds")
	fs.IntVar(&c.steadyRounds, "steady-rounds", 3, "steady: rounds")
	fs.Float64Var(&c.rate, "rate", 500, "steady: jobs added per second, one at a time")
	fs.DurationVar(&c.duration, "duration", 15*time.Second, "steady: how long the measured arrivals last")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "steady: arrivals before the measured ones, not counted")
	fs.StringVar(&c.pgDSN, "pg", os.Getenv("ROTA_BENCH_POSTGRES"), "PostgreSQL database for the benchmark alone (default $ROTA_BENCH_POSTGRES): its schema rota is dropped before each rota run and River's tables emptied before each River run; empty: the PostgreSQL systems are left out")
	fs.StringVar(&c.rotaBin, "rota", "", "a built rota command (default: built from the repository around this directory)")
	fs.StringVar(&c.redisServer, "redis-server", "redis-server", "the redis-server program Asynq's Redis is started from (Debian: apt-get install redis-server)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, w := range strings.Split(*workloads, ",") {
		if w = strings.TrimSpace(w); w != "" {
			c.workloads = append(c.workloads, w)
		}
	}
	for _, s := range strings.Split(*systems, ",") {
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
		return errors.New("-workloads: give drain, steady or both")
	}
	for _, w := range c.workloads {
		if w != "drain" && w != "steady" {
			return fmt.Errorf("-workloads: unknown workload %q (drain or steady)", w)
		}
	}
	for _, s := range c.systems {
		if !slices.Contains(drainLabels, s) && !slices.Contains(steadyLabels, s) {
			return fmt.Errorf("-systems: unknown label %q (drain: %s; steady: %s)", s,
				strings.Join(drainLabels, ", "), strings.Join(steadyLabels, ", "))
		}
	}
	if c.jobs <= 0 || c.rounds <= 0 || c.steadyRounds <= 0 {
		return errors.New("-n, -rounds and -steady-rounds must be positive")
	}
	if c.rate <= 0 || c.duration <= 0 || c.warmup < 0 {
		return errors.New("-rate and -duration must be positive, -warmup not negative")
	}
	return nil
}

// wants says whether label runs in this compare.
func (c compareConfig) wants(label string) bool {
	if strings.HasSuffix(label, "-pg") || strings.Contains(label, "-pg-") {
		if c.pgDSN == "" {
			return false
		}
	}
	return len(c.systems) == 0 || slices.Contains(c.systems, label)
}

// compare runs c's rounds, writing drain.jsonl, steady.jsonl, load.log and
// machine.json into c.out. It returns an error when a run failed (its
// error is in the JSON lines too).
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
	h := &harness{c: c, work: work, self: self}
	machine := describeMachine()
	machine["started"] = time.Now().UTC().Format(time.RFC3339)
	machine["jobs"], machine["rounds"], machine["steady_rounds"] = c.jobs, c.rounds, c.steadyRounds
	machine["rate"], machine["duration"], machine["warmup"] = c.rate, c.duration.String(), c.warmup.String()

	// Build or check rota.
	if c.rotaBin == "" {
		root, err := repoRoot()
		if err != nil {
			return fmt.Errorf("building rota: %w (or give -rota)", err)
		}
		h.rota = filepath.Join(work, "rota")
		fmt.Fprintf(c.logw, "building rota from %s\n", root)
		b := exec.CommandContext(ctx, "go", "build", "-o", h.rota, "./cmd/rota")
		b.Dir, b.Env = root, append(os.Environ(), "CGO_ENABLED=1")
		if out, err := b.CombinedOutput(); err != nil {
			return fmt.Errorf("building rota: %w\n%s", err, out)
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

	// Redis for Asynq, on a loopback port of its own.
	if c.wants("asynq") || c.wants("asynq-1ms") {
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

	for _, w := range c.workloads {
		rounds, labels := c.rounds, drainLabels
		if w == "steady" {
			rounds, labels = c.steadyRounds, steadyLabels
		}
		for r := 1; r <= rounds; r++ {
			if err := h.logLoad(w, r); err != nil {
				return err
			}
			for _, label := range labels {
				if !c.wants(label) {
					continue
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := h.run(ctx, w, r, label); err != nil {
					return err
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

// harness holds what the runs of one compare share.
type harness struct {
	c      compareConfig
	work   string // temporary directory: SQLite files, Redis's files, rota
	self   string // this program, for the peers' commands
	rota   string
	redis  string
	failed int
}

// command is the program and arguments of label's run of workload.
func (h *harness) command(workload, label string) (string, []string) {
	c := h.c
	n := strconv.Itoa(c.jobs)
	steady := []string{"--rate", fmt.Sprint(c.rate), "--duration", c.duration.String(), "--warmup", c.warmup.String()}
	peerSteady := []string{"-mode", "steady", "-rate", fmt.Sprint(c.rate), "-duration", c.duration.String(), "-warmup", c.warmup.String()}
	if workload == "drain" {
		switch label {
		case "rota-sqlite":
			return h.rota, []string{"bench", "drain", "--store", "sqlite", "--jobs", n, "--dir", h.work, "--json"}
		case "rota-sqlite-http":
			return h.rota, []string{"bench", "drain", "--store", "sqlite", "--via", "http", "--no-baseline", "--jobs", n, "--dir", h.work, "--json"}
		case "rota-pg":
			return h.rota, []string{"bench", "drain", "--store", "postgres", "--dsn", c.pgDSN, "--jobs", n, "--json"}
		case "river-pg-100":
			return h.self, []string{"river-pg", "-dsn", c.pgDSN, "-n", n, "-workers", "100"}
		case "river-pg-1000":
			return h.self, []string{"river-pg", "-dsn", c.pgDSN, "-n", n, "-workers", "1000"}
		case "river-sqlite":
			return h.self, []string{"river-sqlite", "-dir", h.work, "-n", n, "-workers", "100"}
		case "asynq":
			return h.self, []string{"asynq", "-redis", h.redis, "-n", n, "-concurrency", "100"}
		}
	}
	switch label {
	case "rota-sqlite":
		return h.rota, append([]string{"bench", "steady", "--store", "sqlite", "--dir", h.work, "--json"}, steady...)
	case "rota-pg":
		return h.rota, append([]string{"bench", "steady", "--store", "postgres", "--dsn", c.pgDSN, "--json"}, steady...)
	case "river-pg-pool20":
		return h.self, append([]string{"river-pg", "-dsn", c.pgDSN, "-workers", "100", "-pool", "20"}, peerSteady...)
	case "river-sqlite":
		return h.self, append([]string{"river-sqlite", "-dir", h.work, "-workers", "100"}, peerSteady...)
	case "asynq-1ms":
		return h.self, append([]string{"asynq", "-redis", h.redis, "-concurrency", "100", "-check-interval", "1ms"}, peerSteady...)
	}
	panic("peers: no command for " + workload + " " + label)
}

// run runs one label once and appends its JSON lines, tagged with the
// round and label, to the workload's file; a failed run is appended as a
// line with its error.
func (h *harness) run(ctx context.Context, workload string, rnd int, label string) error {
	if label == "rota-pg" {
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
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0).Seconds()
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
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h.failed++
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 600 {
			msg = "…" + msg[len(msg)-600:]
		}
		fmt.Fprintf(h.c.logw, "  %s %s: FAILED: %v: %s\n", workload, label, err, msg)
		return enc.Encode(map[string]any{"round": rnd, "label": label, "error": fmt.Sprintf("%v: %s", err, msg)})
	}
	for _, o := range lines {
		o["round"], o["label"], o["wall_s"] = rnd, label, round(wall, 1)
		if err := enc.Encode(o); err != nil {
			return err
		}
		via, _ := o["via"].(string)
		if via == "" {
			via, _ = o["system"].(string)
		}
		r := record(o)
		if workload == "drain" {
			v, _ := r.num("jobs_per_sec")
			cpu, _ := r.num("cpu_us_per_job")
			fmt.Fprintf(h.c.logw, "  %s [%s]: %.0f jobs/s, %.1f CPU µs/job\n", label, via, v, cpu)
		} else {
			p50, _ := r.num("p50_ms")
			p99, _ := r.num("p99_ms")
			fmt.Fprintf(h.c.logw, "  %s [%s]: enqueue→start p50 %.2f ms, p99 %.2f ms\n", label, via, p50, p99)
		}
	}
	return nil
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
