// Command sqlitebench compares Go SQLite drivers on workloads shaped like
// rota's job table: batched inserts, claim+complete drain, point reads and
// single-insert transactions.
//
// Usage (from this directory):
//
//	go run .                      # all drivers, 3 reps, N=100000
//	go run . -n 20000 -reps 1     # quicker smoke run
//	go run . -drivers mattn,ncruces
//
// mattn/go-sqlite3 and ncruces/go-sqlite3 both register the database/sql
// driver name "sqlite3" in init, so they cannot be linked into one binary
// (sql.Register panics on the duplicate). Each driver therefore lives in a
// file behind its own build tag (driver_*.go). Run without tags, this program
// is an orchestrator: it builds one child binary per driver (CGO_ENABLED=1,
// same flags for all), runs every (rep, driver) pair as a separate process
// with fresh database files, and aggregates the results. Running each driver
// in its own process also keeps one driver's heap/GC from affecting another.
package main

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// driverSpec is filled in by exactly one of the tagged driver_*.go files in a
// child build. In the untagged (orchestrator) build it stays nil.
type driverSpec struct {
	Name       string // short name: mattn, modernc, ncruces
	SQLName    string // database/sql driver name
	Module     string // Go module path, for version reporting
	Kind       string // cgo / pure Go (transpiled C) / wasm2go
	DSN        func(path string, writer bool) string
	BuildExtra []string // extra env for the child build
}

var thisDriver *driverSpec

const schema = `
CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, grp TEXT NOT NULL DEFAULT '', priority INTEGER NOT NULL DEFAULT 0, state INTEGER NOT NULL, run_at INTEGER NOT NULL, data BLOB NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL DEFAULT 20, token TEXT, worker TEXT, lease_until INTEGER, result BLOB, created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER, updated_at INTEGER NOT NULL);
CREATE INDEX jobs_due ON jobs(type, priority DESC, run_at, id) WHERE state = 0;
CREATE INDEX jobs_lease ON jobs(lease_until) WHERE state = 1;
`

const (
	sqlInsert = `INSERT INTO jobs (type, grp, priority, state, run_at, data, max_attempts, created_at, updated_at) VALUES (?, ?, ?, 0, ?, ?, 20, ?, ?)`
	sqlDue    = `SELECT id FROM jobs WHERE state=0 AND type=? AND run_at<=? ORDER BY priority DESC, run_at, id LIMIT 500`
	sqlClaim  = `UPDATE jobs SET state=1, token=?, worker=?, lease_until=?, attempt=attempt+1, started_at=?, updated_at=? WHERE id=? RETURNING id,type,grp,priority,state,run_at,data,attempt,max_attempts,token,created_at`
	sqlDone   = `UPDATE jobs SET state=3, result=?, finished_at=?, updated_at=? WHERE id=? AND token=? AND state=1`
	// Supplementary set-based variant (not part of the driver comparison
	// brief): 2 statements per 500 jobs instead of 1+500 and 500.
	sqlClaimSet = `UPDATE jobs SET state=1, token=?, worker=?, lease_until=?, attempt=attempt+1, started_at=?, updated_at=? WHERE id IN (SELECT id FROM jobs WHERE state=0 AND type=? AND run_at<=? ORDER BY priority DESC, run_at, id LIMIT 500) RETURNING id,type,grp,priority,state,run_at,data,attempt,max_attempts,token,created_at`
	sqlDoneSet  = `UPDATE jobs SET state=3, result=j.value->>'$[1]', finished_at=?, updated_at=? FROM json_each(?) AS j WHERE jobs.id=j.value->>'$[0]' AND jobs.token=? AND jobs.state=1`
	sqlGet      = `SELECT id,type,grp,priority,state,run_at,data,attempt,max_attempts,token,worker,lease_until,result,created_at,started_at,finished_at,updated_at FROM jobs WHERE id=?`
	jobType     = "email.send"
	claimSize   = 500 // fixed by sqlDue's LIMIT
)

var workloads = []struct{ Key, Title, Unit string }{
	{"insert", "insert (500/tx)", "jobs/s"},
	{"drain", "claim+complete drain (500/tx)", "jobs/s"},
	{"read", "point reads (4-conn pool, 2 goroutines)", "reads/s"},
	{"smalltx", "1-insert transactions", "tx/s"},
	{"drainset", "supplementary: set-based claim+complete (2 stmts per 500 jobs)", "jobs/s"},
}

