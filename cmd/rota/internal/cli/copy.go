package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
	"github.com/rotajobs/rota/store/sqlite"
)

// copyCommand is `rota copy`: everything one store holds, into another,
// while no server runs on either.
func copyCommand() *cobra.Command {
	var from, to, fromSchema, toSchema string
	var replace bool
	var batch int
	cmd := &cobra.Command{
		Use:   "copy --from SRC --to DST [--replace]",
		Short: "Copy everything a store holds into another (SQLite ↔ PostgreSQL), with the servers stopped",
		Long: `copy moves a deployment between stores: from a SQLite file to PostgreSQL
when one machine is no longer enough, or back. SRC and DST are each a
SQLite path (or sqlite:PATH) or a postgres:// URL; both are brought to this
rota's schema first.

Everything is copied: jobs in every state with their ids, Bedrock ids,
leases, errors, results, schedules and slots, parents and children; types
and their settings and clocks; groups' turns and settings; API tokens
(still hashed); and the next job id, so that removed ids stay unused.
Ended jobs keep their finish times, so retention deletes them when it
would have.

Stop every server of both stores first: copy refuses a SQLite file a
server holds, and a PostgreSQL schema that rota nodes serve (one of them
holds its sweep leadership).
It reads the source in one snapshot and writes the destination in one
transaction: if anything fails, the destination is left as it was. A
destination that holds anything is refused unless --replace is given,
which empties it (in the same transaction). After the commit, copy reads
the destination back and checks it: the jobs counted by type, group and
state, and a SHA-256 of every column of every job and of the settings.`,
		Example: "  rota copy --from rota-data/rota.db --to postgres://rota@db.internal/rota\n" +
			"  rota copy --from postgres://rota@db.internal/rota --to rota-data/rota.db --replace",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case from == "" || to == "":
				return usageErrorf("copy needs --from SRC and --to DST (a SQLite path or a postgres:// URL)")
			case batch < 1 || batch > 100000:
				return usageErrorf("--batch %d: want 1 to 100000 jobs", batch)
			}
			if a, b := sqlitePath(from, ""), sqlitePath(to, ""); a != "" && b != "" {
				if a, b = absPath(a), absPath(b); a == b {
					return usageErrorf("--from and --to name the same store (%s)", a)
				}
			}
			src, err := openCopyStore(cmd.Context(), "--from", from, fromSchema, true)
			if err != nil {
				return err
			}
			defer src.Close()
			dst, err := openCopyStore(cmd.Context(), "--to", to, toSchema, false)
			if err != nil {
				return err
			}
			defer dst.Close()
			if src.where == dst.where {
				return usageErrorf("--from and --to name the same store (%s)", src.where)
			}
			return runCopy(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), src, dst, replace, batch)
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the store to copy: a SQLite path, sqlite:PATH, or postgres://…")
	f.StringVar(&to, "to", "", "the store to copy into (created if it is a SQLite path that does not exist)")
	f.StringVar(&fromSchema, "from-schema", "rota", "PostgreSQL: the schema of rota's tables in --from")
	f.StringVar(&toSchema, "to-schema", "rota", "PostgreSQL: the schema of rota's tables in --to")
	f.BoolVar(&replace, "replace", false, "empty the destination first, if it holds anything")
	f.IntVar(&batch, "batch", 2000, "jobs read and written per batch")
	return cmd
}

// copyStore is one end of a copy, opened directly.
type copyStore struct {
	store.Copier
	where string // for people: "sqlite PATH" or "postgres URL (schema S)"
	close []func() error
}

func (c *copyStore) Close() {
	for i := len(c.close) - 1; i >= 0; i-- {
		c.close[i]()
	}
}

