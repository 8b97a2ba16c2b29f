package main

// Measurement helpers shared by the peers' workloads. They mirror rota's
// cmd/rota/internal/bench: process CPU from getrusage, CPU pressure from PSI, a
// database server's CPU from /proc, nearest-rank percentiles.

import (
	"encoding/json"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTime is this process's CPU time so far (user+system, all threads).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pressureSince returns a function giving the share of the time since now
// during which some runnable task waited for a CPU (/proc/pressure/cpu
// "some"), as rota bench's cpu_pressure.
func pressureSince() func() float64 {
	s0, t0, ok := pressure()
	return func() float64 {
		s1, t1, ok1 := pressure()
		if !ok || !ok1 || !t1.After(t0) {
			return 0
		}
		return float64(s1-s0) / float64(t1.Sub(t0).Microseconds())
	}
}

func pressure() (stall int64, at time.Time, ok bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, time.Time{}, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				return n, time.Now(), err == nil
			}
		}
	}
	return 0, time.Time{}, false
}

// procStat returns the fields of /proc/PID/stat counted from 0 (field n of
// proc(5) is at n-1), the command name without its parentheses.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return nil
	}
	return append([]string{strings.TrimSpace(s[:open]), s[open+1 : end]}, strings.Fields(s[end+1:])...)
}

// procCPU is the CPU time of pid (all its threads) and of its children that
// it has reaped, plus, with withKids, of its live children: for PostgreSQL
// the postmaster and every backend and auxiliary process, as rota bench
// counts it; for Redis the server process.
func procCPU(pid int, withKids bool) (time.Duration, bool) {
	f := procStat(pid)
	if len(f) < 17 {
		return 0, false
	}
	ticks := 0
	for _, i := range []int{13, 14, 15, 16} { // utime stime cutime cstime
		n, _ := strconv.Atoi(f[i])
		ticks += n
	}
	if withKids {
		kids, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if err != nil {
			return 0, false
		}
		for _, k := range strings.Fields(string(kids)) {
			p, _ := strconv.Atoi(k)
			if c := procStat(p); len(c) > 14 {
				u, _ := strconv.Atoi(c[13])
				s, _ := strconv.Atoi(c[14])
				ticks += u + s
			}
		}
	}
	return time.Duration(ticks) * time.Second / 100, true // USER_HZ is 100 on Linux
}

// procCPUSince returns a function giving the CPU pid (and, withKids, its
// children) used since now; 0 when pid is 0 or unreadable.
func procCPUSince(pid int, withKids bool) func() time.Duration {
	if pid == 0 {
		return func() time.Duration { return 0 }
	}
	c0, ok := procCPU(pid, withKids)
	return func() time.Duration {
		c1, ok1 := procCPU(pid, withKids)
		if !ok || !ok1 {
			return 0
		}
		return c1 - c0
	}
}

// percentiles returns the q-quantiles (nearest rank) of ds in milliseconds.
func percentiles(ds []time.Duration, qs ...float64) []float64 {
	out := make([]float64, len(qs))
	if len(ds) == 0 {
		return out
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	for i, q := range qs {
		k := int(math.Ceil(q*float64(len(s)))) - 1
		k = max(0, min(k, len(s)-1))
		out[i] = float64(s[k]) / float64(time.Millisecond)
	}
	return out
}

// moduleVersion is the version of module path linked into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				if m.Replace != nil {
					return m.Replace.Version
				}
				return m.Version
			}
		}
	}
	return ""
}

// emit prints r as one JSON line on stdout.
func emit(r map[string]any) {
	r["go"] = runtime.Version()
	r["gomaxprocs"] = runtime.GOMAXPROCS(0)
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(b, '\n'))
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// startCPUProfile writes a CPU profile of the whole run to $PEER_CPUPROFILE,
// when set; the returned function stops it.
func startCPUProfile() func() {
	path := os.Getenv("PEER_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
