package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// itemResult is one job's answer in the --json output of cancel, retry
// and rm.
type itemResult struct {
	ID      int64        `json:"id"`
	Job     *rota.Job    `json:"job,omitempty"`
	Outcome rota.Outcome `json:"outcome,omitempty"`
	Error   *wire.Error  `json:"error,omitempty"`
}

type itemResults struct {
	Results []itemResult `json:"results"`
}

// errorCode is the API's error code for an error about one job.
func errorCode(err error) string {
	switch {
	case errors.Is(err, rota.ErrNotFound):
		return wire.CodeNotFound
	case errors.Is(err, rota.ErrFinished):
		return wire.CodeFinished
	case errors.Is(err, rota.ErrCanceled):
		return wire.CodeCanceled
	case errors.Is(err, rota.ErrWorkerConflict):
		return wire.CodeWorkerConflict
	case errors.Is(err, rota.ErrInvalid):
		return wire.CodeInvalid
	}
	return wire.CodeInternal
}

// finishItems prints the results of an operation on several jobs and
// returns an error when any of them failed.
func finishItems(w, errw io.Writer, g *globals, res []itemResult, errs []error, verb string) error {
	failed := 0
	for i := range res {
		if errs[i] != nil {
			failed++
			res[i].Error = &wire.Error{Code: errorCode(errs[i]), Message: errs[i].Error()}
		}
	}
	if g.json {
		if err := printJSON(w, itemResults{Results: res}); err != nil {
			return err
		}
	} else {
		for i, r := range res {
			switch {
			case errs[i] != nil:
				fmt.Fprintln(errw, "rota:", aboutJob(r.ID, errs[i]))
			case r.Outcome != 0:
				fmt.Fprintf(w, "%d %s\n", r.ID, r.Outcome)
			default:
				fmt.Fprintf(w, "%d %s\n", r.ID, verb)
			}
		}
	}
	// One status for the lot: the class of the failures when they share
	// one, exitFailed when they differ.
	code := 0
	for _, err := range errs {
		if err != nil {
			if c := exitCodeOf(err); code == 0 {
				code = c
			} else if c != code {
				code = exitFailed
			}
		}
	}
	switch {
	case failed == 0:
		return nil
	case len(res) == 1 && !g.json:
		return &exitError{code: code} // the error is printed
	}
	return &exitError{code: code, err: fmt.Errorf("%d of %d jobs failed", failed, len(res))}
}

// aboutJob is the message of an error about job id, naming the job once:
// the store's errors name it already ("job 7 not found").
func aboutJob(id int64, err error) string {
	msg := err.Error()
	name := "job " + strconv.FormatInt(id, 10)
	for rest := msg; ; {
		i := strings.Index(rest, name)
		if i < 0 {
			break
		}
		if after := rest[i+len(name):]; after == "" || after[0] < '0' || after[0] > '9' {
			return msg
		}
		rest = rest[i+len(name):]
	}
	return name + ": " + msg
}

// withJobs fills in the jobs of the results that succeeded.
func withJobs(ctx context.Context, c *rota.Client, res []itemResult, errs []error) error {
	var ids []int64
	for i, r := range res {
		if errs[i] == nil {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	jobs, err := c.GetMany(ctx, ids)
	if err != nil {
		return err
	}
	byID := map[int64]rota.Job{}
	for _, j := range jobs {
		if j.ID != 0 {
			byID[j.ID] = j
		}
	}
	for i := range res {
		if j, ok := byID[res[i].ID]; ok && errs[i] == nil {
			res[i].Job = &j
		}
	}
	return nil
}

func cancelCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID...",
		Short: "Cancel jobs",
		Long: `cancel cancels jobs that have not ended. A running job's worker is told at
once (a program run by "rota work" is stopped). Cancelling a cancelled job
succeeds and changes nothing; cancelling a completed or failed job is an
error. If any job could not be cancelled, the exit status says why (3 not
found, 4 ended; 1 when the jobs failed for different reasons).

With --json it prints {"results": [{"id", "job"} or {"id", "error"}...]}.`,
		Example: `  rota cancel 42
  rota cancel 42 43 44 --json`,
		Args: minArgs(1, "at least one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			errs, err := c.CancelMany(cmd.Context(), ids)
			if err != nil {
				return g.explain(err)
			}
			res := make([]itemResult, len(ids))
			for i, id := range ids {
				res[i].ID = id
			}
			if g.json {
				if err := withJobs(cmd.Context(), c, res, errs); err != nil {
					return g.explain(err)
				}
			}
			return finishItems(cmd.OutOrStdout(), cmd.ErrOrStderr(), g, res, errs, "cancelled")
		},
	}
}