// openCopyStore opens the store spec names, for flag. A source must
// exist; neither may be in use by a server.
func openCopyStore(ctx context.Context, flag, spec, schema string, source bool) (*copyStore, error) {
	switch store.SchemeOf(spec) {
	case "postgres", "postgresql":
		st, err := postgres.Open(ctx, spec, postgres.Config{Schema: schema, NoListen: true, NoNotify: true, MaxConns: 2})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		c := &copyStore{Copier: st, close: []func() error{st.Close}}
		c.where = "postgres " + spec
		if u, err := url.Parse(spec); err == nil && u.Host != "" {
			u.User, u.RawQuery = nil, ""
			c.where = "postgres " + u.String()
		}
		c.where += " (schema " + st.Schema() + ")"
		served, err := st.Served(ctx)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		if served {
			c.Close()
			return nil, &exitError{code: exitConflict, err: fmt.Errorf("%s: rota nodes serve %s (one holds its sweep leadership): stop them first", flag, c.where)}
		}
		return c, nil
	case "sqlite":
		path := strings.TrimPrefix(spec, "sqlite:")
		if source {
			if _, err := os.Stat(path); err != nil {
				return nil, usageErrorf("%s %s: %v", flag, spec, err)
			}
		}
		lock, err := lockDatabase(path)
		if err != nil {
			return nil, &exitError{code: exitConflict, err: fmt.Errorf("%s: %w", flag, err)}
		}
		st, err := sqlite.Open(path, sqlite.Config{})
		if err != nil {
			lock.release()
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		return &copyStore{Copier: st, where: "sqlite " + absPath(path), close: []func() error{func() error { lock.release(); return nil }, st.Close}}, nil
	}
	return nil, usageErrorf("%s %q: want a SQLite path, sqlite:PATH or postgres://…", flag, spec)
}

func runCopy(ctx context.Context, out, errOut io.Writer, src, dst *copyStore, replace bool, batch int) error {
	fmt.Fprintf(out, "copying %s\n   into %s\n", src.where, dst.where)
	bar := newCopyBar(errOut, isTerminal(errOut))
	rep, err := store.Copy(ctx, src, dst, store.CopyOptions{BatchSize: batch, Replace: replace, Progress: bar.show})
	bar.done()
	switch {
	case errors.Is(err, store.ErrNotEmpty):
		return &exitError{code: exitConflict, err: fmt.Errorf("%w; nothing was copied (--replace empties it first)", err)}
	case errors.Is(err, store.ErrCopyMismatch):
		return fmt.Errorf("the copy was committed, but reading it back found differences: do not use it: %w", err)
	case err != nil:
		return fmt.Errorf("nothing was copied: %w", err)
	}
	s := rep.Source
	rate := float64(s.Jobs) / rep.Copied.Seconds()
	fmt.Fprintf(out, "copied %s (%s), %s, %s, %s and %s in %s (%.0f jobs/s); next job id %d\n",
		count(s.Jobs, "job"), byStateText(s.ByState), count(s.Types, "type"), count(s.Groups, "group"), count(s.GroupConfig, "group setting"),
		count(s.Tokens, "token"), rep.Copied.Round(time.Millisecond), rate, s.NextID)
	fmt.Fprintf(out, "checked in %s: the copy has the same jobs by type, group and state (%d counts) and the same checksums (jobs sha256:%s, settings sha256:%s)\n",
		rep.Checked.Round(time.Millisecond), len(s.Counts), s.JobsChecksum()[:16], s.SettingsChecksum()[:16])
	return nil
}

// absPath is path made absolute, or path when it cannot be.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// count is n things, in the plural unless n is 1.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func byStateText(by map[store.State]int) string {
	if len(by) == 0 {
		return "none"
	}
	states := make([]store.State, 0, len(by))
	for st := range by {
		states = append(states, st)
	}
	slices.Sort(states)
	parts := make([]string, len(states))
	for i, st := range states {
		parts[i] = fmt.Sprintf("%d %s", by[st], st)
	}
	return strings.Join(parts, ", ")
}

// copyBar draws a copy's progress on a terminal, at most ten times a
// second; elsewhere it draws nothing.
type copyBar struct {
	w     io.Writer
	on    bool
	start time.Time
	last  time.Time
	phase string
	drawn bool
}

// newCopyBar returns a bar that draws on w when on (w is a terminal).
func newCopyBar(w io.Writer, on bool) *copyBar {
	return &copyBar{w: w, on: on, start: time.Now()}
}

func (p *copyBar) show(phase string, done, total int) {
	if !p.on {
		return
	}
	if phase != p.phase {
		p.phase, p.start, p.last = phase, time.Now(), time.Time{}
	}
	if time.Since(p.last) < 100*time.Millisecond && done < total {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := width
	pct := 100.0
	if total > 0 {
		fill = min(width, width*done/total)
		pct = 100 * float64(done) / float64(total)
	}
	rate := float64(done) / max(time.Since(p.start).Seconds(), 1e-3)
	label := "copying"
	if phase == "check" {
		label = "checking"
	}
	fmt.Fprintf(p.w, "\r%-8s [%s%s] %5.1f%%  %d/%d jobs  %.0f jobs/s ", label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, done, total, rate)
	p.drawn = true
}

func (p *copyBar) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
