package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
)

func batchCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "Add and follow batches of jobs with callbacks",
		Long: `A batch is a set of jobs added together, with callbacks: a job added once
every member has ended (--on-complete), and one added once every member
completed (--on-success). Each callback's data gets the batch under "batch":
{"id", "counts", "callback"}. Jobs join a batch that is not done with
rota add --batch ID; keep a batch --open to add jobs to it in several steps,
then close it with rota batch close.`,
	}
	cmd.AddCommand(batchAddCommand(g), batchGetCommand(g), batchLsCommand(g), batchCloseCommand(g))
	return cmd
}

func batchAddCommand(g *globals) *cobra.Command {
	var (
		file                          string
		group                         string
		onComplete, onSuccess         string
		onCompleteData, onSuccessData string
		open, quiet                   bool
		description                   string
	)
	cmd := &cobra.Command{
		Use:   "add [TYPE [DATA-JSON...]]",
		Short: "Add a batch of jobs",
		Long: `batch add adds a batch in one transaction: all its jobs or none. Its jobs
are either one job of TYPE for each DATA-JSON argument (one with {} when
there is none), or, with --file, the body of POST /v1/batches (a JSON object
{"jobs": [...], "on_complete": {...}, "on_success": {...}, "open": true,
"description": "..."}; "-" reads it from standard input). The flags add to
what the file says.

It prints the batch's id and its number of jobs. With --json it prints the
API's answer, {"batch": {...}, "results": [...]}.`,
		Example: `  rota batch add report.page '{"page":1}' '{"page":2}' --on-complete report.merge
  rota batch add --file batch.json
  id=$(rota batch add -q --open import.row '{"row":1}')
  rota add import.row '{"row":2}' --batch $id && rota batch close $id`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var req wire.BatchRequest
			if file != "" {
				var raw []byte
				var err error
				if file == "-" {
					raw, err = io.ReadAll(cmd.InOrStdin())
				} else {
					raw, err = os.ReadFile(file)
				}
				if err != nil {
					return usageErrorf("--file: %v", err)
				}
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&req); err != nil {
					return usageErrorf("--file %s is not a batch (the body of POST /v1/batches): %v", file, err)
				}
			}
			if len(args) > 0 {
				typ := args[0]
				if err := check.Type(typ); err != nil {
					return usageError{err}
				}
				datas := args[1:]
				if len(datas) == 0 {
					datas = []string{"{}"}
				}
				for i, d := range datas {
					data, err := checkData([]byte(d), fmt.Sprintf("DATA-JSON %d", i+1))
					if err != nil {
						return err
					}
					req.Jobs = append(req.Jobs, wire.AddRequest{Type: typ, Group: group, Data: data})
				}
			} else if file == "" {
				return usageErrorf("give a TYPE and its jobs' DATA-JSON, or --file")
			}
			callback := func(flag, typ, data string) (*wire.AddRequest, error) {
				if typ == "" {
					if data != "" {
						return nil, usageErrorf("--%s-data needs --%s", flag, flag)
					}
					return nil, nil
				}
				if err := check.Type(typ); err != nil {
					return nil, usageErrorf("--%s: %v", flag, invalidDetail(err))
				}
				a := &wire.AddRequest{Type: typ, Group: group}
				if data != "" {
					d, err := checkData([]byte(data), "--"+flag+"-data")
					if err != nil {
						return nil, err
					}
					a.Data = d
				}
				return a, nil
			}
			var err error
			if c, err := callback("on-complete", onComplete, onCompleteData); err != nil {
				return err
			} else if c != nil {
				req.OnComplete = c
			}
			if c, err := callback("on-success", onSuccess, onSuccessData); err != nil {
				return err
			} else if c != nil {
				req.OnSuccess = c
			}
			if open {
				req.Open = true
			}
			if description != "" {
				req.Description = description
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			b, res, err := c.AddBatch(cmd.Context(), req.Params())
			if err != nil {
				return g.explain(err)
			}
			out := cmd.OutOrStdout()
			switch {
			case g.json:
				resp := wire.BatchResponse{Batch: wire.NewBatch(b)}
				for _, r := range res {
					resp.Results = append(resp.Results, wire.AddResponse{Job: r.Job, Outcome: r.Outcome})
				}
				return printJSON(out, resp)
			case quiet:
				fmt.Fprintln(out, b.ID)
			default:
				fmt.Fprintf(out, "batch %d: %d jobs%s\n", b.ID, b.Counts.Total, batchStatus(b))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", `read the batch from this file, the body of POST /v1/batches ("-" for standard input)`)
	f.StringVar(&group, "group", "", "fairness group of the jobs given as arguments and of the callbacks given by flags")
	f.StringVar(&onComplete, "on-complete", "", "add a job of this type once every job of the batch has ended")
	f.StringVar(&onCompleteData, "on-complete-data", "", "the data of the --on-complete job (a JSON object; the batch is added to it)")
	f.StringVar(&onSuccess, "on-success", "", "add a job of this type once every job of the batch completed")
	f.StringVar(&onSuccessData, "on-success-data", "", "the data of the --on-success job (a JSON object; the batch is added to it)")
	f.BoolVar(&open, "open", false, "keep the batch open for more jobs (rota add --batch) until rota batch close")
	f.StringVar(&description, "description", "", "a note shown with the batch")
	f.BoolVarP(&quiet, "quiet", "q", false, "print only the batch id")
	return cmd
}

// batchStatus says whether a batch is open, done or running, after its
// counts.
func batchStatus(b rota.Batch) string {
	switch {
	case b.Done:
		return ", done"
	case b.Open:
		return ", open"
	}
	return ""
}

func batchGetCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a batch",
		Long: `batch get shows a batch: its jobs by outcome, whether it is open or done,
and its callbacks (with the jobs they added once it is done). With --json
it prints the API's answer, {"batch": {...}}.`,
		Example: `  rota batch get 7
  rota batch get 7 --json | jq .batch.counts`,
		Args: exactArgs(1, "one batch ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return byID(g, args[0], func(c *rota.Client, id int64) error {
				b, err := c.GetBatch(cmd.Context(), id)
				if err != nil {
					return g.explain(err)
				}
				if g.json {
					return printJSON(cmd.OutOrStdout(), wire.BatchResponse{Batch: wire.NewBatch(b)})
				}
				writeBatch(cmd.OutOrStdout(), b, time.Now())
				return nil
			})
		},
	}
}