func retryCommand(g *globals) *cobra.Command {
	var (
		sched    schedule
		data     string
		dataFile string
	)
	cmd := &cobra.Command{
		Use:   "retry ID...",
		Short: "Run jobs again (resubmit)",
		Long: `retry resubmits jobs: an ended job (completed, failed or cancelled) is
pending again with its attempts reset (requeued); a pending job moves to
the new time (updated); a running job runs again once its current attempt
ends (resubmitted). Without --at or --in an ended job runs now and a
pending one keeps its time. --data replaces the job's data.

It prints each job's id and outcome. With --json it prints
{"results": [{"id", "job", "outcome"} or {"id", "error"}...]}.`,
		Example: `  rota retry 42
  rota retry 42 43 --in 5m
  rota retry 42 --data '{"force":true}'`,
		Args: minArgs(1, "at least one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			runAt, err := sched.runAt(cmd, time.Now())
			if err != nil {
				return err
			}
			var d []byte
			if cmd.Flags().Changed("data") || dataFile != "" {
				if d, err = readData(cmd.InOrStdin(), data, dataFile, cmd.Flags().Changed("data")); err != nil {
					return err
				}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			res := make([]itemResult, len(ids))
			errs := make([]error, len(ids))
			for i, id := range ids {
				res[i].ID = id
				r, err := c.Resubmit(cmd.Context(), rota.ResubmitParams{ID: id, RunAt: runAt, Data: d})
				if err != nil && !isItemError(err) {
					return g.explain(err)
				}
				if errs[i] = err; err == nil {
					j := r.Job
					res[i].Job, res[i].Outcome = &j, r.Outcome
				}
			}
			return finishItems(cmd.OutOrStdout(), cmd.ErrOrStderr(), g, res, errs, "resubmitted")
		},
	}
	sched.register(cmd, "run again")
	cmd.Flags().StringVar(&data, "data", "", `replace the job's data with this JSON object ("-" reads standard input)`)
	cmd.Flags().StringVar(&dataFile, "data-file", "", `replace the job's data with this file's ("-" for standard input)`)
	return cmd
}

// isItemError reports whether err is about one job rather than the call.
func isItemError(err error) bool {
	return errors.Is(err, rota.ErrNotFound) || errors.Is(err, rota.ErrFinished) ||
		errors.Is(err, rota.ErrCanceled) || errors.Is(err, rota.ErrWorkerConflict) || errors.Is(err, rota.ErrInvalid)
}

func rmCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID...",
		Short: "Remove jobs",
		Long: `rm deletes jobs in any state. A running job's worker is told as for a
cancel. If any job could not be removed, the exit status says why (3 when
it does not exist; 1 when the jobs failed for different reasons).

With --json it prints {"results": [{"id"} or {"id", "error"}...]}.`,
		Example: `  rota rm 42 43`,
		Args:    minArgs(1, "at least one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			errs := make([]error, len(ids))
			res := make([]itemResult, len(ids))
			for i, id := range ids {
				res[i].ID = id
				err := c.Remove(cmd.Context(), id)
				if err != nil && !isItemError(err) {
					return g.explain(err)
				}
				errs[i] = err
			}
			return finishItems(cmd.OutOrStdout(), cmd.ErrOrStderr(), g, res, errs, "removed")
		},
	}
}

func updateCommand(g *globals) *cobra.Command {
	var (
		at       schedule
		data     string
		dataFile string
		priority int
		sched    string
		missed   string
	)
	cmd := &cobra.Command{
		Use:   "update ID...",
		Short: "Change jobs in place",
		Long: `update changes jobs in any state without moving them to another state:
their data (--data), priority (--priority), run time (--at or --in; a
pending or paused job only), schedule (--schedule; "" makes a recurring
job a one-off one) and missed-slot policy (--missed). Flags left out keep
what the job has.

It prints each job's id. With --json it prints
{"results": [{"id", "job"} or {"id", "error"}...]}.`,
		Example: `  rota update 42 --priority 10
  rota update 42 --in 1h
  rota update 42 --schedule 'CRON_TZ=Europe/Paris 0 8 * * *'`,
		Args: minArgs(1, "at least one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			var p rota.UpdateParams
			if p.RunAt, err = at.runAt(cmd, time.Now()); err != nil {
				return err
			}
			if cmd.Flags().Changed("data") || dataFile != "" {
				if p.Data, err = readData(cmd.InOrStdin(), data, dataFile, cmd.Flags().Changed("data")); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("priority") {
				p.Priority = &priority
			}
			if cmd.Flags().Changed("missed") {
				m, err := store.ParseMissed(missed)
				if err != nil {
					return usageErrorf("--missed: %v", invalidDetail(err))
				}
				p.Missed = &m
			}
			if cmd.Flags().Changed("schedule") {
				m := store.MissedOnce
				if p.Missed != nil {
					m = *p.Missed
				}
				if err := check.Schedule(&sched, m); err != nil {
					return usageErrorf("--%v", invalidDetail(err))
				}
				p.Schedule = &sched
			}
			if p.Data == nil && p.Priority == nil && p.RunAt.IsZero() && p.Schedule == nil && p.Missed == nil {
				return usageErrorf("nothing to change: give --data, --priority, --at/--in, --schedule or --missed")
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			res := make([]itemResult, len(ids))
			errs := make([]error, len(ids))
			for i, id := range ids {
				res[i].ID = id
				p.ID = id
				j, err := c.Update(cmd.Context(), p)
				if err != nil && !isItemError(err) {
					return g.explain(err)
				}
				if errs[i] = err; err == nil {
					res[i].Job = &j
				}
			}
			return finishItems(cmd.OutOrStdout(), cmd.ErrOrStderr(), g, res, errs, "updated")
		},
	}
	at.register(cmd, "run")
	f := cmd.Flags()
	f.StringVar(&data, "data", "", `replace the job's data with this JSON object ("-" reads standard input)`)
	f.StringVar(&dataFile, "data-file", "", `replace the job's data with this file's ("-" for standard input)`)
	f.IntVar(&priority, "priority", 0, "the job's new priority")
	f.StringVar(&sched, "schedule", "", `the job's new schedule (a repeat or cron expression; "" for none)`)
	f.StringVar(&missed, "missed", "", "the recurring job's new missed-slot policy: once, skip or all")
	return cmd
}
