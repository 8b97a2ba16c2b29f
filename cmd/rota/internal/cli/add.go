package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// schedule is the --at/--in pair of flags.
type schedule struct {
	at string
	in time.Duration
}

func (s *schedule) register(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&s.at, "at", "", what+" at this time (RFC 3339, e.g. 2026-01-02T15:04:05Z)")
	cmd.Flags().DurationVar(&s.in, "in", 0, what+" after this long (e.g. 90s, 10m, 2h)")
}

// expiresAt reads --expires: an RFC 3339 time, or a duration from now
// (10m, 2h); zero when empty.
func expiresAt(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return time.Time{}, usageErrorf("--expires %v must be after now", v)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, usageErrorf("--expires %q is neither a duration such as 10m nor an RFC 3339 time such as 2026-01-02T15:04:05Z", v)
	}
	if err := check.Time("--expires", t); err != nil {
		return time.Time{}, usageError{err}
	}
	return t, nil
}

// runAt returns the time the flags ask for; zero when neither is set.
func (s *schedule) runAt(cmd *cobra.Command, now time.Time) (time.Time, error) {
	atSet, inSet := cmd.Flags().Changed("at"), cmd.Flags().Changed("in")
	switch {
	case atSet && inSet:
		return time.Time{}, usageErrorf("give --at or --in, not both")
	case atSet:
		t, err := time.Parse(time.RFC3339, s.at)
		if err != nil {
			return time.Time{}, usageErrorf("--at %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z or 2026-01-02T15:04:05+01:00", s.at)
		}
		if err := check.Time("--at", t); err != nil {
			return time.Time{}, usageError{err}
		}
		return t, nil
	case inSet:
		if s.in < 0 {
			return time.Time{}, usageErrorf("--in %v must not be negative", s.in)
		}
		return now.Add(s.in), nil
	}
	return time.Time{}, nil
}

