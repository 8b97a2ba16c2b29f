package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/internal/bench"
)

func benchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure rota on this machine",
		Long:  "bench runs rota's benchmark workloads on this machine and reports each with a baseline measured in the same run.",
	}
	cmd.AddCommand(benchFairnessCommand())
	return cmd
}

func benchFairnessCommand() *cobra.Command {
	cfg := bench.DefaultFairness
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "fairness",
		Short: "One tenant floods the queue; do 99 small tenants still get through?",
		Long: `fairness adds --big jobs of one group, then --small groups of --small-jobs
jobs each, and runs them with --workers handlers that each take --work. It runs
twice on fresh embedded databases: with groups (rota's weighted round robin)
and with every job in one queue (plain FIFO order, the baseline). It reports
how far the big group had got when the small groups' last job finished, and
Jain's fairness index of the jobs each group started while all were
backlogged (1 is even; 1/groups is one group taking everything).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Big <= 0 || cfg.Small <= 0 || cfg.SmallJobs <= 0 || cfg.Workers <= 0 || cfg.Work < 0 {
				return fmt.Errorf("--big, --small, --small-jobs and --workers must be positive, --work not negative")
			}
			out := cmd.OutOrStdout()
			run := cfg
			if !asJSON {
				run.Progress = benchProgress(cmd.ErrOrStderr())
			}
			res, err := bench.Fairness(cmd.Context(), run)
			if !asJSON {
				fmt.Fprint(cmd.ErrOrStderr(), "\r\033[K")
			}
			if err != nil {
				return err
			}
			m := bench.DescribeMachine()
			if asJSON {
				enc := json.NewEncoder(out)
				for _, r := range res {
					if err := enc.Encode(struct {
						bench.FairnessResult
						Machine bench.Machine `json:"machine"`
					}{r, m}); err != nil {
						return err
					}
				}
				return nil
			}
			fmt.Fprintf(out, "machine: %s, %d cores, %s\n", m.CPU, m.Cores, m.GoVersion)
			fmt.Fprintf(out, "workload: %d jobs of one group, then %d groups of %d; %d workers; %v per job; SQLite, in process\n\n",
				cfg.Big, cfg.Small, cfg.SmallJobs, cfg.Workers, cfg.Work)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "order\tjobs/s\tsmall groups done at\tbig group done then\tJain (all backlogged)\tbig group's share\t")
			for _, r := range res {
				fmt.Fprintf(tw, "%s\t%.0f\t%.2fs\t%.1f%%\t%.3f\t%.1f%%\t\n", r.Mode, r.JobsPerSec, r.SmallDoneSeconds,
					100*r.BigDoneFractionWhenSmallDone, r.JainIndex, 100*r.BigShare)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Big, "big", cfg.Big, "jobs of the big group")
	f.IntVar(&cfg.Small, "small", cfg.Small, "number of small groups")
	f.IntVar(&cfg.SmallJobs, "small-jobs", cfg.SmallJobs, "jobs of each small group")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "handlers running at once")
	f.DurationVar(&cfg.Work, "work", cfg.Work, "how long each job takes")
	f.StringVar(&cfg.Dir, "dir", "", "directory for the benchmark's databases (default: a temporary one)")
	f.BoolVar(&asJSON, "json", false, "one JSON object per run, for machines")
	return cmd
}

// benchProgress draws a bar on w, updated in place.
func benchProgress(w io.Writer) func(done, total int) {
	if fi, err := os.Stderr.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil // not a terminal
	}
	return func(done, total int) {
		const width = 40
		n := width * done / max(total, 1)
		fmt.Fprintf(w, "\r[%s%s] %d/%d", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total)
	}
}
