package main

// The clients workload: the Python and TypeScript clients' workers drain
// no-op jobs through one `rota serve`, beside the Go remote worker
// (clients/godrain) in the same round, as clients/python/bench/drain.py
// and clients/typescript/bench/drain.mjs measured them, each worker a
// process of its own.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// checkClients builds the Go remote worker and finds the Python and
// TypeScript workers' tools; a label whose tool is missing is skipped,
// with the reason logged and kept in machine.json. It returns the tools'
// versions.
func (h *harness) checkClients(ctx context.Context, rootErr error) map[string]string {
	c := h.c
	versions := map[string]string{}
	skip := func(tool, why string) {
		for _, s := range systems["clients"] {
			if (tool == "" || s.tool == tool) && h.skipped[s.label] == "" && (len(c.systems) == 0 || h.wants(s.label)) {
				h.skipped[s.label] = why
				fmt.Fprintf(c.logw, "skipping %s: %s\n", s.label, why)
			}
		}
	}
	if rootErr != nil {
		skip("", "the clients' workers live in rota's repository: "+rootErr.Error())
		return versions
	}
	h.godrain = filepath.Join(h.work, "godrain")
	if err := goBuild(ctx, h.repo, h.godrain, "./clients/godrain"); err != nil {
		skip("", "building clients/godrain: "+err.Error())
		return versions
	}
	py := exec.CommandContext(ctx, c.python, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import rota; print(sys.version.split()[0])",
		filepath.Join(h.repo, "clients", "python"))
	if out, err := py.CombinedOutput(); err != nil {
		skip("python", fmt.Sprintf("the Python client does not load with %s (-python): %v %s", c.python, err, strings.TrimSpace(string(out))))
	} else {
		versions["python"] = strings.TrimSpace(string(out))
	}
	dist := filepath.Join(h.repo, "clients", "typescript", "dist", "index.js")
	if out, err := exec.CommandContext(ctx, c.node, "--version").Output(); err != nil {
		skip("node", fmt.Sprintf("%s not found (-node; Debian: apt-get install nodejs): %v", c.node, err))
	} else if _, err := os.Stat(dist); err != nil {
		skip("node", fmt.Sprintf("the TypeScript client is not built (%v; npm run build in clients/typescript)", err))
	} else {
		versions["node"] = strings.TrimSpace(string(out))
	}
	return versions
}

