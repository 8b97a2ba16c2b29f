package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

func waitCommand(g *globals) *cobra.Command {
	var timeout time.Duration
	var stateNames []string
	cmd := &cobra.Command{
		Use:   "wait ID",
		Short: "Wait until a job ends, or is in the states given",
		Long: `wait blocks until the job ends and says how: completed (with its result),
failed (with its last error) or cancelled. While it waits, it shows the
job's progress: a bar updated in place when standard output is a
terminal, otherwise a line for every change of state or progress.

With --state it waits until the job is in one of those states instead
(couch_jobs' wait), and then prints the job's state and data as read
when it got there; it exits 0 then, and 1 when the job ends in another
state without reaching them.

Exit status (the table every command keeps; docs/cli.md):
  0    the job completed
  1    the job failed, was cancelled, or was removed
  2    bad input
  3    no job has that id
  5    no server answered (or its database is unavailable)
  6    the server needs a token, or refused the one given
  124  --timeout passed first
  130  interrupted (Ctrl-C)

With --json it prints nothing while waiting and then the job as the API
returns it, {"job": {...}}, whatever its end.`,
		Example: `  rota wait 42
  rota wait 42 --timeout 10m && echo done
  rota wait 42 --state running,completed
  id=$(rota add -q resize '{}') && rota wait "$id" --json | jq .job.result`,
		Args: exactArgs(1, "one job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			if timeout < 0 {
				return usageErrorf("--timeout %v must not be negative", timeout)
			}
			var states []rota.State
			for _, name := range splitList(stateNames) {
				st, err := store.ParseState(name)
				if err != nil {
					return usageError{fmt.Errorf("--state: %w", err)}
				}
				states = append(states, st)
			}
			if _, err := g.baseURL(); err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			out := cmd.OutOrStdout()
			var d progressDisplay
			if !g.json {
				d = newProgressDisplay(out, id)
			}
			last, err := followJob(ctx, g, id, d, states)
			if d != nil {
				d.done()
			}
			if err != nil {
				switch {
				case cmd.Context().Err() != nil:
					return &exitError{code: exitSignal}
				case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
					msg := fmt.Sprintf("job %d has not ended after --timeout %v", id, timeout)
					if last.ID != 0 {
						msg += " (it is " + last.State.String() + ")"
					}
					return &exitError{code: exitTimeout, err: errors.New(msg)}
				case errors.Is(err, rota.ErrNotFound):
					return &exitError{code: exitNotFound, err: err}
				}
				return err
			}
			if last.Removed {
				return &exitError{code: exitFailed, err: fmt.Errorf("job %d was removed", id)}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			j, err := c.Get(context.WithoutCancel(ctx), id)
			if errors.Is(err, rota.ErrNotFound) {
				return &exitError{code: exitFailed, err: fmt.Errorf("job %d was removed", id)}
			}
			if err != nil {
				return g.explain(err)
			}
			if len(states) > 0 {
				return reportReached(out, g.json, j, last.State, states)
			}
			return reportEnd(out, g.json, j)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (exit status 124); 0 waits for ever")
	cmd.Flags().StringSliceVar(&stateNames, "state", nil, "wait until the job is in one of these states (pending, running, paused, waiting, completed, failed, cancelled; repeatable or comma-separated) instead of until it ends")
	return cmd
}

// followJob follows a job's events until it ends (a terminal state or its
// removal), or is in one of states when there are some, and returns the
// last event. It reconnects when the stream breaks.
func followJob(ctx context.Context, g *globals, id int64, d progressDisplay, states []rota.State) (rota.Event, error) {
	q := url.Values{"job": {strconv.FormatInt(id, 10)}}
	var last rota.Event
	stream, err := g.openEvents(ctx, q)
	if err != nil {
		return last, err
	}
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			stream.Close()
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			if stream, err = reconnect(ctx, g, q); err != nil {
				return last, err
			}
			continue
		}
		if err != nil {
			stream.Close()
			return last, g.explain(err)
		}
		if ev.End {
			stream.Close()
			return last, nil
		}
		last = ev.Event
		if d != nil {
			d.update(ev.Event)
		}
		if ev.Removed || ev.State.Terminal() || (len(states) > 0 && rota.WaitedFor(ev.State, states)) {
			stream.Close()
			return last, nil
		}
	}
}

