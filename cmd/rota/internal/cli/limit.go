package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/internal/rules/check"
)

// limitCommand is rota limit: it sets the bounds on running jobs and the
// rates of starts of a type or of a group, keeping their other settings.
func limitCommand(g *globals) *cobra.Command {
	var typ, group, rateFlag string
	var maxRunning, groupMaxRunning, burst int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "limit (--type TYPE | --group GROUP [--type TYPE]) [--max-running N] [--group-max-running N] [--timeout D] [--rate N/s|N/m|N/h|none] [--burst N]",
		Short: "Bound the running jobs and the rate of starts of a type or a group",
		Long: `limit sets how many jobs may run at once, across every worker and node:
with --type alone, --max-running bounds the whole type (all groups together)
and --group-max-running bounds each of its groups; with --group, --max-running
bounds the group's jobs of one type (--type) or of every type together.
0 removes a bound. A job starts only within every bound that applies to it.

With --type alone, --timeout sets the type's default run timeout, for its
jobs without one of their own (rota add --timeout wins): a run that lasts
longer is stopped and counts as a failed attempt. It applies when a job
starts, so it reaches the jobs already waiting. 0 removes it.

--rate sets how many jobs may start per second, minute or hour ("50/s",
"100/m", "10/h"), with --burst of them at once (default: N for a rate per
second, else 1), across every node: of the whole type with --type alone,
shared between its groups by their weights; of the group with --group (of
one type, or of every type together). Jobs over a rate wait for a token,
they do not fail. --rate none removes a rate.

It changes only the settings given and keeps the others. Without a flag it
prints the current ones.`,
		Example: "  rota limit --type email.send --max-running 20\n  rota limit --type report.build --group-max-running 2 --timeout 10m\n  rota limit --group acme --type report.build --max-running 5\n  rota limit --type sms.send --rate 50/s --burst 100\n  rota limit --group acme --type sms.send --rate 10/m",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			byGroup := cmd.Flags().Changed("group")
			setMax, setGroupMax := cmd.Flags().Changed("max-running"), cmd.Flags().Changed("group-max-running")
			setTimeout := cmd.Flags().Changed("timeout")
			setRate, setBurst := cmd.Flags().Changed("rate"), cmd.Flags().Changed("burst")
			var rate rota.Rate
			if setRate && rateFlag != "none" {
				var err error
				if rate, err = rota.ParseRate(rateFlag); err != nil {
					return usageErrorf("--rate: want N/s, N/m or N/h with N from 1 to %d, or none; got %q", rota.MaxRate, rateFlag)
				}
			}
			switch {
			case burst < 0:
				return usageErrorf("--burst must not be negative (0: the default)")
			case typ == "" && !byGroup:
				return usageErrorf("give --type, --group, or both")
			case byGroup && setGroupMax:
				return usageErrorf("--group-max-running is a type's setting: give it with --type alone")
			case byGroup && setTimeout:
				return usageErrorf("--timeout is a type's setting: give it with --type alone")
			case timeout < 0:
				return usageErrorf("--timeout %v must not be negative (0 removes it)", timeout)
			case maxRunning < 0 || groupMaxRunning < 0:
				return usageErrorf("a bound must not be negative (0 removes it)")
			}
			if typ != "" {
				if err := check.Type(typ); err != nil {
					return usageError{err}
				}
			}
			if err := checkName("--group", group); err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx := cmd.Context()
			var out any
			if byGroup {
				gc, err := groupConfig(ctx, c, group, typ)
				if err != nil {
					return g.explain(err)
				}
				if setMax {
					gc.MaxRunning = maxRunning
				}
				setRates(&gc.Rate, &gc.Burst, setRate, rate, setBurst, burst)
				if setMax || setRate || setBurst {
					if err := c.SetGroupConfig(ctx, gc); err != nil {
						return g.explain(err)
					}
				}
				what := fmt.Sprintf("group %q", group)
				if typ != "" {
					what += " of type " + typ
				}
				out = map[string]any{"group": group, "type": typ, "max_running": gc.MaxRunning, "rate": gc.Rate.String(), "burst": gc.Rate.BurstOf(gc.Burst)}
				if !g.json {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: max running %s, rate %s\n", what, bound(gc.MaxRunning), rateText(gc.Rate, gc.Burst))
				}
			} else {
				tc, err := typeConfig(ctx, c, typ)
				if err != nil {
					return g.explain(err)
				}
				if setMax {
					tc.MaxRunning = maxRunning
				}
				if setGroupMax {
					tc.GroupMaxRunning = groupMaxRunning
				}
				if setTimeout {
					tc.Timeout = timeout
				}
				setRates(&tc.Rate, &tc.Burst, setRate, rate, setBurst, burst)
				if setMax || setGroupMax || setTimeout || setRate || setBurst {
					if err := c.SetTypeConfig(ctx, tc); err != nil {
						return g.explain(err)
					}
				}
				out = map[string]any{"type": typ, "max_running": tc.MaxRunning, "group_max_running": tc.GroupMaxRunning,
					"timeout": tc.Timeout.String(), "rate": tc.Rate.String(), "burst": tc.Rate.BurstOf(tc.Burst)}
				if !g.json {
					runTimeout := "none"
					if tc.Timeout > 0 {
						runTimeout = tc.Timeout.String()
					}
					fmt.Fprintf(cmd.OutOrStdout(), "type %s: max running %s, per group %s, run timeout %s, rate %s\n", typ, bound(tc.MaxRunning), bound(tc.GroupMaxRunning),
						runTimeout, rateText(tc.Rate, tc.Burst))
				}
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&typ, "type", "", "the type")
	cmd.Flags().StringVar(&group, "group", "", `the group ("" is the default group)`)
	cmd.Flags().IntVar(&maxRunning, "max-running", 0, "at most this many running jobs of the type (or of the group); 0: no bound")
	cmd.Flags().IntVar(&groupMaxRunning, "group-max-running", 0, "at most this many running jobs per group of the type; 0: no bound")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "the type's default run timeout, for its jobs without their own (e.g. 30s, 10m); 0: none")
	cmd.Flags().StringVar(&rateFlag, "rate", "", `at most this many jobs start per second, minute or hour: N/s, N/m or N/h; "none" removes the rate`)
	cmd.Flags().IntVar(&burst, "burst", 0, "at most this many jobs start at once under the rate; 0: the default (N for N/s, else 1)")
	return cmd
}

// setRates applies --rate and --burst to a setting: a new rate keeps the
// burst unless --burst is given, and no rate has no burst.
func setRates(rate *rota.Rate, burst *int, setRate bool, newRate rota.Rate, setBurst bool, newBurst int) {
	if setRate {
		*rate = newRate
	}
	if setBurst {
		*burst = newBurst
	}
	if rate.IsZero() {
		*burst = 0
	}
}

// rateText prints a rate with its burst, or none.
func rateText(r rota.Rate, burst int) string {
	if r.IsZero() {
		return "none"
	}
	return fmt.Sprintf("%s (burst %d)", r, r.BurstOf(burst))
}

// bound prints a bound on running jobs, 0 as none.
func bound(n int) string {
	if n == 0 {
		return "no bound"
	}
	return fmt.Sprint(n)
}
