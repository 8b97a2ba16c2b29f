package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// nStates is how many job states there are.
const nStates = int(rota.Waiting) + 1

func statsCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Count jobs by type, group and state",
		Long: `stats counts jobs: one row per type and group with a column per state,
and a total row. With --json it prints the API's answer,
{"counts": [{"type", "group", "state", "jobs"}...], "by_state": {...}}.`,
		Example: `  rota stats
  rota stats --json | jq .by_state.failed`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			counts, err := c.Stats(cmd.Context())
			if err != nil {
				return g.explain(err)
			}
			resp := wire.StatsResponse{Counts: counts, ByState: map[string]int64{}}
			if resp.Counts == nil {
				resp.Counts = []store.Count{}
			}
			for st := rota.Pending; st.Valid(); st++ {
				resp.ByState[st.String()] = 0
			}
			for _, n := range counts {
				resp.ByState[n.State.String()] += n.Jobs
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), resp)
			}
			writeStats(cmd.OutOrStdout(), counts)
			return nil
		},
	}
}

// writeStats prints counts as a table: a row per type and group, a column
// per state, and totals.
func writeStats(w io.Writer, counts []rota.Count) {
	type row struct{ typ, group string }
	var rows []row
	cells := map[row]*[nStates]int64{}
	var totals [nStates]int64
	for _, n := range counts {
		r := row{n.Type, n.Group}
		if cells[r] == nil {
			cells[r] = new([nStates]int64)
			rows = append(rows, r)
		}
		if n.State.Valid() {
			cells[r][n.State] += n.Jobs
			totals[n.State] += n.Jobs
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "TYPE\tGROUP\t")
	for st := rota.Pending; st.Valid(); st++ {
		fmt.Fprintf(tw, "%s\t", strings.ToUpper(st.String()))
	}
	fmt.Fprintln(tw, "TOTAL\t")
	line := func(typ, group string, c [nStates]int64) {
		fmt.Fprintf(tw, "%s\t%s\t", typ, group)
		var sum int64
		for _, n := range c {
			fmt.Fprintf(tw, "%d\t", n)
			sum += n
		}
		fmt.Fprintf(tw, "%s\t\n", strconv.FormatInt(sum, 10))
	}
	for _, r := range rows {
		line(r.typ, orDash(r.group), *cells[r])
	}
	line("total", "", totals)
	tw.Flush()
	var expired int64
	for _, n := range counts {
		expired += n.Expired
	}
	if expired > 0 {
		fmt.Fprintf(w, "%d ended jobs are past their retention, waiting for deletion\n", expired)
	}
}