// childResult is what a child process prints (as one JSON line) on stdout.
type childResult struct {
	Driver        string             `json:"driver"`
	Module        string             `json:"module"`
	ModVersion    string             `json:"mod_version"`
	Kind          string             `json:"kind"`
	SQLiteVersion string             `json:"sqlite_version"`
	GoVersion     string             `json:"go_version"`
	CgoEnabled    string             `json:"cgo_enabled"`
	Pragmas       string             `json:"pragmas"`
	Rates         map[string]float64 `json:"rates"`
	Seconds       map[string]float64 `json:"seconds"`
	CPUSeconds    map[string]float64 `json:"cpu_seconds"` // user+sys of the child during the timed section
	Order         string             `json:"order"`
	FSType        string             `json:"fs_type"`
}

func main() {
	var (
		child   = flag.Bool("child", false, "internal: run one rep of every workload for the linked driver, print JSON")
		n       = flag.Int("n", 100_000, "jobs per workload (insert, drain, reads)")
		smallTx = flag.Int("smalltx", 2_000, "number of 1-insert transactions")
		reps    = flag.Int("reps", 3, "repetitions per driver (fresh database each time)")
		dir     = flag.String("dir", "/tmp", "parent directory for the temporary database directories (must be a real disk, not tmpfs)")
		drivers = flag.String("drivers", "mattn,modernc,ncruces", "comma-separated drivers to compare")
		keep    = flag.Bool("keep", false, "keep the temporary child binaries and databases")
		order   = flag.String("order", "fifo", "job ordering: fifo (run_at rises with id, 90% priority 0: claims walk the table mostly in id order) or random (random priority 0-2 and run_at: every claim batch touches ~500 scattered pages)")
		quiet   = flag.Float64("quiet", 0.25, "before each run, wait (up to 60s) until other processes use less than this many cores")
	)
	flag.Parse()
	if *child {
		if thisDriver == nil {
			fatalf("-child needs a binary built with one of the sqlitebench_* tags")
		}
		res, err := runChild(*n, *smallTx, *dir, *keep, *order)
		if err != nil {
			fatalf("%s: %v", thisDriver.Name, err)
		}
		if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
			fatalf("%v", err)
		}
		return
	}
	if *order != "fifo" && *order != "random" {
		fatalf("-order must be fifo or random")
	}
	if err := orchestrate(strings.Split(*drivers, ","), *n, *smallTx, *reps, *dir, *keep, *order, *quiet); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sqlitebench: "+format+"\n", args...)
	os.Exit(1)
}

// ---------------------------------------------------------------------------
// Orchestrator

var buildTags = map[string]string{
	"mattn":   "sqlitebench_mattn",
	"modernc": "sqlitebench_modernc",
	"ncruces": "sqlitebench_ncruces",
}

