package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rotajobs/rota"
)

// printJSON writes v as indented JSON and a newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// relTime says how far t is from now: "in 5s", "3m ago", "now"; "-" for
// the zero time.
func relTime(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if y := t.Sub(now).Hours() / 24 / 365; y > 10 || y < -10 {
		// Far away (or as far as a Duration reaches): a date says more.
		return t.Local().Format("2006-01-02")
	}
	d := t.Sub(now)
	if d > -time.Second && d < time.Second {
		return "now"
	}
	if d > 0 {
		return "in " + shortDuration(d)
	}
	return shortDuration(-d) + " ago"
}

// shortDuration rounds d to one unit: 45s, 12m, 5h, 3d.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// stamp shows a time as local wall-clock time with its distance from now.
func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05") + " (" + relTime(t, now) + ")"
}

// when is the time that matters for a job in its state: when it runs
// (pending), started (running), or ended.
func when(j rota.Job, now time.Time) string {
	switch {
	case j.State == rota.Running:
		return relTime(j.StartedAt, now)
	case j.State.Terminal():
		return relTime(j.FinishedAt, now)
	case j.State == rota.Pending && j.Schedule != "":
		return relTime(j.RunAt, now) + " (recurring)"
	case j.State == rota.Pending:
		return relTime(j.RunAt, now)
	}
	return relTime(j.UpdatedAt, now)
}

// truncate shortens s to its first line and at most n runes.
func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// orDash returns s, or "-" when it is empty (for table cells).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// percent formats progress: "42%", "42.5%".
func percent(p float64) string {
	return strconv.FormatFloat(math.Round(p*10)/10, 'f', -1, 64) + "%"
}

// prettyJSON indents raw JSON for people, each line prefixed with indent.
func prettyJSON(raw json.RawMessage, indent string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, indent, "  "); err != nil {
		return indent + string(raw)
	}
	return indent + buf.String()
}

// writeJob prints a job for people, one field per line.
func writeJob(w io.Writer, j rota.Job, now time.Time) {
	line := func(name, value string) { fmt.Fprintf(w, "%-12s %s\n", name+":", value) }
	line("id", strconv.FormatInt(j.ID, 10))
	if b := bedrockID(j); b != "" {
		line("bedrock id", b)
	}
	line("type", j.Type)
	if j.Key != "" {
		line("key", j.Key)
	}
	line("group", orDash(j.Group))
	if len(j.Meta) > 0 {
		keys := slices.Sorted(maps.Keys(j.Meta))
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k + "=" + j.Meta[k]
		}
		line("meta", strings.Join(pairs, " "))
	}
	state := j.State.String()
	if j.CancelRequested && j.State != rota.Cancelled {
		state += " (cancel requested)"
	}
	if j.Resubmit {
		state += " (runs again when this attempt ends)"
	}
	if j.Expired {
		state += " (expired: its deadline passed before it started)"
	}
	line("state", state)
	if j.Parent != 0 {
		line("parent", strconv.FormatInt(j.Parent, 10))
	}
	if j.HasChildren {
		line("children", fmt.Sprintf("rota ls --parent %d", j.ID))
	}
	if j.Batch != 0 {
		line("batch", fmt.Sprintf("%d (rota batch get %d)", j.Batch, j.Batch))
	}
	line("priority", strconv.Itoa(j.Priority))
	line("attempts", fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts))
	if j.Schedule != "" {
		sched := j.Schedule
		if j.Missed != rota.MissedOnce {
			sched += " (missed slots: " + j.Missed.String() + ")"
		}
		line("schedule", sched)
		if !j.Slot.IsZero() {
			line("slot", stamp(j.Slot, now))
		}
	}
	if j.RetryAfter > 0 {
		line("retry after", j.RetryAfter.String()+" (a fixed lease: a run not finished by then runs again)")
	}
	if j.Timeout > 0 {
		line("timeout", j.Timeout.String()+" (a run that lasts longer is stopped and counts as a failed attempt)")
	}
	line("run at", stamp(j.RunAt, now))
	if !j.ExpiresAt.IsZero() {
		line("expires", stamp(j.ExpiresAt, now)+" (not started after this)")
	}
	line("created", stamp(j.CreatedAt, now))
	if !j.StartedAt.IsZero() {
		line("started", stamp(j.StartedAt, now))
	}
	if !j.FinishedAt.IsZero() {
		line("finished", stamp(j.FinishedAt, now))
	}
	line("updated", stamp(j.UpdatedAt, now))
	if j.Worker != "" {
		line("worker", j.Worker)
	}
	if j.State == rota.Running && !j.LeaseUntil.IsZero() {
		line("lease until", stamp(j.LeaseUntil, now))
	}
	if j.Progress != 0 || j.State == rota.Running {
		line("progress", percent(j.Progress))
	}
	if j.LastError != "" {
		line("last error", indentRest(j.LastError, strings.Repeat(" ", 13)))
	}
	if len(j.Errors) > 1 {
		fmt.Fprintln(w, "errors:")
		for _, e := range j.Errors {
			fmt.Fprintf(w, "  attempt %d at %s: %s\n", e.Attempt, e.At.Local().Format("2006-01-02 15:04:05"), truncate(e.Error, 100))
		}
	}
	fmt.Fprintln(w, "data:")
	fmt.Fprintln(w, prettyJSON(j.Data, "  "))
	if len(j.Result) > 0 {
		fmt.Fprintln(w, "result:")
		fmt.Fprintln(w, prettyJSON(j.Result, "  "))
	}
}

// indentRest indents every line of s after the first.
func indentRest(s, indent string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+indent)
}
