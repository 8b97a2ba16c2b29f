package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
)

// depsShown is how many dependants rota get lists.
const depsShown = 20

// writeDeps prints a job's dependencies, one a line with its state, and
// its dependants (the first depsShown).
func writeDeps(w io.Writer, deps []rota.Dep, after []int64) {
	for i, d := range deps {
		name := "after:"
		if i > 0 {
			name = ""
		}
		what := d.State.String()
		switch {
		case d.Removed:
			what = "removed"
		case d.Key != "":
			what += " " + d.Type + " key " + d.Key
		default:
			what += " " + d.Type
		}
		if d.Error != "" && !d.Removed {
			what += ": " + d.Error
		}
		fmt.Fprintf(w, "%-12s %d %s\n", name, d.ID, what)
	}
	if len(after) == 0 {
		return
	}
	ids := make([]string, 0, len(after))
	for i, id := range after {
		if i == depsShown {
			ids = append(ids, "…")
			break
		}
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	fmt.Fprintf(w, "%-12s %s\n", "dependants:", strings.Join(ids, ", "))
}

func getCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a job",
		Long: `get shows one job: its state, type, key, group, attempts, times, progress,
errors, data and result, and its place in a workflow: the jobs it runs
after (with their states) and the jobs that run after it. With --json it
prints the API's answer, {"job": {...}}.`,
		Example: `  rota get 42
  rota get 42 --json | jq -r .job.state`,
		Args: exactArgs(1, "one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return byID(g, args[0], func(c *rota.Client, id int64) error {
				j, err := c.Get(cmd.Context(), id)
				if err != nil {
					return g.explain(err)
				}
				if g.json {
					return printJSON(cmd.OutOrStdout(), wire.JobResponse{Job: j})
				}
				writeJob(cmd.OutOrStdout(), j, time.Now())
				deps, after, err := c.Deps(cmd.Context(), id, depsShown+1)
				if err != nil && !errors.Is(err, rota.ErrNotFound) {
					return g.explain(err)
				}
				writeDeps(cmd.OutOrStdout(), deps, after)
				return nil
			})
		},
	}
}
