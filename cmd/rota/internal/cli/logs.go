package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
)

func logsCommand(g *globals) *cobra.Command {
	var attempt int
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Show what a job's run logged",
		Long: `logs prints the records a job's attempt logged (a handler's job logger,
rota.Logger; a program's stderr under rota work), one a line: the time, the
level, the message and its attributes as JSON. By default it shows the
latest attempt that logged; --attempt N shows another. Each attempt keeps
at most 64 KiB of records; the rest are counted and dropped, and logs ends
with how many. A job's logs are removed with the job.

With --json it prints the API's answer (GET /v1/jobs/{id}/logs) with every
record of the attempt: {"attempt": N, "attempts": [...], "records": [...]}.`,
		Example: `  rota logs 42
  rota logs 42 --attempt 1
  rota logs 42 --json | jq -r '.records[].message'`,
		Args: exactArgs(1, "one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			if attempt < 0 {
				return fmt.Errorf("--attempt %d: want a positive attempt (or none for the latest)", attempt)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			p := rota.LogsParams{ID: id, Attempt: attempt}
			var all rota.LogsResult
			for {
				page, err := c.Logs(cmd.Context(), p)
				if err != nil {
					return g.explain(err)
				}
				recs := append(all.Records, page.Records...)
				all, all.Records = page, recs
				if page.Next == 0 {
					break
				}
				p.Attempt, p.After = page.Attempt, page.Next
			}
			all.Next = 0
			if g.json {
				return printJSON(cmd.OutOrStdout(), wire.Logs(all))
			}
			writeLogs(cmd.OutOrStdout(), cmd.ErrOrStderr(), id, all)
			return nil
		},
	}
	cmd.Flags().IntVar(&attempt, "attempt", 0, "the attempt whose records to show (default: the latest that logged)")
	return cmd
}

// writeLogs prints an attempt's records, one a line, and what was dropped;
// which attempt it is goes to errw, so that out holds the records alone.
func writeLogs(out, errw io.Writer, id int64, res rota.LogsResult) {
	if res.Attempt == 0 {
		fmt.Fprintf(errw, "job %d logged nothing\n", id)
		return
	}
	var others []string
	var dropped int
	for _, a := range res.Attempts {
		others = append(others, strconv.Itoa(a.Attempt))
		if a.Attempt == res.Attempt {
			dropped = a.Dropped
		}
	}
	fmt.Fprintf(errw, "job %d, attempt %d (attempts that logged: %s)\n", id, res.Attempt, strings.Join(others, ", "))
	for _, r := range res.Records {
		line := r.Time.Local().Format("2006-01-02 15:04:05.000") + " " + fmt.Sprintf("%-5s", r.Level.String()) + " " + r.Message
		if len(r.Attrs) > 0 {
			line += " " + string(r.Attrs)
		}
		fmt.Fprintln(out, line)
	}
	if dropped > 0 {
		fmt.Fprintf(out, "… %d records dropped (an attempt keeps %d KiB of records)\n", dropped, rota.MaxLogBytes>>10)
	}
}
