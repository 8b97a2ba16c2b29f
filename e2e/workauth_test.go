package e2e_test

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWorkStopsWhenRefused: a server restarted with --auth-token while
// `rota work` runs a job without a token refuses the job's finish; the
// worker does not try again until the lease runs out, but stops at once
// with a message that says what to do, and the table's exit status 6. A
// worker started with a wrong token stops the same way, at its first
// request.
func TestWorkStopsWhenRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	w := s.start(t, "work", "--type", "e2e.t", "--lease", "1m", "--", "sh", "-c", "sleep 1")
	jid := s.add(t, "e2e.t")
	eventually(t, "the job runs", func() bool { return s.get(t, jid).State == "running" })
	addr := strings.TrimPrefix(s.URL, "http://")
	stop(t, s.cmd, syscall.SIGTERM)
	serveAt(t, addr, s.data, "--auth-token", "e2e-secret")
	start := time.Now()
	if code := w.wait(t); code != exitAuth {
		t.Errorf("rota work exited %d after the server began to refuse it, want %d\n%s", code, exitAuth, w.stderr)
	}
	if took := time.Since(start); took > 15*time.Second { // the lease is a minute
		t.Errorf("rota work took %v to stop", took)
	}
	stderr := w.stderr.String()
	if want := "rota: the worker stopped: the server at " + s.URL + " needs a token: pass --token or set ROTA_TOKEN"; !strings.Contains(stderr, want) {
		t.Errorf("rota work's stderr does not say %q:\n%s", want, stderr)
	}
	if strings.Contains(stderr, "trying again") {
		t.Errorf("rota work tried a refused finish again:\n%s", stderr)
	}

	secured := *s
	secured.token = "wrong"
	r := secured.run(t, "", "work", "--type", "e2e.t", "--", "true")
	if r.code != exitAuth || !strings.Contains(r.stderr, "did not accept the token") {
		t.Errorf("rota work with a wrong token: %v", r)
	}
}