// clientDrainMain is one drain of one client's worker: a fresh `rota
// serve` (a new SQLite data directory, or the -store PostgreSQL
// database), -n no-op jobs added over HTTP (not timed), then the worker
// process started and timed until the server counts every job completed
// (GET /v1/stats every 10 ms), so the worker's start is in the time, as it
// was in the clients' own drain scripts.
func clientDrainMain(args []string) error {
	fs := flag.NewFlagSet("client-drain", flag.ContinueOnError)
	worker := fs.String("worker", "go-remote", "go-remote, python-threads, python-asyncio or typescript")
	storeSpec := fs.String("store", "sqlite", "sqlite (a new data directory in -dir) or a postgres:// database")
	n := fs.Int("n", 20_000, "no-op jobs to drain")
	concurrency := fs.Int("concurrency", 64, "the worker's slots")
	rotaBin := fs.String("rota", "rota", "the rota command")
	godrain := fs.String("godrain", "godrain", "clients/godrain, built")
	repo := fs.String("repo", ".", "rota's repository (for clients/python and clients/typescript)")
	python := fs.String("python", "python3", "the Python interpreter")
	node := fs.String("node", "node", "Node.js")
	dir := fs.String("dir", os.TempDir(), "where the SQLite data directory goes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n <= 0 || *concurrency <= 0 {
		return errors.New("-n and -concurrency must be positive")
	}
	ctx := context.Background()

	port, err := freePort()
	if err != nil {
		return err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	data, err := os.MkdirTemp(*dir, "serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(data)
	serveArgs := []string{"serve", "--http", "127.0.0.1:" + strconv.Itoa(port), "--data", data, "--ui=false", "--log-level", "error"}
	storeName := "sqlite"
	if *storeSpec != "sqlite" {
		serveArgs, storeName = append(serveArgs, "--store", *storeSpec), "postgres"
	}
	server := exec.Command(*rotaBin, serveArgs...)
	var serverLog bytes.Buffer
	server.Stderr = &serverLog
	server.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := server.Start(); err != nil {
		return fmt.Errorf("starting rota serve: %w", err)
	}
	defer func() {
		server.Process.Signal(syscall.SIGTERM)
		server.Wait()
	}()
	hc := &http.Client{Timeout: 30 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := completed(hc, url, ""); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rota serve did not answer on %s within 30 s: %s", url, serverLog.String())
		}
		time.Sleep(25 * time.Millisecond)
	}

	typ := fmt.Sprintf("bench.clients.%d", time.Now().UnixNano())
	for done := 0; done < *n; {
		k := min(5000, *n-done)
		jobs := make([]map[string]any, k)
		for i := range jobs {
			jobs[i] = map[string]any{"type": typ}
		}
		body, _ := json.Marshal(map[string]any{"jobs": jobs})
		resp, err := hc.Post(url+"/v1/jobs", "application/json", bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("adding jobs: %w", err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("adding jobs: %s: %s", resp.Status, msg)
		}
		done += k
	}

	var argv []string
	switch *worker {
	case "go-remote":
		argv = []string{*godrain, "-server", url, "-type", typ, "-concurrency", strconv.Itoa(*concurrency)}
	case "python-threads", "python-asyncio":
		argv = []string{*python, filepath.Join(*repo, "clients", "python", "bench", "pyworker.py"), url, typ,
			strconv.Itoa(*concurrency), strings.TrimPrefix(*worker, "python-")}
	case "typescript":
		argv = []string{*node, filepath.Join(*repo, "clients", "typescript", "bench", "tsworker.mjs"), url, typ, strconv.Itoa(*concurrency)}
	default:
		return fmt.Errorf("-worker %q: want go-remote, python-threads, python-asyncio or typescript", *worker)
	}
	dbCPU := func() time.Duration { return 0 }
	if storeName == "postgres" {
		pool, err := pgxpool.New(ctx, *storeSpec)
		if err != nil {
			return err
		}
		defer pool.Close()
		pm := postmasterPID(ctx, pool)
		dbCPU = procCPUSince(pm, true)
	}
	serverCPU := procCPUSince(server.Process.Pid, false)
	psi := pressureSince()
	w := exec.Command(argv[0], argv[1:]...)
	var workerLog bytes.Buffer
	w.Stderr = &workerLog
	w.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	begin := time.Now()
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the %s worker: %w", *worker, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- w.Wait() }()
	for deadline := begin.Add(10 * time.Minute); ; {
		got, err := completed(hc, url, typ)
		if err != nil {
			return err
		}
		if got >= *n {
			break
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the %s worker exited after %d of %d jobs (%v): %s", *worker, got, *n, err, workerLog.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %s worker completed %d of %d jobs in 10 minutes", *worker, got, *n)
		}
	}
	elapsed := time.Since(begin)
	scpu, dcpu, pressure := serverCPU(), dbCPU(), psi()
	w.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		w.Process.Kill()
		<-exited
	}
	wcpu := w.ProcessState.UserTime() + w.ProcessState.SystemTime()
	per := func(d time.Duration) float64 { return round(float64(d.Microseconds())/float64(*n), 1) }
	r := map[string]any{
		"workload": "clients", "system": "rota", "worker": *worker, "store": storeName, "via": "http",
		"jobs": *n, "concurrency": *concurrency, "seconds": round(elapsed.Seconds(), 3),
		"jobs_per_sec": round(float64(*n)/elapsed.Seconds(), 1), "cpu_us_per_job": per(wcpu),
		"rota_server_cpu_us_per_job": per(scpu), "cpu_pressure": round(pressure, 3),
	}
	if storeName == "postgres" {
		r["server_cpu_us_per_job"] = per(dcpu)
	}
	emit(r)
	return nil
}

// completed is how many jobs of typ the server counts completed (of any
// type when typ is empty: a check that it answers).
func completed(hc *http.Client, url, typ string) (int, error) {
	resp, err := hc.Get(url + "/v1/stats")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /v1/stats: %s", resp.Status)
	}
	var s struct {
		Counts []struct {
			Type  string `json:"type"`
			State string `json:"state"`
			Jobs  int    `json:"jobs"`
		} `json:"counts"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return 0, fmt.Errorf("GET /v1/stats: %w", err)
	}
	n := 0
	for _, c := range s.Counts {
		if c.Type == typ && c.State == "completed" {
			n += c.Jobs
		}
	}
	return n, nil
}

// freePort is a loopback port free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// checkBullMQ finds Node.js and BullMQ's packages for the bullmq label,
// installing them with `npm ci` (from bullmq/package-lock.json) when they
// are not there yet; without them the label is skipped, with the reason
// logged and kept in machine.json. It returns Node.js's version.
func (h *harness) checkBullMQ(ctx context.Context, rootErr error) string {
	c := h.c
	skip := func(why string) string {
		h.skipped["bullmq"] = why
		fmt.Fprintf(c.logw, "skipping bullmq: %s\n", why)
		return ""
	}
	if rootErr != nil {
		return skip("its program lives in rota's repository (bench/peers/bullmq): " + rootErr.Error())
	}
	out, err := exec.CommandContext(ctx, c.node, "--version").Output()
	if err != nil {
		return skip(fmt.Sprintf("%s not found (-node; Debian: apt-get install nodejs npm): %v", c.node, err))
	}
	dir := filepath.Join(h.repo, "bench", "peers", "bullmq")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq", "package.json")); err != nil {
		fmt.Fprintf(c.logw, "installing BullMQ: npm ci in %s\n", dir)
		npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		npm.Dir = dir
		if msg, err := npm.CombinedOutput(); err != nil {
			return skip(fmt.Sprintf("npm ci in %s failed (%v): %s", dir, err, strings.TrimSpace(string(msg))))
		}
	}
	h.bullmq = filepath.Join(dir, "bullmq.mjs")
	return strings.TrimSpace(string(out))
}
