package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// serveRefused runs a `rota serve` that must refuse to start and returns
// its stderr.
func serveRefused(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("rota serve %s was not refused: it still ran after %v\n%s", strings.Join(args, " "), commandTimeout, out)
	}
	if err == nil {
		t.Fatalf("rota serve %s exited 0, want a refusal:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// TestServeLocksData: a second `rota serve` (or `rota demo`) on the data
// directory a server serves refuses to start, naming the running server's
// pid, by --data or by --store naming the same file; once the first ends,
// by SIGTERM or by SIGKILL, the directory can be served again.
func TestServeLocksData(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	first := serveAt(t, "127.0.0.1:0", data)
	says := fmt.Sprintf("another rota process (pid %d) is serving %s", first.cmd.Process.Pid, filepath.Join(data, "rota.db"))
	for _, args := range [][]string{{"--data", data}, {"--store", filepath.Join(data, "rota.db")}, {"--store", "sqlite:" + filepath.Join(data, ".", "rota.db")}} {
		if out := serveRefused(t, args...); !strings.Contains(out, says) {
			t.Errorf("a second rota serve %s said:\n%s\nwant %q", strings.Join(args, " "), out, says)
		}
	}
	if out := first.run(t, "", "demo", "--data", data, "--jobs", "1"); out.code == 0 || !strings.Contains(out.stderr, says) {
		t.Errorf("rota demo on a served directory: %v", out)
	}
	first.add(t, "e2e.t") // the first server still serves

	stop(t, first.cmd, syscall.SIGKILL) // the kernel drops the lock with the process
	second := serveAt(t, "127.0.0.1:0", data)
	if j := second.get(t, 1); j.Type != "e2e.t" {
		t.Errorf("after a SIGKILL the next server sees %+v", j)
	}
	if out := serveRefused(t, "--data", data); !strings.Contains(out, fmt.Sprintf("(pid %d)", second.cmd.Process.Pid)) {
		t.Errorf("a third rota serve does not name the second's pid %d:\n%s", second.cmd.Process.Pid, out)
	}
	stop(t, second.cmd, syscall.SIGTERM)
	serveAt(t, "127.0.0.1:0", data) // released on a graceful exit too

	// Another directory is another database.
	serveAt(t, "127.0.0.1:0", t.TempDir())
}
