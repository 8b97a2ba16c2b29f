package e2e_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pidsScript is a worker script that records its pid and the pid of a
// child of its own in DIR/pids.ID, then waits for the child.
func pidsScript(dir string) string {
	return `sleep 300 &
echo $$ $! > '` + dir + `'/tmp.$ROTA_JOB_ID
mv '` + dir + `'/tmp.$ROTA_JOB_ID '` + dir + `'/pids.$ROTA_JOB_ID
wait`
}

// readPids waits until the script of job jid has recorded its pids, and
// returns them.
func readPids(t *testing.T, dir string, jid int64) []int {
	t.Helper()
	var pids []int
	eventually(t, "the script records its pids", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pids."+id(jid)))
		if err != nil {
			return false
		}
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
		return true
	})
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d of job %d is not running", pid, jid)
		}
	}
	return pids
}

// TestWorkManyJobs runs many overlapping jobs, and re-adds some while
// they run: every job completes on its first attempt with its result, and
// the worker never takes the events about its jobs (their add, their
// re-add) for a lost lease.
func TestWorkManyJobs(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	w := s.start(t, "work", "--type", "e2e.many", "--concurrency", "8", "--shutdown-timeout", "2s", "--",
		"sh", "-c", `read -r data; echo "rota:progress 10"; sleep 0.2; echo "rota:progress 90"; echo "{\"id\": $ROTA_JOB_ID, \"in\": $data}"`)
	var jobs []int64
	for i := range 24 {
		jobs = append(jobs, s.add(t, "e2e.many", `{"i":`+strconv.Itoa(i)+`}`, "--key", "k"+strconv.Itoa(i)))
	}
	// Re-add some of them, running or not: each runs once more after the
	// attempt under way, if any.
	for i := 0; i < 24; i += 4 {
		s.add(t, "e2e.many", `{"i":`+strconv.Itoa(i)+`,"again":true}`, "--key", "k"+strconv.Itoa(i))
	}
	for i, jid := range jobs {
		if r := s.run(t, "", "wait", id(jid)); r.code != 0 {
			t.Fatalf("%v", r)
		}
		j := s.get(t, jid)
		want := `{"id":` + id(jid) + `,"in":{"i":` + strconv.Itoa(i)
		if i%4 == 0 {
			want += `,"again":true`
		}
		want += "}}"
		if j.State != "completed" || j.Attempt != 1 || compact(j.Result) != want || j.Progress != 90 {
			t.Errorf("job %d: state %s, attempt %d, progress %v, result %s; want completed on attempt 1 with %s", jid, j.State, j.Attempt, j.Progress, j.Result, want)
		}
	}
	if code := w.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("worker exited with status %d", code)
	}
	for _, bad := range []string{"job stopped", "lease lost", "job abandoned", "finish failed", "level=ERROR", "level=WARN"} {
		if strings.Contains(w.stderr.String(), bad) {
			t.Errorf("the worker's log says %q:\n%s", bad, w.stderr)
		}
	}
}

// TestWorkLeaseLost checks that a program is stopped when its worker
// loses the job's lease, and that the job runs again.
func TestWorkLeaseLost(t *testing.T) {
	for _, concurrency := range []string{"1", "2"} {
		t.Run("concurrency="+concurrency, func(t *testing.T) {
			t.Parallel()
			testWorkLeaseLost(t, concurrency)
		})
	}
}

// testWorkLeaseLost stops a worker until its lease expires. With
// concurrency 2 the worker also has an accept waiting on the server, which
// can hand it the same job again while the first run is still going: the
// first run must then stop, and the second must keep its lease.
func testWorkLeaseLost(t *testing.T, concurrency string) {
	s := startServer(t)
	dir := t.TempDir()
	script := `[ "$ROTA_JOB_ATTEMPT" -gt 1 ] && { echo "{\"attempt\": $ROTA_JOB_ATTEMPT}"; exit 0; }
` + pidsScript(dir)
	w := s.start(t, "work", "--type", "e2e.lease", "--concurrency", concurrency, "--lease", "1s", "--kill-grace", "1s", "--shutdown-timeout", "2s", "--", "sh", "-c", script)
	jid := s.add(t, "e2e.lease")
	pids := readPids(t, dir, jid)

	// A stopped worker sends no heartbeats; its lease expires.
	w.cmd.Process.Signal(syscall.SIGSTOP)
	eventually(t, "the lease expires", func() bool { return s.get(t, jid).State != "running" || s.get(t, jid).Attempt > 1 })
	w.cmd.Process.Signal(syscall.SIGCONT)
	eventually(t, "the program is stopped", func() bool { return !alive(pids[0]) && !alive(pids[1]) })
	if r := s.run(t, "", "wait", id(jid)); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if j := s.get(t, jid); j.State != "completed" || j.Attempt != 2 || compact(j.Result) != `{"attempt":2}` {
		t.Errorf("job %d: state %s, attempt %d, result %s; want completed by a second attempt", jid, j.State, j.Attempt, j.Result)
	}
	if !strings.Contains(w.stderr.String(), "lease lost") {
		t.Errorf("the worker's log does not say that the lease was lost:\n%s", w.stderr)
	}
}

