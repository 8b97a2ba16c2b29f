package bench

import (
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Result is one workload run. Fields that do not apply to a workload are
// left out of its JSON.
type Result struct {
	Workload   string  `json:"workload"`
	Store      string  `json:"store"`
	Via        string  `json:"via"`
	Run        int     `json:"run"`
	Jobs       int     `json:"jobs"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`

	Concurrency int `json:"concurrency,omitempty"` // the worker's slots
	// FlowControl is the drained type's rate and bound on running jobs,
	// when the drain set them ("rate 1000000/s, max_running 100000").
	FlowControl string `json:"flow_control,omitempty"`
	// Nodes is how many nodes (stores of their own on one PostgreSQL
	// database, each with its client and worker) ran the workload.
	Nodes int `json:"nodes,omitempty"`
	// CPUUsPerJob is this process's CPU time (user+system, all threads)
	// per job over the measured part: steadier than jobs/s on a shared
	// machine. With Via "http" it covers server and worker together.
	CPUUsPerJob float64 `json:"cpu_us_per_job,omitempty"`
	// ServerCPUUsPerJob is the database server's CPU time per job over the
	// measured part (all its processes), when it is a PostgreSQL server on
	// this machine: the other half of what a job costs the machine.
	ServerCPUUsPerJob float64 `json:"server_cpu_us_per_job,omitempty"`

	// Latency (steady): enqueue (the producer calls Add) to the handler's
	// start, and to the completion's commit.
	P50Ms        float64 `json:"p50_ms,omitempty"`
	P99Ms        float64 `json:"p99_ms,omitempty"`
	P999Ms       float64 `json:"p999_ms,omitempty"`
	MaxMs        float64 `json:"max_ms,omitempty"`
	FinishP50Ms  float64 `json:"finish_p50_ms,omitempty"`
	FinishP99Ms  float64 `json:"finish_p99_ms,omitempty"`
	FinishP999Ms float64 `json:"finish_p999_ms,omitempty"`
	AddP50Ms     float64 `json:"add_p50_ms,omitempty"` // how long an Add call took
	AddP99Ms     float64 `json:"add_p99_ms,omitempty"`
	TargetRate   float64 `json:"target_rate,omitempty"`

	// Recurring: slots in the measured span that never ran, and runs of a
	// slot beyond its first. Latency (P50Ms…) is then a run's start after
	// its slot.
	MissedSlots int `json:"missed_slots,omitempty"`
	Duplicates  int `json:"duplicates,omitempty"`

	// Rate: the most jobs started in any one-second window. JobsPerSec is
	// then the achieved rate after the burst, TargetRate the set one, and
	// latency (P50Ms…) how late a start came after its token.
	MostInASecond int `json:"most_in_a_second,omitempty"`

	// Backlog: the queued jobs while accept+finish was measured, its cost
	// per job, and the cost of one accept call.
	Backlog        int     `json:"backlog,omitempty"`
	MicrosPerJob   float64 `json:"us_per_job,omitempty"`
	AcceptCallUs   float64 `json:"accept_call_us,omitempty"`
	BatchSize      int     `json:"batch,omitempty"`
	FillJobsPerSec float64 `json:"fill_jobs_per_sec,omitempty"`

	// Memory: resident set size.
	RSSMB     float64 `json:"rss_mb,omitempty"`
	PeakRSSMB float64 `json:"peak_rss_mb,omitempty"`
	IdleRSSMB float64 `json:"idle_rss_mb,omitempty"`
	Method    string  `json:"method,omitempty"`

	// Baseline measured in the same run, and this run's figure divided by
	// it (for backlog: cost relative to the smallest backlog).
	Baseline      string  `json:"baseline,omitempty"`
	BaselineValue float64 `json:"baseline_value,omitempty"`
	Ratio         float64 `json:"ratio,omitempty"`

	// CPUPressure is the share of the measured part during which some
	// runnable task on the machine waited for a CPU (Linux PSI, "some"):
	// how much other load competed with the run. Near 0 on a quiet
	// machine.
	CPUPressure float64 `json:"cpu_pressure,omitempty"`

	Note string `json:"note,omitempty"`
	StoreInfo
}

// Machine describes where a benchmark ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
}

// DescribeMachine reads the CPU model and core count.
func DescribeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	return m
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// cpuTime is this process's CPU time so far (user+system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pressure reads the machine's CPU pressure stall total (µs) and the
// time it was read; ok is false without PSI.
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

// pressureSince returns a function giving the CPU pressure since now.
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

// Median returns the median of xs (the mean of the middle two for an even
// count).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