func writeBatch(w io.Writer, b rota.Batch, now time.Time) {
	line := func(name, value string) { fmt.Fprintf(w, "%-12s %s\n", name+":", value) }
	line("id", strconv.FormatInt(b.ID, 10))
	if b.Description != "" {
		line("description", b.Description)
	}
	state := "running"
	switch {
	case b.Done:
		state = "done " + relTime(b.DoneAt, now)
	case b.Open:
		state = "open (rota batch close " + strconv.FormatInt(b.ID, 10) + " to let it finish)"
	}
	line("state", state)
	c := b.Counts
	line("jobs", fmt.Sprintf("%d: %d remaining, %d completed, %d failed, %d cancelled, %d removed",
		c.Total, c.Remaining, c.Completed, c.Failed, c.Cancelled, c.Removed))
	cb := func(name string, p *rota.AddParams, job int64) {
		if p == nil {
			return
		}
		v := p.Type
		if job != 0 {
			v += " (job " + strconv.FormatInt(job, 10) + ")"
		}
		line(name, v)
	}
	cb("on complete", b.OnComplete, b.CompleteJob)
	cb("on success", b.OnSuccess, b.SuccessJob)
	line("created", relTime(b.CreatedAt, now))
}

func batchLsCommand(g *globals) *cobra.Command {
	var (
		limit  int
		before int64
	)
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List batches, newest first",
		Long: `batch ls lists batches, newest first, with their jobs by outcome. With --json
it prints the API's answer, {"batches": [...]}.`,
		Example: `  rota batch ls
  rota batch ls --limit 5 --before 40`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > 1000 {
				return usageErrorf("--limit %d must be between 1 and 1000", limit)
			}
			if before < 0 {
				return usageErrorf("--before %d must not be negative", before)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			bs, err := c.ListBatches(cmd.Context(), rota.BatchListParams{Before: before, Limit: limit})
			if err != nil {
				return g.explain(err)
			}
			out := cmd.OutOrStdout()
			if g.json {
				resp := wire.BatchesResponse{Batches: make([]wire.Batch, len(bs))}
				for i, b := range bs {
					resp.Batches[i] = wire.NewBatch(b)
				}
				return printJSON(out, resp)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tJOBS\tREMAINING\tCOMPLETED\tFAILED\tCANCELLED\tREMOVED\tCREATED\tDESCRIPTION")
			now := time.Now()
			for _, b := range bs {
				state := "running"
				switch {
				case b.Done:
					state = "done"
				case b.Open:
					state = "open"
				}
				c := b.Counts
				fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", b.ID, state, c.Total, c.Remaining, c.Completed,
					c.Failed, c.Cancelled, c.Removed, relTime(b.CreatedAt, now), truncate(b.Description, 40))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "most batches to list (1 to 1000)")
	cmd.Flags().Int64Var(&before, "before", 0, "only batches with a lower id than this")
	return cmd
}

func batchCloseCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "close ID",
		Short: "Close an open batch",
		Long: `batch close closes a batch added --open: it is done once its jobs have
ended, at once when they have, and its callbacks are added then. Closing a
closed batch changes nothing.`,
		Example: `  rota batch close 7`,
		Args:    exactArgs(1, "one batch ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return byID(g, args[0], func(c *rota.Client, id int64) error {
				b, err := c.CloseBatch(cmd.Context(), id)
				if err != nil {
					return g.explain(err)
				}
				if g.json {
					return printJSON(cmd.OutOrStdout(), wire.BatchResponse{Batch: wire.NewBatch(b)})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "batch %d: %d jobs%s\n", b.ID, b.Counts.Total, batchStatus(b))
				return nil
			})
		},
	}
}