func orchestrate(drivers []string, n, smallTx, reps int, dir string, keep bool, order string, quiet float64) error {
	for _, d := range drivers {
		if _, ok := buildTags[d]; !ok {
			return fmt.Errorf("unknown driver %q", d)
		}
	}
	fsType, err := fsTypeOf(dir)
	if err != nil {
		return err
	}
	if fsType == "tmpfs" || fsType == "ramfs" {
		return fmt.Errorf("%s is on %s; fsync would be free. Use -dir on a real disk", dir, fsType)
	}

	binDir, err := os.MkdirTemp("", "sqlitebench-bin-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(binDir)
	}

	printMachine(dir, fsType)
	fmt.Printf("workload: N=%d jobs (insert, drain, reads), %d single-insert tx, %d reps per driver, fresh DB per workload per rep, job order %s\n\n", n, smallTx, reps, order)

	bins := map[string]string{}
	for _, d := range drivers {
		bin := filepath.Join(binDir, "bench-"+d)
		start := time.Now()
		cmd := exec.Command("go", "build", "-tags", buildTags[d], "-o", bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", d, err)
		}
		fmt.Fprintf(os.Stderr, "built %s in %v\n", d, time.Since(start).Round(time.Millisecond))
		bins[d] = bin
	}

	results := map[string][]childResult{}
	otherLoad := map[string][]float64{}
	for rep := 0; rep < reps; rep++ {
		// Rotate the driver order every rep so no driver always runs first/last.
		runOrder := slices.Clone(drivers)
		for i := 0; i < rep%len(runOrder); i++ {
			runOrder = append(runOrder[1:], runOrder[0])
		}
		for _, d := range runOrder {
			start := time.Now()
			var stdout bytes.Buffer
			args := []string{"-child", "-n", fmt.Sprint(n), "-smalltx", fmt.Sprint(smallTx), "-dir", dir, "-order", order}
			if keep {
				args = append(args, "-keep")
			}
			cmd := exec.Command(bins[d], args...)
			cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
			waited, before := waitQuiet(quiet)
			busy0 := cpuBusySeconds()
			t0 := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s rep %d: %w", d, rep+1, err)
			}
			wall := time.Since(t0).Seconds()
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			childCPU := tv(ru.Utime) + tv(ru.Stime)
			other := (cpuBusySeconds() - busy0 - childCPU) / wall
			otherLoad[d] = append(otherLoad[d], other)
			var r childResult
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				return fmt.Errorf("%s rep %d: bad child output %q: %w", d, rep+1, stdout.String(), err)
			}
			results[d] = append(results[d], r)
			fmt.Fprintf(os.Stderr, "rep %d %-8s %5.1fs  insert %7.0f  drain %7.0f  read %7.0f  smalltx %5.0f  drainset %7.0f  maxrss %3d MiB  other-procs %.2f cores (%.2f before, waited %v)\n",
				rep+1, d, time.Since(start).Seconds(), r.Rates["insert"], r.Rates["drain"], r.Rates["read"], r.Rates["smalltx"], r.Rates["drainset"],
				ru.Maxrss/1024, other, before, waited.Round(time.Second))
		}
	}

	fmt.Println("drivers:")
	for _, d := range drivers {
		r := results[d][0]
		fmt.Printf("  %-8s %s %s (%s), SQLite %s, built with %s CGO_ENABLED=%s; %s\n",
			d, r.Module, r.ModVersion, r.Kind, r.SQLiteVersion, r.GoVersion, r.CgoEnabled, r.Pragmas)
	}
	fmt.Println()

	base := drivers[0]
	fmt.Printf("medians over %d runs; spread = (max-min)/median; ratio = median / %s median (higher is better)\n\n", reps, base)
	fmt.Printf("| workload | unit |")
	for _, d := range drivers {
		fmt.Printf(" %s median | %s spread | %s ratio |", d, d, d)
	}
	fmt.Println()
	fmt.Print("|---|---|" + strings.Repeat("---:|---:|---:|", len(drivers)) + "\n")
	for _, w := range workloads {
		fmt.Printf("| %s | %s |", w.Title, w.Unit)
		baseMed, _, _, _ := stats(results[base], w.Key)
		for _, d := range drivers {
			med, lo, hi, _ := stats(results[d], w.Key)
			fmt.Printf(" %.0f | %.1f%% (%.0f–%.0f) | %.2fx |", med, 100*(hi-lo)/med, lo, hi, med/baseMed)
		}
		fmt.Println()
	}
	fmt.Println()
	fmt.Println("raw rates per run:")
	for _, d := range drivers {
		for _, w := range workloads {
			var xs []string
			for _, r := range results[d] {
				xs = append(xs, fmt.Sprintf("%.0f", r.Rates[w.Key]))
			}
			fmt.Printf("  %-8s %-8s %s\n", d, w.Key, strings.Join(xs, " "))
		}
	}
	fmt.Println()
	fmt.Println("CPU time of the benchmark process per operation (user+sys, µs; median over runs; less sensitive to other load than wall-clock rates):")
	fmt.Println()
	fmt.Printf("| workload |")
	for _, d := range drivers {
		fmt.Printf(" %s µs/op | ratio |", d)
	}
	fmt.Println()
	fmt.Print("|---|" + strings.Repeat("---:|---:|", len(drivers)) + "\n")
	for _, w := range workloads {
		fmt.Printf("| %s |", w.Key)
		var baseCPU float64
		for i, d := range drivers {
			var xs []float64
			for _, r := range results[d] {
				xs = append(xs, 1e6*r.CPUSeconds[w.Key]/(r.Seconds[w.Key]*r.Rates[w.Key]))
			}
			slices.Sort(xs)
			m := xs[len(xs)/2]
			if i == 0 {
				baseCPU = m
			}
			fmt.Printf(" %.1f | %.2fx |", m, m/baseCPU)
		}
		fmt.Println()
	}
	fmt.Println()
	fmt.Println("CPU used by other processes during each run (cores, averaged over the run; /proc/stat minus the child's rusage, so ~±0.1 of 0 means no contention):")
	for _, d := range drivers {
		var xs []string
		for _, x := range otherLoad[d] {
			xs = append(xs, fmt.Sprintf("%.2f", x))
		}
		fmt.Printf("  %-8s %s\n", d, strings.Join(xs, " "))
	}
	return nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// cpuBusySeconds returns the machine-wide non-idle CPU time from /proc/stat.
func cpuBusySeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var busy float64
	for i, x := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait, guest, guest_nice
			continue
		}
		var v float64
		fmt.Sscan(x, &v)
		busy += v
	}
	return busy / 100 // USER_HZ
}

// waitQuiet waits (at most 60s) until other processes use less than limit
// cores, sampled over 1s. It returns how long it waited and the last sample.
func waitQuiet(limit float64) (time.Duration, float64) {
	start := time.Now()
	for {
		b0, t0 := cpuBusySeconds(), time.Now()
		time.Sleep(time.Second)
		load := (cpuBusySeconds() - b0) / time.Since(t0).Seconds()
		if load < limit || time.Since(start) > 60*time.Second {
			return time.Since(start) - time.Second, load
		}
	}
}

func stats(rs []childResult, key string) (med, lo, hi float64, xs []float64) {
	for _, r := range rs {
		xs = append(xs, r.Rates[key])
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		med = xs[m]
	} else {
		med = (xs[m-1] + xs[m]) / 2
	}
	return med, xs[0], xs[len(xs)-1], xs
}

func printMachine(dir, fsType string) {
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	nproc := strings.TrimSpace(cmdOutput("nproc"))
	goVer := strings.TrimSpace(cmdOutput("go", "version"))
	df := strings.TrimSpace(cmdOutput("df", "-hT", dir))
	fmt.Printf("cpu: %s\nnproc: %s (runtime.NumCPU=%d)\n%s\nkernel: %s\ndb dir: %s (fs type %s)\n%s\n\n",
		cpu, nproc, runtime.NumCPU(), goVer, strings.TrimSpace(cmdOutput("uname", "-r")), dir, fsType, df)
}

func cmdOutput(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return fmt.Sprintf("(%s failed: %v)", name, err)
	}
	return string(out)
}

func fsTypeOf(dir string) (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", fmt.Errorf("statfs %s: %w", dir, err)
	}
	switch uint64(st.Type) {
	case 0xEF53:
		return "ext4", nil
	case 0x58465342:
		return "xfs", nil
	case 0x9123683E:
		return "btrfs", nil
	case 0x01021994:
		return "tmpfs", nil
	case 0x858458f6:
		return "ramfs", nil
	case 0x794c7630:
		return "overlayfs", nil
	default:
		return fmt.Sprintf("0x%x", uint64(st.Type)), nil
	}
}

// ---------------------------------------------------------------------------
// Child: one rep of every workload for the linked driver.

