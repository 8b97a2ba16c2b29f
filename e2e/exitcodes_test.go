package e2e_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// The exit statuses of docs/cli.md's table, which every command keeps.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitNotFound    = 3
	exitConflict    = 4
	exitUnavailable = 5
	exitAuth        = 6
)

// TestExitCodes runs each client command through each case of the exit
// status table (docs/cli.md, "Exit statuses"): success, bad input, a job
// that does not exist, a job whose state does not allow it, no server,
// and a server that wants a token. Each command must answer each case
// with the table's status, and its message must name the job once.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	done := s.add(t, "e2e.done")
	s.rota(t, "cancel", id(done)) // an ended job: cancelled
	pending := s.add(t, "e2e.pending", "--in", "1h")
	completed := s.add(t, "e2e.completed")
	w := s.start(t, "work", "--type", "e2e.completed", "--", "true")
	eventually(t, "job "+id(completed)+" completes", func() bool { return s.get(t, completed).State == "completed" })
	w.signal(t, syscall.SIGTERM)

	const missing = "999999"
	// each command: how it succeeds, bad input, a missing job, a job that
	// cannot (nil: the case does not apply to the command).
	type command struct {
		name              string
		ok, bad, notFound []string
		notFoundSays      string // default: the missing job's message
		conflict          []string
		conflictSays      string
		on                *server // where ok, notFound and conflict run; default s
	}
	nobody := &server{URL: closedURL(t)}
	secured := startServer(t, "--auth-token", "e2e-secret")
	admin := *secured
	admin.token = "e2e-secret"
	commands := []command{
		{name: "add", ok: []string{"add", "e2e.t"}, bad: []string{"add", "e2e.t", "{bad"}},
		{name: "get", ok: []string{"get", id(pending)}, bad: []string{"get", "x"}, notFound: []string{"get", missing}},
		{name: "ls", ok: []string{"ls"}, bad: []string{"ls", "--state", "bogus"}},
		{name: "stats", ok: []string{"stats"}, bad: []string{"stats", "extra"}},
		{name: "cancel", ok: []string{"cancel", id(done)}, bad: []string{"cancel", "x"}, notFound: []string{"cancel", missing},
			conflict: []string{"cancel", id(completed)}, conflictSays: "job " + id(completed) + " has already ended (completed)"},
		{name: "retry", ok: []string{"retry", id(pending), "--in", "2h"}, bad: []string{"retry", "x"}, notFound: []string{"retry", missing}},
		{name: "rm", ok: []string{"rm", id(done)}, bad: []string{"rm", "x"}, notFound: []string{"rm", missing}},
		{name: "update", ok: []string{"update", id(pending), "--priority", "3"}, bad: []string{"update", id(pending)}, notFound: []string{"update", missing, "--priority", "1"},
			conflict: []string{"update", id(completed), "--in", "1h"}, conflictSays: "job " + id(completed) + " is completed: only a pending or paused job's run time can change"},
		{name: "wait", ok: []string{"wait", id(completed)}, bad: []string{"wait", "x"}, notFound: []string{"wait", missing}},
		{name: "watch", ok: []string{"watch", "--job", id(completed)}, bad: []string{"watch", "--job", "x"}, notFound: []string{"watch", "--job", missing}},
		{name: "pause", ok: []string{"pause", "--type", "e2e.paused"}, bad: []string{"pause"}},
		{name: "resume", ok: []string{"resume", "--type", "e2e.paused"}, bad: []string{"resume"}},
		{name: "limit", ok: []string{"limit", "--type", "e2e.limited", "--max-running", "3"}, bad: []string{"limit", "--type", "e2e.limited", "--max-running", "-1"}},
		{name: "work", bad: []string{"work", "--type", "e2e.t"}},
		{name: "token create", on: &admin, ok: []string{"token", "create", "e2e-tenant", "--groups", "t-*"}, bad: []string{"token", "create"}},
		{name: "token ls", on: &admin, ok: []string{"token", "ls"}, bad: []string{"token", "ls", "extra"}},
		{name: "token revoke", on: &admin, ok: []string{"token", "revoke", "e2e-tenant"}, bad: []string{"token", "revoke"},
			notFound: []string{"token", "revoke", "nosuch"}, notFoundSays: `no token named "nosuch"`},
	}
	// The name of a job said twice: "job 9: job 9 …", "999999: job 999999".
	twice := regexp.MustCompile(`(\d+): job \d+|job \d+: job (?:not found|already finished)`)
	check := func(t *testing.T, r result, want int, says string) {
		t.Helper()
		if r.code != want {
			t.Errorf("exit status %d, want %d: %v", r.code, want, r)
		}
		if want != exitOK && !strings.HasPrefix(r.stderr, "rota: ") {
			t.Errorf("no error message on stderr: %v", r)
		}
		if twice.MatchString(r.stderr) {
			t.Errorf("the message repeats itself: %v", r)
		}
		if says != "" && !strings.Contains(r.stderr, says) {
			t.Errorf("the message does not say %q: %v", says, r)
		}
	}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			on := c.on
			if on == nil {
				on = s
			}
			if c.ok != nil {
				check(t, on.run(t, "", c.ok...), exitOK, "")
			}
			check(t, on.run(t, "", c.bad...), exitUsage, "")
			check(t, nobody.run(t, "", c.bad...), exitUsage, "") // before contacting anyone
			if c.notFound != nil {
				says := c.notFoundSays
				if says == "" {
					says = "job " + missing + " not found"
				}
				check(t, on.run(t, "", c.notFound...), exitNotFound, says)
			}
			if c.conflict != nil {
				check(t, on.run(t, "", c.conflict...), exitConflict, c.conflictSays)
			}
			reach := c.ok
			if reach == nil {
				reach = []string{"work", "--type", "e2e.t", "--", "true"}
			}
			check(t, nobody.run(t, "", reach...), exitUnavailable, "no rota server answered at "+nobody.URL)
			check(t, secured.run(t, "", reach...), exitAuth, "needs a token")
		})
	}
	// rota copy opens stores, not a server: success, bad input, and a
	// destination that holds jobs (conflict), each saying so.
	t.Run("copy", func(t *testing.T) {
		dir := t.TempDir()
		src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
		check(t, nobody.run(t, "", "copy", "--from", s.data+"/rota.db", "--to", src), exitConflict, "is serving")
		check(t, nobody.run(t, "", "copy", "--from", filepath.Join(dir, "missing.db"), "--to", dst), exitUsage, "missing.db")
		check(t, nobody.run(t, "", "copy", "--from", src), exitUsage, "--to")
		check(t, nobody.run(t, "", "copy", "--from", src, "--to", "sqlite:"+dir+"/./src.db"), exitUsage, "the same store")
		check(t, nobody.run(t, "", "copy", "--from", "mysql://x", "--to", dst), exitUsage, "want a SQLite path")
		seed := &server{}
		check(t, seed.run(t, "", "migrate", "--store", src), exitOK, "")
		check(t, seed.run(t, "", "copy", "--from", src, "--to", dst), exitOK, "")
		check(t, seed.run(t, "", "copy", "--from", dst, "--to", src), exitOK, "") // both empty
		// A destination with a job in it.
		check(t, serveOnce(t, src, "e2e.copy"), exitOK, "")
		check(t, seed.run(t, "", "copy", "--from", src, "--to", dst), exitOK, "")
		check(t, seed.run(t, "", "copy", "--from", src, "--to", dst), exitConflict, "not empty")
		check(t, seed.run(t, "", "copy", "--from", src, "--to", dst, "--replace"), exitOK, "")
	})
	// Several jobs that fail alike share their class; unlike, exitFailed.
	check(t, s.run(t, "", "rm", missing, "999998"), exitNotFound, "")
	check(t, s.run(t, "", "cancel", missing, id(completed)), exitFailed, "")
	check(t, s.run(t, "", "wait", id(done)), exitNotFound, "") // removed above by rm
}

// serveOnce serves the SQLite database at path, adds a job of typ through
// the server, stops it, and returns how the add ended.
func serveOnce(t *testing.T, path, typ string) result {
	t.Helper()
	srv := serveAt(t, "127.0.0.1:0", filepath.Dir(path), "--store", path)
	r := srv.run(t, "", "add", typ)
	stop(t, srv.cmd, syscall.SIGTERM)
	return r
}
