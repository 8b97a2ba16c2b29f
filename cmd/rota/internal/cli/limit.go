package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/internal/rules/check"
)

// limitCommand is rota limit: it sets the bounds on running jobs of a
// type or of a group, keeping their other settings.
func limitCommand(g *globals) *cobra.Command {
	var typ, group string
	var maxRunning, groupMaxRunning int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "limit (--type TYPE | --group GROUP [--type TYPE]) [--max-running N] [--group-max-running N] [--timeout D]",
		Short: "Bound the running jobs of a type or a group",
		Long: `limit sets how many jobs may run at once, across every worker and node:
with --type alone, --max-running bounds the whole type (all groups together)
and --group-max-running bounds each of its groups; with --group, --max-running
bounds the group's jobs of one type (--type) or of every type together.
0 removes a bound. A job starts only within every bound that applies to it.

With --type alone, --timeout sets the type's default run timeout, for its
jobs without one of their own (rota add --timeout wins): a run that lasts
longer is stopped and counts as a failed attempt. It applies when a job
starts, so it reaches the jobs already waiting. 0 removes it.

It changes only the bounds given and keeps the other settings. Without a
bound flag it prints the current ones.`,
		Example: "  rota limit --type email.send --max-running 20\n  rota limit --type report.build --group-max-running 2 --timeout 10m\n  rota limit --group acme --type report.build --max-running 5",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			byGroup := cmd.Flags().Changed("group")
			setMax, setGroupMax := cmd.Flags().Changed("max-running"), cmd.Flags().Changed("group-max-running")
			setTimeout := cmd.Flags().Changed("timeout")
			switch {
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
					if err := c.SetGroupConfig(ctx, gc); err != nil {
						return g.explain(err)
					}
				}
				what := fmt.Sprintf("group %q", group)
				if typ != "" {
					what += " of type " + typ
				}
				out = map[string]any{"group": group, "type": typ, "max_running": gc.MaxRunning}
				if !g.json {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: max running %s\n", what, bound(gc.MaxRunning))
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
				if setMax || setGroupMax || setTimeout {
					if err := c.SetTypeConfig(ctx, tc); err != nil {
						return g.explain(err)
					}
				}
				out = map[string]any{"type": typ, "max_running": tc.MaxRunning, "group_max_running": tc.GroupMaxRunning,
					"timeout": tc.Timeout.String()}
				if !g.json {
					runTimeout := "none"
					if tc.Timeout > 0 {
						runTimeout = tc.Timeout.String()
					}
					fmt.Fprintf(cmd.OutOrStdout(), "type %s: max running %s, per group %s, run timeout %s\n", typ, bound(tc.MaxRunning), bound(tc.GroupMaxRunning), runTimeout)
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
	return cmd
}

// bound prints a bound on running jobs, 0 as none.
func bound(n int) string {
	if n == 0 {
		return "no bound"
	}
	return fmt.Sprint(n)
}