func runChild(n, smallTx int, parent string, keep bool, order string) (*childResult, error) {
	d := thisDriver
	tmp, err := os.MkdirTemp(parent, "rota-sqlitebench-"+d.Name+"-")
	if err != nil {
		return nil, err
	}
	if !keep {
		defer os.RemoveAll(tmp)
	}
	fsType, _ := fsTypeOf(tmp)
	res := &childResult{
		Driver:     d.Name,
		Module:     d.Module,
		Kind:       d.Kind,
		GoVersion:  runtime.Version(),
		Rates:      map[string]float64{},
		Seconds:    map[string]float64{},
		CPUSeconds: map[string]float64{},
		Order:      order,
		FSType:     fsType,
		ModVersion: "?",
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == d.Module {
				res.ModVersion = dep.Version
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "CGO_ENABLED" {
				res.CgoEnabled = s.Value
			}
		}
	}

	jobs := makeJobs(n, order)
	seq := 0
	fresh := func(name string) (*sql.DB, string, error) {
		seq++
		path := filepath.Join(tmp, fmt.Sprintf("%02d-%s.db", seq, name))
		w, err := openWriter(path)
		if err != nil {
			return nil, "", err
		}
		if _, err := w.Exec(schema); err != nil {
			w.Close()
			return nil, "", fmt.Errorf("schema: %w", err)
		}
		return w, path, nil
	}

	// 1. insert
	{
		w, path, err := fresh("insert")
		if err != nil {
			return nil, err
		}
		if err := w.QueryRow(`select sqlite_version()`).Scan(&res.SQLiteVersion); err != nil {
			return nil, err
		}
		if res.Pragmas, err = checkPragmas(w); err != nil {
			return nil, err
		}
		start, cpu0 := time.Now(), selfCPU()
		if err := insertBatched(w, jobs); err != nil {
			return nil, fmt.Errorf("insert: %w", err)
		}
		el := time.Since(start)
		res.CPUSeconds["insert"] = selfCPU() - cpu0
		res.Seconds["insert"], res.Rates["insert"] = el.Seconds(), float64(n)/el.Seconds()
		if err := expectCount(w, `SELECT count(*) FROM jobs WHERE state=0`, n); err != nil {
			return nil, err
		}
		w.Close()
		removeDB(path, keep)
	}

	// 2. claim+complete drain
	{
		w, path, err := fresh("drain")
		if err != nil {
			return nil, err
		}
		if err := insertBatched(w, jobs); err != nil {
			return nil, fmt.Errorf("drain setup: %w", err)
		}
		if _, err := w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return nil, err
		}
		start, cpu0 := time.Now(), selfCPU()
		drained, err := drain(w)
		if err != nil {
			return nil, fmt.Errorf("drain: %w", err)
		}
		el := time.Since(start)
		res.CPUSeconds["drain"] = selfCPU() - cpu0
		if drained != n {
			return nil, fmt.Errorf("drain: drained %d of %d", drained, n)
		}
		res.Seconds["drain"], res.Rates["drain"] = el.Seconds(), float64(n)/el.Seconds()
		if err := expectCount(w, `SELECT count(*) FROM jobs WHERE state=3 AND attempt=1 AND result IS NOT NULL`, n); err != nil {
			return nil, err
		}
		w.Close()
		removeDB(path, keep)
	}

	// 5. (supplementary) set-based claim+complete drain
	{
		w, path, err := fresh("drainset")
		if err != nil {
			return nil, err
		}
		if err := insertBatched(w, jobs); err != nil {
			return nil, fmt.Errorf("drainset setup: %w", err)
		}
		if _, err := w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return nil, err
		}
		start, cpu0 := time.Now(), selfCPU()
		drained, err := drainSet(w)
		if err != nil {
			return nil, fmt.Errorf("drainset: %w", err)
		}
		el := time.Since(start)
		res.CPUSeconds["drainset"] = selfCPU() - cpu0
		if drained != n {
			return nil, fmt.Errorf("drainset: drained %d of %d", drained, n)
		}
		res.Seconds["drainset"], res.Rates["drainset"] = el.Seconds(), float64(n)/el.Seconds()
		if err := expectCount(w, `SELECT count(*) FROM jobs WHERE state=3 AND attempt=1 AND result IS NOT NULL`, n); err != nil {
			return nil, err
		}
		w.Close()
		removeDB(path, keep)
	}

	// 3. point reads
	{
		w, path, err := fresh("read")
		if err != nil {
			return nil, err
		}
		if err := insertBatched(w, jobs); err != nil {
			return nil, fmt.Errorf("read setup: %w", err)
		}
		if _, err := w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return nil, err
		}
		r, err := sql.Open(d.SQLName, d.DSN(path, false))
		if err != nil {
			return nil, err
		}
		r.SetMaxOpenConns(4)
		r.SetMaxIdleConns(4)
		r.SetConnMaxLifetime(0)
		r.SetConnMaxIdleTime(0)
		el, cpu, err := pointReads(r, n)
		if err != nil {
			return nil, fmt.Errorf("reads: %w", err)
		}
		res.CPUSeconds["read"] = cpu
		res.Seconds["read"], res.Rates["read"] = el.Seconds(), float64(n)/el.Seconds()
		r.Close()
		w.Close()
		removeDB(path, keep)
	}

	// 4. single-insert transactions
	{
		w, path, err := fresh("smalltx")
		if err != nil {
			return nil, err
		}
		start, cpu0 := time.Now(), selfCPU()
		if err := insertSmallTx(w, jobs[:min(smallTx, len(jobs))], smallTx); err != nil {
			return nil, fmt.Errorf("smalltx: %w", err)
		}
		el := time.Since(start)
		res.CPUSeconds["smalltx"] = selfCPU() - cpu0
		res.Seconds["smalltx"], res.Rates["smalltx"] = el.Seconds(), float64(smallTx)/el.Seconds()
		if err := expectCount(w, `SELECT count(*) FROM jobs`, smallTx); err != nil {
			return nil, err
		}
		w.Close()
		removeDB(path, keep)
	}
	return res, nil
}

