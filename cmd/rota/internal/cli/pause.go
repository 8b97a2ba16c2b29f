package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/internal/rules/check"
)

// pauseCommand is rota pause (paused true) and rota resume (false).
func pauseCommand(g *globals, paused bool) *cobra.Command {
	var typ, group string
	verb, done := "pause", "paused"
	if !paused {
		verb, done = "resume", "resumed"
	}
	cmd := &cobra.Command{
		Use:   verb + " (--type TYPE | --group GROUP [--type TYPE])",
		Short: map[bool]string{true: "Stop accepts of a type or a group", false: "Resume a paused type or group"}[paused],
		Long: map[bool]string{true: `pause stops workers from taking jobs of a type (--type) or of a group
(--group: of every type, or of one with --type). Jobs are still added and
wait; running jobs finish. Recurring jobs whose slots pass while paused
follow their missed-slot policy when resumed. "rota resume" undoes it.

It changes the type's or group's setting and keeps its other settings.`,
			false: `resume lets workers take jobs of a type or group paused with "rota pause".`}[paused],
		Example: fmt.Sprintf("  rota %s --type email.send\n  rota %s --group acme\n  rota %s --group acme --type report.build", verb, verb, verb),
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			byGroup := cmd.Flags().Changed("group")
			if typ == "" && !byGroup {
				return usageErrorf("give --type, --group, or both")
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
			what := "type " + typ
			if byGroup {
				what = fmt.Sprintf("group %q", group)
				if group == "" {
					what = "the default group"
				}
				if typ != "" {
					what += " of type " + typ
				}
				gc, err := groupConfig(ctx, c, group, typ)
				if err != nil {
					return g.explain(err)
				}
				gc.Paused = paused
				if err := c.SetGroupConfig(ctx, gc); err != nil {
					return g.explain(err)
				}
			} else {
				tc, err := typeConfig(ctx, c, typ)
				if err != nil {
					return g.explain(err)
				}
				tc.Paused = paused
				if err := c.SetTypeConfig(ctx, tc); err != nil {
					return g.explain(err)
				}
			}
			if !g.json {
				fmt.Fprintln(cmd.OutOrStdout(), what, done)
				return nil
			}
			return printJSON(cmd.OutOrStdout(), map[string]any{"paused": paused, "type": typ, "group": group})
		},
	}
	cmd.Flags().StringVar(&typ, "type", "", "the type")
	cmd.Flags().StringVar(&group, "group", "", `the group ("" is the default group)`)
	return cmd
}

// typeConfig is typ's settings as the server has them (none: the zero
// settings), for a command that changes one and keeps the others.
func typeConfig(ctx context.Context, c *rota.Client, typ string) (rota.TypeConfig, error) {
	all, err := c.TypeConfigs(ctx)
	if err != nil {
		return rota.TypeConfig{}, err
	}
	for _, x := range all {
		if x.Type == typ {
			return x, nil
		}
	}
	return rota.TypeConfig{Type: typ}, nil
}

// groupConfig is the settings of group for typ ("" for every type) as the
// server has them, for a command that changes one and keeps the others.
func groupConfig(ctx context.Context, c *rota.Client, group, typ string) (rota.GroupConfig, error) {
	all, err := c.GroupConfigs(ctx)
	if err != nil {
		return rota.GroupConfig{}, err
	}
	for _, x := range all {
		if x.Group == group && x.Type == typ {
			return x, nil
		}
	}
	return rota.GroupConfig{Group: group, Type: typ}, nil
}