// reportReached says that the job got to one of the states waited for,
// with its data, or that it ended without doing so (exit status 1).
func reportReached(w io.Writer, asJSON bool, j rota.Job, reached rota.State, states []rota.State) error {
	if !rota.WaitedFor(reached, states) {
		if asJSON {
			if err := printJSON(w, wire.JobResponse{Job: j}); err != nil {
				return err
			}
		}
		names := make([]string, len(states))
		for i, st := range states {
			names[i] = st.String()
		}
		return &exitError{code: exitFailed, err: fmt.Errorf("job %d ended %s without being %s", j.ID, reached, strings.Join(names, " or "))}
	}
	if asJSON {
		return printJSON(w, wire.JobResponse{Job: j})
	}
	fmt.Fprintf(w, "job %d is %s\n", j.ID, reached)
	if j.State != reached {
		fmt.Fprintf(w, "(and %s since)\n", j.State)
	}
	fmt.Fprintln(w, "data:", string(j.Data))
	return nil
}

// reportEnd says how the job ended and returns the exit status for it.
func reportEnd(w io.Writer, asJSON bool, j rota.Job) error {
	if asJSON {
		if err := printJSON(w, wire.JobResponse{Job: j}); err != nil {
			return err
		}
	}
	switch j.State {
	case rota.Completed:
		if !asJSON {
			fmt.Fprintf(w, "job %d completed\n", j.ID)
			if len(j.Result) > 0 {
				fmt.Fprintln(w, "result:", string(j.Result))
			}
		}
		return nil
	case rota.Failed:
		msg := fmt.Sprintf("job %d failed after %d of %d attempts", j.ID, j.Attempt, j.MaxAttempts)
		if j.LastError != "" {
			msg += ": " + j.LastError
		}
		return &exitError{code: exitFailed, err: errors.New(msg)}
	case rota.Cancelled:
		msg := fmt.Sprintf("job %d was cancelled", j.ID)
		if j.LastError != "" {
			msg += ": " + j.LastError
		}
		return &exitError{code: exitFailed, err: errors.New(msg)}
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("job %d is %s", j.ID, j.State)}
}

// progressDisplay shows a waited-for job's state and progress.
type progressDisplay interface {
	update(ev rota.Event)
	done()
}

func newProgressDisplay(w io.Writer, id int64) progressDisplay {
	if isTerminal(w) {
		return &barDisplay{w: w, id: id}
	}
	return &lineDisplay{w: w, id: id}
}

// lineDisplay prints a line for every change of state or progress.
type lineDisplay struct {
	w       io.Writer
	id      int64
	started bool
	last    rota.Event
}

func (d *lineDisplay) update(ev rota.Event) {
	if d.started && ev.State == d.last.State && ev.Progress == d.last.Progress {
		return
	}
	d.started, d.last = true, ev
	switch {
	case ev.Removed || ev.State.Terminal():
		// reportEnd says how it ended.
	case ev.State == rota.Running && ev.Progress > 0:
		fmt.Fprintf(d.w, "job %d: running %s\n", d.id, percent(ev.Progress))
	default:
		fmt.Fprintf(d.w, "job %d: %s\n", d.id, ev.State)
	}
}

func (d *lineDisplay) done() {}

// barDisplay redraws one line in place: a bar, the percentage, the state.
type barDisplay struct {
	w     io.Writer
	id    int64
	drawn bool
}

const barWidth = 30

func (d *barDisplay) update(ev rota.Event) {
	if ev.Removed || ev.State.Terminal() {
		return
	}
	fmt.Fprintf(d.w, "\r\033[K%s", progressBar(d.id, ev))
	d.drawn = true
}

func (d *barDisplay) done() {
	if d.drawn {
		fmt.Fprint(d.w, "\r\033[K")
	}
}

// progressBar renders "[#######.......]  42%  job 12 running".
func progressBar(id int64, ev rota.Event) string {
	p := min(max(ev.Progress, 0), 100)
	filled := int(p / 100 * barWidth)
	return fmt.Sprintf("[%s%s] %5s  job %d %s", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), percent(p), id, ev.State)
}