func addCommand(g *globals) *cobra.Command {
	var (
		p            rota.AddParams
		dataFile     string
		sched        schedule
		quiet        bool
		meta         map[string]string
		uniqueStates []string
		missed       string
		expires      string
		depPolicy    string
	)
	cmd := &cobra.Command{
		Use:   "add TYPE [DATA-JSON | -]",
		Short: "Add a job",
		Long: `add adds a job of TYPE with DATA-JSON as its data (a JSON object; {} when
left out). "-" reads the data from standard input, as does --data-file -.

With --key, the job is unique within its type and group: adding a job whose
type, group and key exist re-adds that job instead (a pending job is updated,
a running one runs again after its attempt, an ended one is queued again).
The same key in another group is another job.

With --schedule, the job is recurring: each time a run completes (or fails
for good), it is pending again at its next slot. A schedule is a Bedrock
repeat, a base (SCHEDULED, STARTED or FINISHED) and modifiers such as
"SCHEDULED, +1 HOUR" or "FINISHED, +1 DAY, START OF DAY", or HOURLY, DAILY,
WEEKLY; or a cron expression such as "*/5 * * * *", "@daily" or
"CRON_TZ=Europe/Paris 0 9 * * 1-5". --missed says what the job does about
slots that pass while it cannot run: once (run once for all of them, the
default), skip (wait for the next slot) or all (run once for each).

With --expires, the job has a deadline: if it has not started by then (it
waited behind a bound, a paused group or type, or other work), it is never
started. It ends cancelled and expired, with the last error "expired at …,
not started"; a recurring job skips to its next slot instead, whose
deadline is as far after that slot.

With --after, the job waits (state waiting) until every job named has ended,
then is pending. When one of them fails for good, is cancelled or removed,
--on-dep-failure decides: cancel (the default) cancels this job too, and
the jobs after it; run runs it once the rest have ended. Its worker sees
their outcomes. An unknown job named is an error, and nothing is added.

It prints the job's id and what the add did: inserted, updated,
resubmitted or requeued. With --json it prints the API's answer,
{"job": {...}, "outcome": "inserted"}.`,
		Example: `  rota add email.send '{"to":"ada@example.com"}'
  rota add report.build - --key 2026-01 --in 10m < params.json
  id=$(rota add -q resize '{"image":"a.png"}')
  rota add report.daily --key daily --schedule 'CRON_TZ=Europe/Paris 0 7 * * *'
  rota add sync.feed --schedule 'SCHEDULED, +5 MINUTES' --missed skip
  rota add quote.fetch '{"symbol":"ACME"}' --expires 30s
  rota add report.merge --after 41,42 --on-dep-failure run`,
		Args: rangeArgs(1, 2, "a TYPE and optional DATA-JSON"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.Type = args[0]
			if err := check.Type(p.Type); err != nil {
				return usageError{err}
			}
			if err := checkName("--key", p.Key); err != nil {
				return err
			}
			if err := checkName("--group", p.Group); err != nil {
				return err
			}
			if p.MaxAttempts < 0 {
				return usageErrorf("--max-attempts %d must not be negative", p.MaxAttempts)
			}
			if p.BackoffBase < 0 || p.BackoffMax < 0 {
				return usageErrorf("--backoff-base and --backoff-max must not be negative")
			}
			if p.BackoffBase > 0 && p.BackoffMax > 0 && p.BackoffMax < p.BackoffBase {
				return usageErrorf("--backoff-max %v is less than --backoff-base %v", p.BackoffMax, p.BackoffBase)
			}
			var err error
			now := time.Now()
			if p.RunAt, err = sched.runAt(cmd, now); err != nil {
				return err
			}
			if p.ExpiresAt, err = expiresAt(expires, now); err != nil {
				return err
			}
			if !p.ExpiresAt.IsZero() && !p.RunAt.IsZero() && !p.ExpiresAt.After(p.RunAt) {
				return usageErrorf("--expires %s is not after the run time %s: the job could never start",
					p.ExpiresAt.Format(time.RFC3339), p.RunAt.Format(time.RFC3339))
			}
			if p.Missed, err = store.ParseMissed(missed); err != nil {
				return usageErrorf("--missed: %v", invalidDetail(err))
			}
			if cmd.Flags().Changed("missed") && p.Schedule == "" {
				return usageErrorf("--missed needs --schedule")
			}
			if err := check.Schedule(&p.Schedule, p.Missed); err != nil {
				return usageErrorf("--%v", invalidDetail(err))
			}
			for _, name := range uniqueStates {
				st, err := store.ParseState(name)
				if err != nil {
					return usageErrorf("--unique-states: %v", invalidDetail(err))
				}
				p.UniqueStates = append(p.UniqueStates, st)
			}
			if p.OnDepFailure, err = store.ParseDepPolicy(depPolicy); err != nil {
				return usageErrorf("--on-dep-failure: %v", invalidDetail(err))
			}
			if cmd.Flags().Changed("on-dep-failure") && len(p.After) == 0 {
				return usageErrorf("--on-dep-failure needs --after")
			}
			if err := check.After(&p); err != nil {
				return usageErrorf("--%v", invalidDetail(err))
			}
			if err := check.Debounce(&p); err != nil {
				return usageErrorf("--%v", invalidDetail(err))
			}
			if err := check.UniqueFor(&p); err != nil {
				return usageErrorf("--%v", strings.ReplaceAll(invalidDetail(err), "unique_", "unique-"))
			}
			arg := ""
			if len(args) == 2 {
				arg = args[1]
			}
			if p.Data, err = readData(cmd.InOrStdin(), arg, dataFile, len(args) == 2); err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			defer c.Close()
			if len(meta) > 0 {
				p.Meta = meta
			}
			res, err := c.Add(cmd.Context(), p)
			if err != nil {
				return g.explain(err)
			}
			out := cmd.OutOrStdout()
			switch {
			case g.json:
				return printJSON(out, wire.AddResponse{Job: res.Job, Outcome: res.Outcome})
			case quiet:
				fmt.Fprintln(out, res.Job.ID)
			default:
				fmt.Fprintf(out, "%d %s\n", res.Job.ID, res.Outcome)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.Key, "key", "", "unique key within the type and group (re-adding updates the job)")
	f.StringVar(&p.Group, "group", "", "fairness group, such as a tenant")
	f.IntVar(&p.Priority, "priority", 0, "higher runs first")
	sched.register(cmd, "run")
	f.IntVar(&p.MaxAttempts, "max-attempts", 0, fmt.Sprintf("most attempts the job gets (default %d)", store.DefaultMaxAttempts))
	f.DurationVar(&p.BackoffBase, "backoff-base", 0, fmt.Sprintf("first retry delay, doubled each retry (default %v)", store.DefaultBackoffBase))
	f.DurationVar(&p.BackoffMax, "backoff-max", 0, fmt.Sprintf("longest retry delay (default %v)", store.DefaultBackoffMax))
	f.StringVar(&dataFile, "data-file", "", `read the data from this file ("-" for standard input)`)
	f.StringVar(&p.Schedule, "schedule", "", `make the job recurring: a repeat ("SCHEDULED, +1 HOUR") or cron expression ("*/5 * * * *")`)
	f.DurationVar(&p.RetryAfter, "retry-after", 0, "give each run a fixed lease this long that heartbeats do not extend; a run not finished by then runs again (at most --max-attempts runs, default 10)")
	f.DurationVar(&p.Timeout, "timeout", 0, "stop each run that lasts longer than this; it counts as a failed attempt (\"timed out after …\"), retried under the job's policy")
	f.StringVar(&expires, "expires", "", "a deadline, a duration from now (10m) or an RFC 3339 time: a job not started by then is never started; it ends cancelled and expired (a recurring job skips to its next slot)")
	f.Int64Var(&p.Parent, "parent", 0, "add the job as a child of this running (or waiting) job")
	f.Int64Var(&p.Batch, "batch", 0, "add the job to this batch, which must not be done (rota batch)")
	f.BoolVar(&p.Unique, "unique", false, "return the existing job of this type in this group that has not completed, if any, instead of adding one")
	f.BoolVar(&p.Overwrite, "overwrite", false, "with --unique: merge this data into the existing job's (JSON merge patch) and set its priority and schedule")
	f.DurationVar(&p.UniqueFor, "unique-for", 0, "a unique window: within this time of a job's add, an add of its type, group and key (or, without --key, its data) returns it instead of adding one")
	f.DurationVar(&p.Debounce, "debounce", 0, "with --key: run the job this long after the add; another add of the key before then replaces its data and pushes its run time (the last add wins)")
	f.StringSliceVar(&uniqueStates, "unique-states", nil, "with --unique-for: the states a job must be in to count (default: any but cancelled)")
	f.StringVar(&missed, "missed", "", "what a recurring job does about missed slots: once, skip or all (default once)")
	f.Int64SliceVar(&p.After, "after", nil, "run the job after these jobs end (ids, comma-separated or repeated); it waits until then")
	f.StringVar(&depPolicy, "on-dep-failure", "", "with --after: what the job does when one of them fails, is cancelled or removed: cancel or run (default cancel)")
	f.StringToStringVar(&meta, "meta", nil, "metadata carried with the job, KEY=VALUE (repeat, or comma-separate)")
	f.BoolVarP(&quiet, "quiet", "q", false, "print only the job id")
	return cmd
}

// readData returns the job data from the argument, a file, or standard
// input, checked to be a JSON object.
func readData(stdin io.Reader, arg, file string, haveArg bool) (json.RawMessage, error) {
	if haveArg && file != "" {
		return nil, usageErrorf("give the data as an argument or with --data-file, not both")
	}
	var raw []byte
	source := "DATA-JSON"
	switch {
	case file == "-" || (haveArg && arg == "-"):
		b, err := io.ReadAll(io.LimitReader(stdin, store.MaxDataSize+1))
		if err != nil {
			return nil, fmt.Errorf("reading the data from standard input: %w", err)
		}
		raw, source = b, "the data on standard input"
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usageErrorf("--data-file: %v", err)
		}
		raw, source = b, "--data-file "+file
	case haveArg:
		raw = []byte(arg)
	default:
		return nil, nil
	}
	return checkData(raw, source)
}

// checkData checks that raw is a JSON object of at most MaxDataSize bytes
// and returns it compacted.
func checkData(raw []byte, source string) (json.RawMessage, error) {
	if len(raw) > store.MaxDataSize {
		return nil, usageErrorf("%s is larger than %d bytes", source, store.MaxDataSize)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, usageErrorf("%s is empty; want a JSON object such as {} or {\"n\": 1}", source)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, usageErrorf("%s is not valid JSON: %v (at byte %d)", source, syn, syn.Offset)
		}
		return nil, usageErrorf("%s is not valid JSON: %v", source, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, usageErrorf("%s must be a JSON object such as {\"n\": 1}, not %s", source, strings.TrimSpace(truncate(string(raw), 40)))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, usageErrorf("%s: %v", source, err)
	}
	return buf.Bytes(), nil
}

// checkName checks a key or group as the server would: at most 255 bytes
// of UTF-8 without control characters.
func checkName(what, s string) error {
	if len(s) > store.MaxNameLen {
		return usageErrorf("%s is %d bytes long, more than %d", what, len(s), store.MaxNameLen)
	}
	if !utf8.ValidString(s) {
		return usageErrorf("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return usageErrorf("%s %q contains a control character", what, s)
		}
	}
	return nil
}

// invalidDetail is what an ErrInvalid error says is wrong, without the
// "invalid input: " it starts with.
func invalidDetail(err error) string {
	return strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": ")
}