// TestWorkShutdownGrace checks that on shutdown a program gets
// --kill-grace between SIGTERM and SIGKILL, and its job is handed back.
func TestWorkShutdownGrace(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "cleaned-up")
	script := `trap 'sleep 2; echo done > "` + marker + `"; exit 1' TERM
` + pidsScript(dir)
	w := s.start(t, "work", "--type", "e2e.grace", "--kill-grace", "10s", "--shutdown-timeout", "200ms", "--", "sh", "-c", script)
	jid := s.add(t, "e2e.grace")
	pids := readPids(t, dir, jid)
	start := time.Now()
	if code := w.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("worker exited with status %d", code)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the program did not finish cleaning up after SIGTERM (worker stopped after %v): %v", time.Since(start), err)
	}
	if alive(pids[0]) || alive(pids[1]) {
		t.Errorf("processes %v outlived the worker", pids)
	}
	if j := s.get(t, jid); j.State != "pending" || j.Attempt != 0 {
		t.Errorf("after shutdown, job %d is %s with attempt %d; want pending with the attempt given back", jid, j.State, j.Attempt)
	}
}

// TestWorkStopNow checks that a second signal stops running programs at
// once, without waiting for --shutdown-timeout, and hands their jobs back.
func TestWorkStopNow(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	w := s.start(t, "work", "--type", "e2e.now", "--kill-grace", "1s", "--shutdown-timeout", "60s", "--", "sh", "-c", pidsScript(dir))
	jid := s.add(t, "e2e.now")
	pids := readPids(t, dir, jid)
	w.cmd.Process.Signal(syscall.SIGTERM)
	eventually(t, "the worker is shutting down", func() bool { return strings.Contains(w.stderr.String(), "shutting down") })
	start := time.Now()
	if code := w.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("worker exited with status %d", code)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the worker took %v to stop after the second signal", d)
	}
	if alive(pids[0]) || alive(pids[1]) {
		t.Errorf("processes %v outlived the worker", pids)
	}
	if j := s.get(t, jid); j.State != "pending" || j.Attempt != 0 {
		t.Errorf("after a second signal, job %d is %s with attempt %d; want pending with the attempt given back", jid, j.State, j.Attempt)
	}
}

// TestWorkKilledTakesItsProgram kills `rota work` with SIGKILL while its
// program runs: neither the program nor what it started may run on as an
// orphan.
func TestWorkKilledTakesItsProgram(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	w := s.start(t, "work", "--type", "e2e.killed", "--", "sh", "-c", pidsScript(dir))
	jid := s.add(t, "e2e.killed")
	pids := readPids(t, dir, jid)
	w.signal(t, syscall.SIGKILL)
	eventually(t, "the program dies with its worker", func() bool { return !alive(pids[0]) })
	eventually(t, "what the program started dies with it", func() bool { return !alive(pids[1]) })
}

