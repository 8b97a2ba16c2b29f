package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
)

func historyCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "history ID",
		Short: "Show a job's history: what it did, and who changed it",
		Long: `history shows a job's history, oldest first: what its row tells (added,
each attempt's start and error, its end) and the audit trail: every change
made to the job (cancel, retry, run now, update, remove) and to its type's
or group's settings during its life (pause, resume, set), with the name of
the token that made it and what changed. A removed job's history is its
audit records, kept 90 days. With --json it prints the API's answer,
{"history": [...]}.`,
		Example: `  rota history 42
  rota history 42 --json | jq -r '.history[] | select(.audited) | .actor'`,
		Args: exactArgs(1, "one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return byID(g, args[0], func(c *rota.Client, id int64) error {
				h, err := c.History(cmd.Context(), id)
				if err != nil {
					return g.explain(err)
				}
				if g.json {
					return printJSON(cmd.OutOrStdout(), wire.HistoryResponse{History: h})
				}
				writeHistory(cmd.OutOrStdout(), h, time.Now())
				return nil
			})
		},
	}
}

// writeHistory prints a history for people: one line per entry, its time,
// what happened, who did it ("-" for what the job did itself) and how.
func writeHistory(w io.Writer, h []rota.HistoryEntry, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTION\tBY\tDETAIL")
	for _, e := range h {
		by := "-"
		if e.Audited {
			by = e.Actor
			if by == "" {
				by = "(unnamed)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", stamp(e.At, now), e.Action, by, strings.ReplaceAll(truncate(e.Detail, 200), "\n", " "))
	}
	tw.Flush()
}
