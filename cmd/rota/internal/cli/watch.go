package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

func watchCommand(g *globals) *cobra.Command {
	var (
		types []string
		job   string
	)
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Stream job events as they happen",
		Long: `watch prints a line for every change of a job's state or progress, as the
server commits them: the time, the job's id, type, group, state and
progress. --type limits it to types matching names or GLOB patterns
(repeatable: --type 'email.*' --type report.build); --job follows one job
from its current state until it ends, then exits. Ctrl-C stops it.

If the server goes away, watch reconnects; changes made meanwhile are not
shown. With --json it prints one JSON object per line:
{"id", "type", "group", "state", "removed", "progress", "run_at", "at"}.`,
		Example: `  rota watch
  rota watch --type 'email.*'
  rota watch --job 42 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			var what string
			switch {
			case job != "" && len(types) > 0:
				return usageErrorf("give --job or --type, not both")
			case job != "":
				id, err := parseID(job)
				if err != nil {
					return err
				}
				q.Set("job", strconv.FormatInt(id, 10))
				what = "job " + strconv.FormatInt(id, 10)
			default:
				for _, t := range types {
					if _, err := check.CompilePattern(t); err != nil {
						return usageError{fmt.Errorf("--type: %w", err)}
					}
					q.Add("type", t)
				}
				what = "all jobs"
				if len(types) > 0 {
					what = "jobs of type " + strings.Join(types, ", ")
				}
			}
			if _, err := g.baseURL(); err != nil {
				return err
			}
			ctx := cmd.Context()
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			stream, err := g.openEvents(ctx, q)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			fmt.Fprintf(errw, "watching %s at %s (Ctrl-C to stop)\n", what, strings.TrimRight(g.server, "/"))
			for {
				ended, err := printEvents(stream, out, g.json)
				stream.Close()
				if ended || ctx.Err() != nil {
					return nil
				}
				if err != nil {
					return g.explain(err)
				}
				fmt.Fprintln(errw, "rota: the event stream ended; reconnecting")
				if stream, err = reconnect(ctx, g, q); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				fmt.Fprintln(errw, "rota: reconnected; changes made while disconnected are not shown")
			}
		},
	}
	cmd.Flags().StringArrayVar(&types, "type", nil, "only jobs whose type matches this name or GLOB pattern (repeatable)")
	cmd.Flags().StringVar(&job, "job", "", "follow this one job until it ends")
	return cmd
}

// printEvents prints events until the stream breaks; it reports whether
// the stream ended as it should (a followed job ended).
func printEvents(s *eventStream, w io.Writer, asJSON bool) (bool, error) {
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if ev.End {
			return true, nil
		}
		if asJSON {
			b, err := json.Marshal(ev.Event)
			if err != nil {
				return false, err
			}
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return false, err
			}
			continue
		}
		if _, err := fmt.Fprintln(w, eventLine(ev)); err != nil {
			return false, err
		}
	}
}

// eventLine formats an event for people.
func eventLine(ev streamEvent) string {
	at := ev.At
	if at.IsZero() {
		at = time.Now()
	}
	state := ev.State.String()
	if ev.Removed {
		state = "removed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %6d  %-20s  %-9s", at.Local().Format("15:04:05.000"), ev.ID, ev.Type, state)
	if ev.State == store.Running && !ev.Removed {
		fmt.Fprintf(&b, "  %5s", percent(ev.Progress))
	}
	if ev.Group != "" {
		fmt.Fprintf(&b, "  group=%s", ev.Group)
	}
	return strings.TrimRight(b.String(), " ")
}

// reconnect opens the event stream again, with back-off, until it works,
// the context ends, or the server answers with an error that retrying
// cannot fix.
func reconnect(ctx context.Context, g *globals, q url.Values) (*eventStream, error) {
	delay := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		s, err := g.openEvents(ctx, q)
		if err == nil {
			return s, nil
		}
		var ue *unreachableError
		if ctx.Err() != nil || !errors.As(err, &ue) {
			return nil, err
		}
		delay = min(delay*2, 2*time.Second)
	}
}
