package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
)

// MemoryConfig shapes the memory workload: Jobs are queued, then a server
// is started on them and Work of them are accepted and finished through
// it (batches of 100) before its memory is read.
type MemoryConfig struct {
	Jobs int
	Work int
	// Exe is the rota binary to run "rota serve" from; the workload then
	// measures that child process. Empty measures this process instead
	// (the growth of its resident set from before the store was opened).
	Exe string
}

// DefaultMemory is the target's size: 1M queued jobs.
var DefaultMemory = MemoryConfig{Jobs: 1_000_000, Work: 20_000}

// Memory reports the server's resident set size with cfg.Jobs queued.
func Memory(ctx context.Context, o Options, cfg MemoryConfig) (Result, error) {
	if cfg.Jobs <= 0 || cfg.Work < 0 || cfg.Work > cfg.Jobs {
		return Result{}, fmt.Errorf("memory: jobs must be positive and work at most jobs")
	}
	if cfg.Exe == "" {
		return memoryInProcess(ctx, o, cfg)
	}
	total := cfg.Jobs + cfg.Work
	// Queue the jobs with this process, then close the store.
	inproc := o
	inproc.Via = "inprocess"
	e, err := newEnv(ctx, inproc, "memory")
	if err != nil {
		return Result{}, err
	}
	typ := e.typ("memory")
	path, info := e.path, e.info
	if err := e.fill(ctx, typ, cfg.Jobs, nil, func(d int) { o.progress(d, total) }); err != nil {
		e.close()
		return Result{}, err
	}
	checkpoint(ctx, e.st)
	// Hand the store over to the child; e.close removes the file at the end.
	e.server.Close()
	e.st.Close()
	defer e.close()

	spec := path
	if o.storeName() == "postgres" {
		spec = o.DSN
	}
	port, err := freePort()
	if err != nil {
		return Result{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.CommandContext(ctx, cfg.Exe, "serve", "--store", spec, "--http", addr, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("memory: start rota serve: %w", err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	url := "http://" + addr
	if err := waitHealthy(ctx, url, 30*time.Second); err != nil {
		return Result{}, err
	}
	idle, _, err := procRSS(cmd.Process.Pid)
	if err != nil {
		return Result{}, err
	}
	c, err := remote.NewClient(url, remote.Config{})
	if err != nil {
		return Result{}, err
	}
	defer func() {
		c.Close()
		c.Store().Close()
	}()
	if err := churn(ctx, c, typ, cfg.Work, func(d int) { o.progress(cfg.Jobs+d, total) }); err != nil {
		return Result{}, err
	}
	rss, peak, err := procRSS(cmd.Process.Pid)
	if err != nil {
		return Result{}, err
	}
	return Result{Workload: "memory", Store: o.storeName(), Via: "http", Jobs: cfg.Jobs,
		RSSMB: rss, PeakRSSMB: peak, IdleRSSMB: idle,
		Method:    fmt.Sprintf("VmRSS/VmHWM of a `rota serve` child process from /proc, after %d accepts+finishes over HTTP", cfg.Work),
		StoreInfo: info}, nil
}

// memoryInProcess measures the growth of this process's resident set.
func memoryInProcess(ctx context.Context, o Options, cfg MemoryConfig) (Result, error) {
	runtime.GC()
	debug.FreeOSMemory()
	before, _, err := procRSS(os.Getpid())
	if err != nil {
		return Result{}, err
	}
	e, err := newEnv(ctx, o, "memory")
	if err != nil {
		return Result{}, err
	}
	defer e.close()
	typ := e.typ("memory")
	total := cfg.Jobs + cfg.Work
	if err := e.fill(ctx, typ, cfg.Jobs, nil, func(d int) { o.progress(d, total) }); err != nil {
		return Result{}, err
	}
	if err := churn(ctx, e.client, typ, cfg.Work, func(d int) { o.progress(cfg.Jobs+d, total) }); err != nil {
		return Result{}, err
	}
	runtime.GC()
	after, peak, err := procRSS(os.Getpid())
	if err != nil {
		return Result{}, err
	}
	return Result{Workload: "memory", Store: o.storeName(), Via: o.via(), Jobs: cfg.Jobs, RSSMB: after - before, PeakRSSMB: peak,
		Method: "growth of this process's VmRSS from before the store was opened (peak: this process's VmHWM)", StoreInfo: e.info}, nil
}

// churn accepts and finishes n jobs in batches of 100, then reads stats.
func churn(ctx context.Context, c *rota.Client, typ string, n int, progress func(int)) error {
	for done := 0; done < n; {
		jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{typ}, Limit: min(100, n-done), Worker: "bench"})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return fmt.Errorf("memory: no jobs to accept")
		}
		ps := make([]rota.FinishParams, len(jobs))
		for i, j := range jobs {
			ps[i] = rota.FinishParams{Lease: j.Lease(), As: rota.Complete}
		}
		if _, err := c.FinishMany(ctx, ps); err != nil {
			return err
		}
		done += len(jobs)
		progress(done)
	}
	_, err := c.Stats(ctx)
	return err
}

// procRSS reads a process's resident set size and its peak, in MB.
func procRSS(pid int) (rss, peak float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("memory: %w (the memory workload needs Linux's /proc)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[0], 64)
		switch k {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		}
	}
	return rss, peak, sc.Err()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitHealthy(ctx context.Context, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("memory: rota serve did not become healthy within %v", limit)
}