// TestWorkKillsLeftovers checks that what a program started and left
// running, with its output elsewhere, is killed when the program exits:
// nothing of a job's run goes on after it.
func TestWorkKillsLeftovers(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	w := s.start(t, "work", "--type", "e2e.leftovers", "--", "sh", "-c",
		`sleep 300 >/dev/null 2>&1 & echo $! > '`+dir+`'/tmp; mv '`+dir+`'/tmp '`+dir+`'/pid; echo '"done"'`)
	jid := s.add(t, "e2e.leftovers")
	if r := s.run(t, "", "wait", id(jid)); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if j := s.get(t, jid); j.State != "completed" || compact(j.Result) != `"done"` {
		t.Errorf("job %d: state %s, result %s; want completed with \"done\"", jid, j.State, j.Result)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	eventually(t, "the program's leftover process is killed", func() bool { return !alive(pid) })
	if strings.Contains(w.stderr.String(), "level=WARN") {
		t.Errorf("the worker's log has warnings:\n%s", w.stderr)
	}
}

// TestWorkShutdownKeepsLeaseUntilExit shuts a worker down while its
// program ignores SIGTERM for a while, and starts a second worker at once:
// the first worker must hold the job until its program has exited, so the
// second runs it only afterwards, never at the same time.
func TestWorkShutdownKeepsLeaseUntilExit(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	// Each run takes the directory "running" (mkdir is atomic) and gives it
	// back as it exits; a run that finds it taken records an overlap. The
	// first run waits for SIGTERM and then carries on until the test says
	// the second worker is up ("w2-ready"), and a little longer, so that
	// the second worker has every chance to take the job too early.
	script := `d='` + dir + `'
if ! mkdir "$d/running" 2>/dev/null; then echo "$$" >> "$d/overlap"; fi
echo "$$" >> "$d/runs"
if mkdir "$d/first" 2>/dev/null; then
	trap 'echo "$$" > "$d/termed"; i=0; while [ ! -e "$d/w2-ready" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; sleep 2; rmdir "$d/running"; exit 1' TERM
	echo "$$" > "$d/pid.tmp"; mv "$d/pid.tmp" "$d/pid"
	sleep 300 &
	wait
	exit 1
fi
rmdir "$d/running"
echo '"second run"'`
	// The first run outlasts w1's lease (2s) after the shutdown began: w1
	// must keep heartbeating through it.
	w1 := s.start(t, "work", "--type", "e2e.overlap", "--lease", "2s", "--shutdown-timeout", "200ms", "--kill-grace", "60s", "--", "sh", "-c", script)
	jid := s.add(t, "e2e.overlap")
	eventually(t, "the first run starts", func() bool {
		_, err := os.Stat(filepath.Join(dir, "pid"))
		return err == nil
	})
	w1.cmd.Process.Signal(syscall.SIGTERM)
	eventually(t, "the first run gets SIGTERM", func() bool {
		_, err := os.Stat(filepath.Join(dir, "termed"))
		return err == nil
	})
	w2 := s.start(t, "work", "--type", "e2e.overlap", "--shutdown-timeout", "2s", "--", "sh", "-c", script)
	eventually(t, "the second worker is up", func() bool { return strings.Contains(w2.stderr.String(), "rota worker started") })
	if err := os.WriteFile(filepath.Join(dir, "w2-ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := w1.wait(t); code != 0 {
		t.Errorf("the first worker exited with status %d", code)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "pid")); err != nil {
		t.Error(err)
	} else if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); alive(pid) {
		t.Errorf("the first run (process %d) outlived its worker", pid)
	}
	if r := s.run(t, "", "wait", id(jid)); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlap")); err == nil {
		runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
		t.Errorf("runs %q started while another run of the job was still going (all runs: %q)", b, runs)
	}
	if j := s.get(t, jid); j.State != "completed" || j.Attempt != 1 || compact(j.Result) != `"second run"` {
		t.Errorf("job %d: state %s, attempt %d, result %s; want completed by the second run on attempt 1 (the first handed back)", jid, j.State, j.Attempt, j.Result)
	}
	if runs, _ := os.ReadFile(filepath.Join(dir, "runs")); len(strings.Fields(string(runs))) != 2 {
		t.Errorf("the job ran %d times, want 2 (pids %q)", len(strings.Fields(string(runs))), runs)
	}
}

