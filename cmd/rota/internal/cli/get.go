package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/httpapi/wire"
)

func getCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a job",
		Long: `get shows one job: its state, type, key, group, attempts, times, progress,
errors, data and result. With --json it prints the API's answer,
{"job": {...}}.`,
		Example: `  rota get 42
  rota get 42 --json | jq -r .job.state`,
		Args: exactArgs(1, "one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			j, err := c.Get(cmd.Context(), id)
			if err != nil {
				return g.explain(err)
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), wire.JobResponse{Job: j})
			}
			writeJob(cmd.OutOrStdout(), j, time.Now())
			return nil
		},
	}
}
