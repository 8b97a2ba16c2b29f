package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/cmd/rota/internal/bench"
	"github.com/rotajobs/rota/store"
)

// benchFlags are the flags every bench workload takes.
type benchFlags struct {
	store, via, dsn, dir string
	asJSON               bool
	runs                 int
}

func (f *benchFlags) options(cmd *cobra.Command, label string) (bench.Options, error) {
	o := bench.Options{Store: f.store, Via: f.via, DSN: f.dsn, Dir: f.dir,
		OpenPostgres: store.Open}
	if o.DSN == "" {
		o.DSN = os.Getenv("ROTA_TEST_POSTGRES")
	}
	if f.runs <= 0 {
		return o, fmt.Errorf("--runs must be positive")
	}
	if !f.asJSON {
		o.Progress = benchProgress(cmd.ErrOrStderr(), label)
	}
	return o, o.Check()
}

func benchCommand() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure rota on this machine",
		Long: `bench runs rota's benchmark workloads on this machine: the real store, client
and worker runtime, each figure with a baseline measured in the same run where
one makes sense. Each workload uses fresh databases (SQLite files in --dir, or a
temporary directory), or, with --store postgres, job types of its own in the
database --dsn names (default $ROTA_TEST_POSTGRES).

--via http runs the workers (and producers) through a real HTTP server on a
loopback port with the remote client, as a separate worker process would.`,
	}
	p := cmd.PersistentFlags()
	p.StringVar(&f.store, "store", "sqlite", "sqlite or postgres")
	p.StringVar(&f.via, "via", "inprocess", "inprocess or http")
	p.StringVar(&f.dsn, "dsn", "", "PostgreSQL database for --store postgres (default $ROTA_TEST_POSTGRES)")
	p.StringVar(&f.dir, "dir", "", "directory for the benchmark's SQLite files (default: a temporary one)")
	p.BoolVar(&f.asJSON, "json", false, "one JSON object per workload run, for machines")
	p.IntVar(&f.runs, "runs", 1, "run each workload this many times (the table shows medians)")
	cmd.AddCommand(benchDrainCommand(f), benchSteadyCommand(f), benchBacklogCommand(f), benchMemoryCommand(f), benchFairnessCommand(f), benchFanoutCommand(f), benchFaninCommand(f), benchRecurringCommand(f), benchRateCommand(f), benchBatchCommand(f))
	return cmd
}

func benchDrainCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultDrain
	noBaseline := false
	cmd := &cobra.Command{
		Use:   "drain",
		Short: "Drain pre-added no-op jobs with the worker runtime (jobs/s)",
		Long: `drain adds --jobs no-op jobs (not timed), then runs one worker with
--concurrency slots until every job's completion has committed, which on SQLite
(synchronous=FULL) means it is on disk. Baselines in the same run: on SQLite,
raw batched SQL claim+complete on the same kind of database file (the ceiling);
with --via http, the same drain in process; with --nodes N (PostgreSQL), the
same drain on one node; with --rate or --max-running, the same drain without
them (the ratio is what keeping them costs when they do not bind).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd, "drain")
			if err != nil {
				return err
			}
			cfg.Baseline = !noBaseline
			return runBench(cmd, f, func(ctx context.Context) ([]bench.Result, error) {
				return bench.DrainWithBaselines(ctx, o, cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "jobs to drain")
	fl.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "the worker's slots (jobs running at once)")
	fl.BoolVar(&noBaseline, "no-baseline", false, "skip the baselines")
	fl.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured part (the last drain run) to this file")
	fl.IntVar(&cfg.Nodes, "nodes", 1, "nodes draining together, each with its own store on the --dsn database and a worker (PostgreSQL)")
	fl.DurationVar(&cfg.Work, "work", 0, "how long each job's handler sleeps (0: no-op jobs)")
	fl.IntVar(&cfg.Rate, "rate", 0, "set this rate per second (and burst) on the drained type, to measure its cost when it does not bind (0: none)")
	fl.IntVar(&cfg.MaxRunning, "max-running", 0, "bound the drained type's running jobs, to measure the bound's cost when it does not bind (0: none)")
	return cmd
}

func benchRateCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultRate
	cmd := &cobra.Command{
		Use:   "rate",
		Short: "A type at --rate jobs/s on --nodes nodes: the rate achieved, and how late jobs start after their token",
		Long: `rate sets a type's rate to --rate jobs a second (with --burst, default the
rate), adds more due jobs than it allows in --duration, and runs them with no-op
handlers on --nodes nodes (PostgreSQL: each node a store of its own on the --dsn
database with its own worker of --concurrency slots). It reports the rate
achieved after the burst against the set one, the most jobs started in any one
second (never more than burst + rate), and how late each job started after its
token came (p50, p99, p99.9, max): how promptly acceptors wake for a token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd, "rate")
			if err != nil {
				return err
			}
			return runBench(cmd, f, func(ctx context.Context) ([]bench.Result, error) {
				r, err := bench.Rate(ctx, o, cfg)
				return []bench.Result{r}, err
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Rate, "rate", cfg.Rate, "the type's rate, jobs a second")
	fl.IntVar(&cfg.Burst, "burst", cfg.Burst, "the rate's burst (0: the rate)")
	fl.DurationVar(&cfg.Duration, "duration", cfg.Duration, "the measured span")
	fl.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "nodes running the jobs (more than one: PostgreSQL)")
	fl.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "each node's worker slots")
	return cmd
}

func benchRecurringCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultRecurring
	cmd := &cobra.Command{
		Use:   "recurring",
		Short: "--jobs recurring jobs due every --interval on --nodes nodes: slots run, missed, twice, and how late",
		Long: `recurring adds --jobs recurring jobs ("SCHEDULED, +1 SECONDS" for the default
--interval), all first due at the same whole second, and runs them with no-op
handlers on --nodes nodes (PostgreSQL: each node a store of its own on the --dsn
database with its own worker of --concurrency slots) for --duration. It reports
the runs per second of the slots in that span, the slots that never ran and
any that ran twice, and how late each run started after its slot (p50, p99,
p99.9, max).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd, "recurring")
			if err != nil {
				return err
			}
			return runBench(cmd, f, func(ctx context.Context) ([]bench.Result, error) {
				r, err := bench.Recurring(ctx, o, cfg)
				return []bench.Result{r}, err
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "recurring jobs")
	fl.DurationVar(&cfg.Interval, "interval", cfg.Interval, "each job's interval (whole seconds)")
	fl.DurationVar(&cfg.Duration, "duration", cfg.Duration, "the measured span")
	fl.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "nodes running the jobs (more than one: PostgreSQL)")
	fl.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "each node's worker slots")
	return cmd
}

func benchSteadyCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultSteady
	noBaseline := false
	cmd := &cobra.Command{
		Use:   "steady",
		Short: "Add jobs one at a time at a fixed rate; enqueue→start and →finish latency",
		Long: `steady adds jobs one at a time at --rate per second for --duration (an open
loop: each add is sent when the clock says, whether or not earlier ones have
been answered) while one worker with --concurrency slots runs them. It reports
the latency from the producer's add call to the handler's start, and to the
commit of the job's completion (p50, p99, p99.9), and the achieved rate. With
--via http, it runs in process first as the baseline.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd, "steady")
			if err != nil {
				return err
			}
			return runBench(cmd, f, func(ctx context.Context) ([]bench.Result, error) {
				return bench.SteadyWithBaseline(ctx, o, cfg, !noBaseline)
			})
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&cfg.Rate, "rate", cfg.Rate, "jobs added per second")
	fl.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long jobs arrive (after a warm-up of --warmup)")
	fl.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "arrivals before the measured ones, not counted")
	fl.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "the worker's slots")
	fl.BoolVar(&noBaseline, "no-baseline", false, "with --via http, skip the in-process run")
	fl.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured arrivals (the last run) to this file")
	return cmd
}

func benchBacklogCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultBacklog
	var sizes string
	with10M := false
	cmd := &cobra.Command{
		Use:   "backlog",
		Short: "Accept+finish cost per job with 10k, 100k and 1M jobs queued",
		Long: `backlog queues each of --sizes due jobs in a fresh store, then accepts and
finishes --measure of them in batches of --batch, adding as many new jobs after
each batch (not timed) so that the backlog stays the same. It reports the cost
per job at each size and its ratio to the first size's. --with-10m adds 10M
(several GB of disk, and minutes to fill).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd, "backlog")
			if err != nil {
				return err
			}
			cfg.Sizes = nil
			for _, s := range strings.Split(sizes, ",") {
				n, err := parseCount(strings.TrimSpace(s))
				if err != nil || n <= 0 {
					return fmt.Errorf("--sizes: %q is not a positive count", s)
				}
				cfg.Sizes = append(cfg.Sizes, n)
			}
			if with10M {
				cfg.Sizes = append(cfg.Sizes, 10_000_000)
			}
			return runBench(cmd, f, func(ctx context.Context) ([]bench.Result, error) {
				return bench.Backlog(ctx, o, cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sizes, "sizes", "10k,100k,1M", "backlog sizes, comma-separated (k and M suffixes)")
	fl.BoolVar(&with10M, "with-10m", false, "also measure 10M queued jobs")
	fl.IntVar(&cfg.Measure, "measure", cfg.Measure, "jobs accepted and finished at each size")
	fl.IntVar(&cfg.Batch, "batch", cfg.Batch, "jobs per accept")
	return cmd
}

func parseCount(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1_000, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1_000_000, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	return n * mult, err
}

func benchFanoutCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultFanout
	cmd := &cobra.Command{
		Use:   "fanout",
		Short: "A parent job adds --children children, waits for them, and sees them all",
		Long: `fanout adds one parent job; a worker with --concurrency slots runs it: the
parent adds --children children (in adds of 1,000) and completes, so it waits
for them; the children run (no-ops); the parent runs again and checks that it
sees every child. It reports the children per second, from the worker's start
to the parent's last completion.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd, "fanout")
			if err != nil {
				return err
			}
			return runBench(cmd, f, func(ctx context.Context) ([]bench.Result, error) {
				r, err := bench.Fanout(ctx, o, cfg)
				return []bench.Result{r}, err
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Children, "children", cfg.Children, "children of the parent")
	fl.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	fl.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "the worker's slots")
	return cmd
}

func benchFaninCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultFanin
	cmd := &cobra.Command{
		Use:   "fanin",
		Short: "A fan-out/fan-in of dependencies: one job, --jobs jobs after it, one job after those",
		Long: `fanin measures dependencies (rota add --after) against a plain drain of as
many jobs in the same run: first --jobs+2 jobs without dependencies are added
and drained by a worker with --concurrency slots; then a workflow is added, a
root job, --jobs jobs each after the root, and a sink after all of them, and
the same worker drains it; the sink checks that it sees every outcome. It
reports both rates (jobs per second from the worker's start to the last
completion) and the workflow's over the plain one's (ratio), with the CPU
time per job of each: run it at --jobs 1000, 10000 and 100000 to see that a
job's cost stays flat whatever the fan-in.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd, "fanin")
			if err != nil {
				return err
			}
			return runBench(cmd, f, func(ctx context.Context) ([]bench.Result, error) {
				return bench.Fanin(ctx, o, cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "jobs after the root, and before the sink")
	fl.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the workflow's drain to this file")
	fl.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "the worker's slots")
	return cmd
}

func benchMemoryCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultMemory
	inProcess := false
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Resident memory of `rota serve` with 1M jobs queued",
		Long: `memory queues --jobs jobs, starts this binary's "rota serve" on them as a
child process, accepts and finishes --work of them through it over HTTP, and
reads the child's resident set size (VmRSS) and its peak (VmHWM) from /proc.
With --in-process it measures the growth of this process's resident set
instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd, "memory")
			if err != nil {
				return err
			}
			if !inProcess {
				if cfg.Exe, err = os.Executable(); err != nil {
					return err
				}
			}
			return runBench(cmd, f, func(ctx context.Context) ([]bench.Result, error) {
				r, err := bench.Memory(ctx, o, cfg)
				return []bench.Result{r}, err
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "jobs queued")
	fl.IntVar(&cfg.Work, "work", cfg.Work, "jobs accepted and finished through the server before measuring")
	fl.BoolVar(&inProcess, "in-process", false, "measure this process instead of a rota serve child")
	return cmd
}

func benchFairnessCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultFairness
	cmd := &cobra.Command{
		Use:   "fairness",
		Short: "One tenant floods the queue; do 99 small tenants still get through?",
		Long: `fairness adds --big jobs of one group, then --small groups of --small-jobs
jobs each, and runs them with --workers handlers that each take --work. It runs
twice on fresh databases: with groups (rota's weighted round robin) and with
every job in one queue (plain FIFO order, the baseline). It reports how far the
big group had got when the small groups' last job finished, and Jain's fairness
index of the jobs each group started while all were backlogged (1 is even;
1/groups is one group taking everything).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Big <= 0 || cfg.Small <= 0 || cfg.SmallJobs <= 0 || cfg.Workers <= 0 || cfg.Work < 0 {
				return fmt.Errorf("--big, --small, --small-jobs and --workers must be positive, --work not negative")
			}
			o, err := f.options(cmd, "fairness")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			m := bench.DescribeMachine()
			var all []bench.FairnessResult
			for run := 1; run <= f.runs; run++ {
				res, err := bench.Fairness(cmd.Context(), o, cfg)
				clearProgress(cmd, f)
				if err != nil {
					return err
				}
				for _, r := range res {
					if f.asJSON {
						if err := json.NewEncoder(out).Encode(struct {
							bench.FairnessResult
							Run     int           `json:"run"`
							Machine bench.Machine `json:"machine"`
						}{r, run, m}); err != nil {
							return err
						}
					}
				}
				all = append(all, res...)
			}
			if f.asJSON {
				return nil
			}
			fmt.Fprintf(out, "machine: %s, %d cores, %s\n", m.CPU, m.Cores, m.GoVersion)
			if len(all) > 0 {
				fmt.Fprintf(out, "store: %s (%s)\n", all[0].Version, all[0].Fsync)
			}
			fmt.Fprintf(out, "workload: %d jobs of one group, then %d groups of %d; %d workers; %v per job; %s, %s\n\n",
				cfg.Big, cfg.Small, cfg.SmallJobs, cfg.Workers, cfg.Work, o.Store, o.Via)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "order\tjobs/s\tsmall groups done at\tbig group done then\tJain (all backlogged)\tbig group's share\t")
			for _, r := range all {
				fmt.Fprintf(tw, "%s\t%.0f\t%.2fs\t%.1f%%\t%.3f\t%.1f%%\t\n", r.Mode, r.JobsPerSec, r.SmallDoneSeconds,
					100*r.BigDoneFractionWhenSmallDone, r.JainIndex, 100*r.BigShare)
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Big, "big", cfg.Big, "jobs of the big group")
	fl.IntVar(&cfg.Small, "small", cfg.Small, "number of small groups")
	fl.IntVar(&cfg.SmallJobs, "small-jobs", cfg.SmallJobs, "jobs of each small group")
	fl.IntVar(&cfg.Workers, "workers", cfg.Workers, "handlers running at once")
	fl.DurationVar(&cfg.Work, "work", cfg.Work, "how long each job takes")
	return cmd
}

// runBench runs a workload --runs times, printing JSON as it goes or a
// table at the end.
func runBench(cmd *cobra.Command, f *benchFlags, run func(ctx context.Context) ([]bench.Result, error)) error {
	out := cmd.OutOrStdout()
	m := bench.DescribeMachine()
	var all []bench.Result
	for i := 1; i <= f.runs; i++ {
		res, err := run(cmd.Context())
		clearProgress(cmd, f)
		if err != nil {
			return err
		}
		for _, r := range res {
			r.Run = i
			if f.asJSON {
				if err := json.NewEncoder(out).Encode(struct {
					bench.Result
					Machine bench.Machine `json:"machine"`
				}{r, m}); err != nil {
					return err
				}
			}
			all = append(all, r)
		}
	}
	if f.asJSON {
		return nil
	}
	fmt.Fprintf(out, "machine: %s, %d cores, %s, %s\n", m.CPU, m.Cores, m.GoVersion, m.OS)
	for _, r := range all {
		if r.Version != "" {
			fmt.Fprintf(out, "store: %s; %s\n", r.Version, r.Fsync)
			break
		}
	}
	fmt.Fprintln(out)
	return benchTable(out, all, f.runs)
}

// benchTable prints one row per result and, with several runs, the median
// of each row over the runs.
func benchTable(w io.Writer, rs []bench.Result, runs int) error {
	if len(rs) == 0 {
		return nil
	}
	type col struct {
		name string
		get  func(r bench.Result) float64
		fmt  string
	}
	var cols []col
	switch rs[0].Workload {
	case "drain", "batch", "fanin-plain", "fanin":
		// Drains of a batch or a workflow, beside a plain one.
		cols = []col{
			{"nodes", func(r bench.Result) float64 { return float64(r.Nodes) }, "%.0f"},
			{"jobs", func(r bench.Result) float64 { return float64(r.Jobs) }, "%.0f"},
			{"slots", func(r bench.Result) float64 { return float64(r.Concurrency) }, "%.0f"},
			{"seconds", func(r bench.Result) float64 { return r.Seconds }, "%.2f"},
			{"jobs/s", func(r bench.Result) float64 { return r.JobsPerSec }, "%.0f"},
			{"CPU µs/job", func(r bench.Result) float64 { return r.CPUUsPerJob }, "%.1f"},
			{"DB CPU µs/job", func(r bench.Result) float64 { return r.ServerCPUUsPerJob }, "%.1f"},
			{"ratio", func(r bench.Result) float64 { return r.Ratio }, "%.2f"},
			{"CPU pressure", func(r bench.Result) float64 { return r.CPUPressure }, "%.2f"},
		}
	case "steady":
		cols = []col{
			{"rate/s", func(r bench.Result) float64 { return r.JobsPerSec }, "%.0f"},
			{"start p50 ms", func(r bench.Result) float64 { return r.P50Ms }, "%.2f"},
			{"p99", func(r bench.Result) float64 { return r.P99Ms }, "%.2f"},
			{"p99.9", func(r bench.Result) float64 { return r.P999Ms }, "%.2f"},
			{"finish p50 ms", func(r bench.Result) float64 { return r.FinishP50Ms }, "%.2f"},
			{"p99", func(r bench.Result) float64 { return r.FinishP99Ms }, "%.2f"},
			{"p99.9", func(r bench.Result) float64 { return r.FinishP999Ms }, "%.2f"},
			{"add p50 ms", func(r bench.Result) float64 { return r.AddP50Ms }, "%.2f"},
			{"add p99", func(r bench.Result) float64 { return r.AddP99Ms }, "%.2f"},
			{"ratio", func(r bench.Result) float64 { return r.Ratio }, "%.2f"},
			{"CPU pressure", func(r bench.Result) float64 { return r.CPUPressure }, "%.2f"},
		}
	case "backlog":
		cols = []col{
			{"queued", func(r bench.Result) float64 { return float64(r.Backlog) }, "%.0f"},
			{"µs/job", func(r bench.Result) float64 { return r.MicrosPerJob }, "%.2f"},
			{"CPU µs/job", func(r bench.Result) float64 { return r.CPUUsPerJob }, "%.2f"},
			{"accept µs/call", func(r bench.Result) float64 { return r.AcceptCallUs }, "%.0f"},
			{"jobs/s", func(r bench.Result) float64 { return r.JobsPerSec }, "%.0f"},
			{"CPU ratio to first", func(r bench.Result) float64 { return r.Ratio }, "%.2f"},
			{"fill jobs/s", func(r bench.Result) float64 { return r.FillJobsPerSec }, "%.0f"},
			{"CPU pressure", func(r bench.Result) float64 { return r.CPUPressure }, "%.2f"},
		}
	case "fanout":
		cols = []col{
			{"children", func(r bench.Result) float64 { return float64(r.Jobs) }, "%.0f"},
			{"slots", func(r bench.Result) float64 { return float64(r.Concurrency) }, "%.0f"},
			{"seconds", func(r bench.Result) float64 { return r.Seconds }, "%.2f"},
			{"children/s", func(r bench.Result) float64 { return r.JobsPerSec }, "%.0f"},
			{"CPU µs/child", func(r bench.Result) float64 { return r.CPUUsPerJob }, "%.1f"},
		}
	case "recurring":
		cols = []col{
			{"nodes", func(r bench.Result) float64 { return float64(r.Nodes) }, "%.0f"},
			{"runs", func(r bench.Result) float64 { return float64(r.Jobs) }, "%.0f"},
			{"runs/s", func(r bench.Result) float64 { return r.JobsPerSec }, "%.0f"},
			{"missed", func(r bench.Result) float64 { return float64(r.MissedSlots) }, "%.0f"},
			{"twice", func(r bench.Result) float64 { return float64(r.Duplicates) }, "%.0f"},
			{"late p50 ms", func(r bench.Result) float64 { return r.P50Ms }, "%.2f"},
			{"p99", func(r bench.Result) float64 { return r.P99Ms }, "%.2f"},
			{"p99.9", func(r bench.Result) float64 { return r.P999Ms }, "%.2f"},
			{"max", func(r bench.Result) float64 { return r.MaxMs }, "%.2f"},
			{"CPU µs/run", func(r bench.Result) float64 { return r.CPUUsPerJob }, "%.1f"},
			{"CPU pressure", func(r bench.Result) float64 { return r.CPUPressure }, "%.2f"},
		}
	case "rate":
		cols = []col{
			{"nodes", func(r bench.Result) float64 { return float64(r.Nodes) }, "%.0f"},
			{"set/s", func(r bench.Result) float64 { return r.TargetRate }, "%.0f"},
			{"achieved/s", func(r bench.Result) float64 { return r.JobsPerSec }, "%.1f"},
			{"most in 1s", func(r bench.Result) float64 { return float64(r.MostInASecond) }, "%.0f"},
			{"achieved ÷ set", func(r bench.Result) float64 { return r.Ratio }, "%.3f"},
			{"late p50 ms", func(r bench.Result) float64 { return r.P50Ms }, "%.2f"},
			{"p99", func(r bench.Result) float64 { return r.P99Ms }, "%.2f"},
			{"max", func(r bench.Result) float64 { return r.MaxMs }, "%.2f"},
			{"CPU µs/job", func(r bench.Result) float64 { return r.CPUUsPerJob }, "%.1f"},
			{"CPU pressure", func(r bench.Result) float64 { return r.CPUPressure }, "%.2f"},
		}
	case "memory":
		cols = []col{
			{"queued", func(r bench.Result) float64 { return float64(r.Jobs) }, "%.0f"},
			{"RSS MB", func(r bench.Result) float64 { return r.RSSMB }, "%.1f"},
			{"peak MB", func(r bench.Result) float64 { return r.PeakRSSMB }, "%.1f"},
			{"idle MB", func(r bench.Result) float64 { return r.IdleRSSMB }, "%.1f"},
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "workload\tstore\tvia\trun\t")
	for _, c := range cols {
		fmt.Fprint(tw, c.name+"\t")
	}
	fmt.Fprintln(tw)
	row := func(r bench.Result, run string, get func(c col) float64) {
		name := r.Workload
		if r.FlowControl != "" {
			name += " (" + r.FlowControl + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t", name, r.Store, r.Via, run)
		for _, c := range cols {
			// Counts of faults read 0, not "does not apply".
			if v := get(c); v != 0 || c.name == "missed" || c.name == "twice" {
				fmt.Fprintf(tw, c.fmt+"\t", v)
			} else {
				fmt.Fprint(tw, "–\t")
			}
		}
		fmt.Fprintln(tw)
	}
	for _, r := range rs {
		row(r, strconv.Itoa(r.Run), func(c col) float64 { return c.get(r) })
	}
	if runs > 1 {
		// Rows of one run, in order, line up with the other runs' rows.
		per := len(rs) / runs
		for k := 0; k < per; k++ {
			var group []bench.Result
			for i := k; i < len(rs); i += per {
				group = append(group, rs[i])
			}
			row(group[0], "median", func(c col) float64 {
				xs := make([]float64, len(group))
				for i, r := range group {
					xs[i] = c.get(r)
				}
				return bench.Median(xs)
			})
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	said := map[string]bool{} // a workload with several sizes says each line once
	say := func(format string, args ...any) {
		if line := fmt.Sprintf(format, args...); !said[line] {
			said[line] = true
			fmt.Fprint(w, line)
		}
	}
	for _, r := range rs {
		if r.Run != 1 {
			break
		}
		if r.Baseline != "" {
			say("ratio of %s %s: against %s\n", r.Workload, r.Via, r.Baseline)
		}
		if r.Note != "" {
			say("%s %s: %s\n", r.Workload, r.Via, r.Note)
		}
		if r.Method != "" {
			say("%s: %s\n", r.Workload, r.Method)
		}
	}
	return nil
}

// benchProgress draws a bar on w, updated in place at most every 100 ms,
// when stderr is a terminal.
func benchProgress(w io.Writer, label string) func(done, total int) {
	if fi, err := os.Stderr.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil // not a terminal
	}
	var mu sync.Mutex
	var last time.Time
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); done < total && now.Sub(last) < 100*time.Millisecond {
			return
		} else {
			last = now
		}
		const width = 40
		n := width * min(done, total) / max(total, 1)
		fmt.Fprintf(w, "\r%s [%s%s] %d/%d\033[K", label, strings.Repeat("#", n), strings.Repeat(".", width-n), done, total)
	}
}

func clearProgress(cmd *cobra.Command, f *benchFlags) {
	if f.asJSON {
		return
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		fmt.Fprint(cmd.ErrOrStderr(), "\r\033[K")
	}
}

func benchBatchCommand(f *benchFlags) *cobra.Command {
	cfg := bench.DefaultBatch
	var sizes []string
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "A batch of jobs with a callback, against a plain drain of as many (jobs/s)",
		Long: `batch measures, for each of --sizes, a plain drain of that many no-op jobs,
then a batch of as many members with an on_complete callback (added open in
adds of 10,000 and closed: not timed), run by a worker with --concurrency
slots until the callback has completed. The batch's ratio is its jobs/s over
the drain's: a flat cost per member shows as a flat ratio from 1,000 to
100,000.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Sizes = cfg.Sizes[:0]
			for _, s := range sizes {
				n, err := parseCount(s)
				if err != nil || n <= 0 {
					return usageErrorf("--sizes: %q is not a positive count", s)
				}
				cfg.Sizes = append(cfg.Sizes, n)
			}
			o, err := f.options(cmd, "batch")
			if err != nil {
				return err
			}
			return runBench(cmd, f, func(ctx context.Context) ([]bench.Result, error) {
				return bench.Batch(ctx, o, cfg)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&sizes, "sizes", []string{"1000", "10000", "100000"}, "batch sizes (members), each measured against a drain of as many")
	fl.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the batches' runs to this file")
	fl.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "the worker's slots")
	return cmd
}