// selfCPU returns user+sys CPU seconds used by this process so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return tv(ru.Utime) + tv(ru.Stime)
}

func removeDB(path string, keep bool) {
	if keep {
		return
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// openWriter opens the single-connection writer pool.
func openWriter(path string) (*sql.DB, error) {
	w, err := sql.Open(thisDriver.SQLName, thisDriver.DSN(path, true))
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	return w, w.Ping()
}

// checkPragmas verifies that the DSN really applied the settings, so every
// driver is measured with the same durability.
func checkPragmas(db *sql.DB) (string, error) {
	var jm string
	var sync, bt int
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&jm); err != nil {
		return "", err
	}
	if err := db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil {
		return "", err
	}
	if err := db.QueryRow(`PRAGMA busy_timeout`).Scan(&bt); err != nil {
		return "", err
	}
	if !strings.EqualFold(jm, "wal") || sync != 2 || bt != 5000 {
		return "", fmt.Errorf("pragmas not applied: journal_mode=%s synchronous=%d busy_timeout=%d", jm, sync, bt)
	}
	var cache, page, ckpt int
	db.QueryRow(`PRAGMA cache_size`).Scan(&cache)
	db.QueryRow(`PRAGMA page_size`).Scan(&page)
	db.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&ckpt)
	return fmt.Sprintf("journal_mode=%s synchronous=%d(FULL) busy_timeout=%d cache_size=%d page_size=%d wal_autocheckpoint=%d",
		jm, sync, bt, cache, page, ckpt), nil
}

func expectCount(db *sql.DB, q string, want int) error {
	var got int
	if err := db.QueryRow(q).Scan(&got); err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s: got %d, want %d", q, got, want)
	}
	return nil
}

type job struct {
	grp      string
	priority int64
	runAt    int64
	data     []byte
}

var baseNow = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// makeJobs builds the same deterministic job set in every process.
//
// fifo: jobs are enqueued over time with run_at = enqueue time, 90% at
// priority 0, 9% at 1, 1% at 2, so the due-order mostly follows id order (what
// a queue sees when jobs are enqueued to run now). random: random priority
// 0-2 and random run_at in the last minute, so every 500-job claim batch
// touches ~500 different table pages (a worst case for write amplification).
func makeJobs(n int, order string) []job {
	rng := mrand.New(mrand.NewPCG(1, 2))
	templates := []string{"welcome", "reset_pw", "digest", "receipt"}
	jobs := make([]job, n)
	for i := range jobs {
		uid := 100000 + rng.IntN(900000)
		j := job{
			grp: fmt.Sprintf("tenant-%d", rng.IntN(16)),
			// ~60-byte JSON object
			data: []byte(fmt.Sprintf(`{"user_id":%d,"template":"%s","locale":"en-US","n":%d}`, uid, templates[uid%4], i%1000)),
		}
		if order == "random" {
			j.priority = int64(rng.IntN(3))
			j.runAt = baseNow - int64(rng.IntN(60_000_000))
		} else {
			j.runAt = baseNow - int64(n-i)*1000 // 1ms apart, all in the past
			switch p := rng.IntN(100); {
			case p < 90:
				j.priority = 0
			case p < 99:
				j.priority = 1
			default:
				j.priority = 2
			}
		}
		jobs[i] = j
	}
	return jobs
}