// TestWorkFinishSurvivesServerRestart stops the server while a job's
// program runs, lets the program exit while the server is down, and then
// starts the server again on the same port with the same data: the worker
// must keep trying to finish the job until the server is back, and the job
// must run exactly once.
func TestWorkFinishSurvivesServerRestart(t *testing.T) {
	// Not parallel, so that no other test's server takes the port while
	// this one is down.
	s := startServer(t)
	dir := t.TempDir()
	script := `d='` + dir + `'
echo "$$" >> "$d/runs"
: > "$d/started"
i=0; while [ ! -e "$d/go" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
echo '"finished"'`
	// The lease outlasts the server's restart by far.
	w := s.start(t, "work", "--type", "e2e.restart", "--lease", "20s", "--", "sh", "-c", script)
	jid := s.add(t, "e2e.restart")
	eventually(t, "the program starts", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	stop(t, s.cmd, syscall.SIGTERM)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker fails to finish the job while the server is down", func() bool {
		return strings.Contains(w.stderr.String(), "finish failed")
	})
	s.restart(t)
	eventually(t, "the job completes", func() bool { return s.get(t, jid).State == "completed" })
	if j := s.get(t, jid); j.Attempt != 1 || compact(j.Result) != `"finished"` {
		t.Errorf("job %d: attempt %d, result %s; want completed on attempt 1 with \"finished\"", jid, j.Attempt, j.Result)
	}
	if runs, _ := os.ReadFile(filepath.Join(dir, "runs")); len(strings.Fields(string(runs))) != 1 {
		t.Errorf("the program ran %d times, want once (pids %q)", len(strings.Fields(string(runs))), runs)
	}
	if code := w.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("worker exited with status %d", code)
	}
	for _, bad := range []string{"giving up", "job abandoned", "lease lost"} {
		if strings.Contains(w.stderr.String(), bad) {
			t.Errorf("the worker's log says %q:\n%s", bad, w.stderr)
		}
	}
}

// TestWorkStopsProgramWhenLeaseRunsOut stops the server for good while a
// job's program runs: once the lease has run out without a heartbeat
// getting through, the job is no longer the worker's (the server would
// hand it to another), so the program must be stopped.
func TestWorkStopsProgramWhenLeaseRunsOut(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	w := s.start(t, "work", "--type", "e2e.unreachable", "--lease", "2s", "--kill-grace", "1s", "--", "sh", "-c", pidsScript(dir))
	jid := s.add(t, "e2e.unreachable")
	pids := readPids(t, dir, jid)
	stop(t, s.cmd, syscall.SIGTERM)
	eventually(t, "the program is stopped", func() bool { return !alive(pids[0]) && !alive(pids[1]) })
	if !strings.Contains(w.stderr.String(), "lease lost") || !strings.Contains(w.stderr.String(), "id="+id(jid)) {
		t.Errorf("the worker's log does not say that job %d's lease was lost:\n%s", jid, w.stderr)
	}
}

// TestWorkJobTimeout runs a program that hangs past its job's timeout
// (rota add --timeout) under a worker that keeps heartbeating: the program
// and its child are stopped, the attempt fails as "timed out after 2s",
// and the job's second attempt completes. rota get shows the timeout.
func TestWorkJobTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	dir := t.TempDir()
	script := `[ "$ROTA_JOB_ATTEMPT" -gt 1 ] && { echo "{\"attempt\": $ROTA_JOB_ATTEMPT}"; exit 0; }
` + pidsScript(dir)
	w := s.start(t, "work", "--type", "e2e.timeout", "--lease", "1s", "--kill-grace", "1s", "--shutdown-timeout", "2s", "--", "sh", "-c", script)
	jid := s.add(t, "e2e.timeout", "--timeout", "2s", "--max-attempts", "2", "--backoff-base", "10ms", "--backoff-max", "10ms")
	if r := s.run(t, "", "get", id(jid)); r.code != 0 || !strings.Contains(r.stdout, "timeout") || !strings.Contains(r.stdout, "2s") {
		t.Errorf("rota get does not show the timeout: %v", r)
	}
	pids := readPids(t, dir, jid)
	eventually(t, "the program is stopped", func() bool { return !alive(pids[0]) && !alive(pids[1]) })
	if r := s.run(t, "", "wait", id(jid)); r.code != 0 {
		t.Fatalf("%v", r)
	}
	j := s.get(t, jid)
	if j.State != "completed" || j.Attempt != 2 || len(j.Errors) != 1 || j.Errors[0].Error != "timed out after 2s" {
		t.Errorf("job %d: state %s, attempt %d, errors %+v; want completed by a second attempt after one that timed out", jid, j.State, j.Attempt, j.Errors)
	}
	if code := w.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("worker exited with status %d", code)
	}
	// The worker's deadline and the server's sweep race: the program is
	// stopped by whichever comes first.
	if log := w.stderr.String(); !strings.Contains(log, "longer than its timeout") && !strings.Contains(log, "lease lost") {
		t.Errorf("the worker's log does not say that the job was stopped:\n%s", log)
	}
}
