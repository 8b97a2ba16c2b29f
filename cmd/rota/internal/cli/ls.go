package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

func lsCommand(g *globals) *cobra.Command {
	var (
		types, states, groups []string
		limit                 int
		cursor, parent        int64
		all, desc             bool
	)
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List jobs",
		Long: `ls lists jobs in id order (--desc for newest first), filtered by type,
state and group; each filter takes several values, repeated or separated by
commas. It shows one page of --limit jobs and, when there are more, says
how to get the next page (--cursor); --all follows every page.

The WHEN column is the time that matters in the job's state: when a
pending job is due, when a running one started, when an ended one ended.

With --json it prints the API's answer, {"jobs": [...], "next_cursor": "..."}
(with --all, every job and no cursor).`,
		Example: `  rota ls
  rota ls --state failed --type email.send
  rota ls --state pending,running --group tenant-7 --all --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := rota.ListParams{Types: splitList(types), Groups: groups, Descending: desc, After: cursor, Parent: parent}
			for _, t := range p.Types {
				if err := check.Type(t); err != nil {
					return usageError{fmt.Errorf("--type: %w", err)}
				}
			}
			for _, name := range splitList(states) {
				st, err := rota.ParseState(name)
				if err != nil {
					return usageError{fmt.Errorf("--state: %w", err)}
				}
				p.States = append(p.States, st)
			}
			if limit < 1 || limit > store.MaxListLimit {
				return usageErrorf("--limit %d is not in 1..%d", limit, store.MaxListLimit)
			}
			if cursor < 0 {
				return usageErrorf("--cursor %d is not a cursor ls gave out", cursor)
			}
			p.Limit = limit
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			var jobs []rota.Job
			var next int64
			for {
				res, err := c.List(cmd.Context(), p)
				if err != nil {
					return g.explain(err)
				}
				jobs = append(jobs, res.Jobs...)
				next = res.Next
				if !all || next == 0 {
					break
				}
				p.After = next
			}
			out := cmd.OutOrStdout()
			if g.json {
				resp := wire.ListResponse{Jobs: jobs}
				if resp.Jobs == nil {
					resp.Jobs = []rota.Job{}
				}
				if next != 0 {
					resp.NextCursor = strconv.FormatInt(next, 10)
				}
				return printJSON(out, resp)
			}
			if len(jobs) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no jobs")
				return nil
			}
			now := time.Now()
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			// Jobs that Bedrock's protocol has seen have a Bedrock id too, which
			// its clients know them by: a column when any listed job has one.
			bedrock := slices.ContainsFunc(jobs, func(j rota.Job) bool { return j.BedrockID != 0 })
			if bedrock {
				fmt.Fprint(tw, "ID\tBEDROCK ID\t")
			} else {
				fmt.Fprint(tw, "ID\t")
			}
			fmt.Fprintln(tw, "TYPE\tSTATE\tGROUP\tPRI\tATTEMPT\tWHEN\tLAST ERROR")
			for _, j := range jobs {
				fmt.Fprintf(tw, "%d\t", j.ID)
				if bedrock {
					fmt.Fprintf(tw, "%s\t", orDash(bedrockID(j)))
				}
				state := j.State.String()
				if j.Expired {
					state += " (expired)" // cancelled: its deadline passed before it started
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\n", j.Type, state, orDash(j.Group),
					j.Priority, j.Attempt, j.MaxAttempts, when(j, now), truncate(j.LastError, 48))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if next != 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "more jobs: add --cursor %d for the next page, or --all\n", next)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&types, "type", nil, "only these types (exact names)")
	f.Int64Var(&parent, "parent", 0, "only the children of this job")
	f.StringSliceVar(&states, "state", nil, "only these states: pending, running, paused, waiting, completed, failed, cancelled")
	f.StringArrayVar(&groups, "group", nil, "only this group (repeatable)")
	f.IntVar(&limit, "limit", 100, fmt.Sprintf("jobs per page, 1..%d", store.MaxListLimit))
	f.Int64Var(&cursor, "cursor", 0, "start after this cursor (from a previous page)")
	f.BoolVar(&all, "all", false, "follow every page")
	f.BoolVar(&desc, "desc", false, "newest first")
	return cmd
}

// bedrockID is the job's id in Bedrock's protocol, "" when it has none.
func bedrockID(j rota.Job) string {
	if j.BedrockID == 0 {
		return ""
	}
	return strconv.FormatInt(j.BedrockID, 10)
}

// splitList trims the values of a list flag and drops empty ones.
func splitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