func nowMicro() int64 { return time.Now().UnixMicro() }

func insertBatched(w *sql.DB, jobs []job) error {
	stmt, err := w.Prepare(sqlInsert)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := 0; i < len(jobs); i += 500 {
		tx, err := w.Begin()
		if err != nil {
			return err
		}
		ts := tx.Stmt(stmt)
		now := nowMicro()
		for _, j := range jobs[i:min(i+500, len(jobs))] {
			if _, err := ts.Exec(jobType, j.grp, j.priority, j.runAt, j.data, now, now); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

func insertSmallTx(w *sql.DB, jobs []job, count int) error {
	stmt, err := w.Prepare(sqlInsert)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := 0; i < count; i++ {
		j := jobs[i%len(jobs)]
		tx, err := w.Begin()
		if err != nil {
			return err
		}
		now := nowMicro()
		if _, err := tx.Stmt(stmt).Exec(jobType, j.grp, j.priority, j.runAt, j.data, now, now); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

type claimed struct {
	id, priority, state, runAt, attempt, maxAttempts, createdAt int64
	typ, grp                                                    string
	data                                                        []byte
	token                                                       sql.NullString
}

// drain claims and completes every due job, 500 at a time, and returns how
// many it completed.
func drain(w *sql.DB) (int, error) {
	due, err := w.Prepare(sqlDue)
	if err != nil {
		return 0, err
	}
	defer due.Close()
	claim, err := w.Prepare(sqlClaim)
	if err != nil {
		return 0, err
	}
	defer claim.Close()
	done, err := w.Prepare(sqlDone)
	if err != nil {
		return 0, err
	}
	defer done.Close()

	const worker = "bench-worker-1"
	result := []byte(`{"ok":true}`)
	ids := make([]int64, 0, claimSize)
	batch := make([]claimed, 0, claimSize)
	total := 0
	for {
		tokBytes := make([]byte, 8)
		rand.Read(tokBytes)
		token := hex.EncodeToString(tokBytes)

		// Claim transaction.
		tx, err := w.Begin()
		if err != nil {
			return total, err
		}
		now := nowMicro()
		rows, err := tx.Stmt(due).Query(jobType, now)
		if err != nil {
			tx.Rollback()
			return total, err
		}
		ids = ids[:0]
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				tx.Rollback()
				return total, err
			}
			ids = append(ids, id)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			tx.Rollback()
			return total, err
		}
		if len(ids) == 0 {
			return total, tx.Rollback()
		}
		cs := tx.Stmt(claim)
		batch = batch[:0]
		lease := now + 30_000_000
		for _, id := range ids {
			var c claimed
			err := cs.QueryRow(token, worker, lease, now, now, id).Scan(
				&c.id, &c.typ, &c.grp, &c.priority, &c.state, &c.runAt, &c.data, &c.attempt, &c.maxAttempts, &c.token, &c.createdAt)
			if err != nil {
				tx.Rollback()
				return total, fmt.Errorf("claim %d: %w", id, err)
			}
			batch = append(batch, c)
		}
		if err := tx.Commit(); err != nil {
			return total, err
		}

		// Complete transaction.
		tx, err = w.Begin()
		if err != nil {
			return total, err
		}
		ds := tx.Stmt(done)
		now = nowMicro()
		for _, c := range batch {
			r, err := ds.Exec(result, now, now, c.id, c.token.String)
			if err != nil {
				tx.Rollback()
				return total, err
			}
			if n, err := r.RowsAffected(); err != nil || n != 1 {
				tx.Rollback()
				return total, fmt.Errorf("complete %d: rows=%d err=%v", c.id, n, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return total, err
		}
		total += len(batch)
	}
}

// drainSet is drain with one UPDATE ... WHERE id IN (SELECT ... LIMIT 500)
// RETURNING per claim transaction and one UPDATE ... FROM json_each(?) per
// complete transaction (per-job results passed as a JSON array).
func drainSet(w *sql.DB) (int, error) {
	claim, err := w.Prepare(sqlClaimSet)
	if err != nil {
		return 0, err
	}
	defer claim.Close()
	done, err := w.Prepare(sqlDoneSet)
	if err != nil {
		return 0, err
	}
	defer done.Close()
	const worker = "bench-worker-1"
	var batch []claimed
	var buf []byte
	total := 0
	for {
		tokBytes := make([]byte, 8)
		rand.Read(tokBytes)
		token := hex.EncodeToString(tokBytes)

		tx, err := w.Begin()
		if err != nil {
			return total, err
		}
		now := nowMicro()
		rows, err := tx.Stmt(claim).Query(token, worker, now+30_000_000, now, now, jobType, now)
		if err != nil {
			tx.Rollback()
			return total, err
		}
		batch = batch[:0]
		for rows.Next() {
			var c claimed
			if err := rows.Scan(&c.id, &c.typ, &c.grp, &c.priority, &c.state, &c.runAt, &c.data, &c.attempt, &c.maxAttempts, &c.token, &c.createdAt); err != nil {
				rows.Close()
				tx.Rollback()
				return total, err
			}
			batch = append(batch, c)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			tx.Rollback()
			return total, err
		}
		if len(batch) == 0 {
			return total, tx.Rollback()
		}
		if err := tx.Commit(); err != nil {
			return total, err
		}

		buf = append(buf[:0], '[')
		for i, c := range batch {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = fmt.Appendf(buf, `[%d,{"ok":true}]`, c.id)
		}
		buf = append(buf, ']')
		tx, err = w.Begin()
		if err != nil {
			return total, err
		}
		now = nowMicro()
		r, err := tx.Stmt(done).Exec(now, now, string(buf), token)
		if err != nil {
			tx.Rollback()
			return total, err
		}
		if n, err := r.RowsAffected(); err != nil || n != int64(len(batch)) {
			tx.Rollback()
			return total, fmt.Errorf("complete: rows=%d want %d err=%v", n, len(batch), err)
		}
		if err := tx.Commit(); err != nil {
			return total, err
		}
		total += len(batch)
	}
}

// pointReads does n primary-key lookups of random ids from 2 goroutines over
// the read pool, scanning every column. Returns the elapsed time (excluding a
// short warm-up that opens the pool connections and prepares the statement).
func pointReads(r *sql.DB, n int) (time.Duration, float64, error) {
	stmt, err := r.Prepare(sqlGet)
	if err != nil {
		return 0, 0, err
	}
	defer stmt.Close()
	if _, err := checkPragmas(r); err != nil {
		return 0, 0, fmt.Errorf("read pool: %w", err)
	}
	rng := mrand.New(mrand.NewPCG(3, 4))
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(rng.IntN(n)) + 1
	}
	read := func(id int64) error {
		var (
			jid, prio, state, runAt, attempt, maxAtt, created, updated int64
			typ, grp                                                   string
			data, result                                               []byte
			token, worker                                              sql.NullString
			lease, started, finished                                   sql.NullInt64
		)
		err := stmt.QueryRow(id).Scan(&jid, &typ, &grp, &prio, &state, &runAt, &data, &attempt, &maxAtt,
			&token, &worker, &lease, &result, &created, &started, &finished, &updated)
		if err == nil && jid != id {
			err = fmt.Errorf("got id %d want %d", jid, id)
		}
		return err
	}
	// Warm-up: 200 reads on 2 goroutines (not timed).
	const goroutines = 2
	run := func(ids []int64) error {
		var wg sync.WaitGroup
		errs := make([]error, goroutines)
		per := len(ids) / goroutines
		for g := 0; g < goroutines; g++ {
			part := ids[g*per : (g+1)*per]
			if g == goroutines-1 {
				part = ids[g*per:]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, id := range part {
					if err := read(id); err != nil {
						errs[g] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := run(ids[:200]); err != nil {
		return 0, 0, err
	}
	start, cpu0 := time.Now(), selfCPU()
	if err := run(ids); err != nil {
		return 0, 0, err
	}
	return time.Since(start), selfCPU() - cpu0, nil
}
