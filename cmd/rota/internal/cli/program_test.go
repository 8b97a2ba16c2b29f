package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rotajobs/rota"
)

func TestStdoutParser(t *testing.T) {
	var got []float64
	var bad []string
	p := &stdoutParser{limit: 1 << 20, onProgress: func(v float64) { got = append(got, v) }, onBad: func(l string) { bad = append(bad, l) }}
	// Progress lines split across writes, mixed with output.
	for _, chunk := range []string{"rota:pro", "gress 10\n{\"a\":", " 1}\nrota:progress 42.5%\n", "rota:progress\t99\r\n", "rota:progress x\n", "rota:progressive\n", "rota:progress 100"} {
		p.Write([]byte(chunk))
	}
	p.flush()
	if want := []float64{10, 42.5, 99, 100}; !equalFloats(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
	if len(bad) != 2 {
		t.Errorf("bad lines = %q, want the two malformed directives", bad)
	}
	if r := string(p.result()); r != `{"a": 1}` {
		t.Errorf("result = %s, want the JSON without the progress lines", r)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStdoutParserResults(t *testing.T) {
	parse := func(out string, limit int) string {
		p := &stdoutParser{limit: limit, onProgress: func(float64) {}, onBad: func(string) {}}
		// Write byte by byte, the worst case for line splitting.
		for i := 0; i < len(out); i++ {
			p.Write([]byte{out[i]})
		}
		p.flush()
		return string(p.result())
	}
	for _, tc := range []struct{ out, want string }{
		{"", ""},
		{"  \n", ""},
		{"rota:progress 5\n", ""},
		{"[1, 2]\n", "[1, 2]"},
		{"42", "42"},
		{"\"quoted\"\n", `"quoted"`},
		{"hello <world> & co\n", `"hello <world> & co"`},
		{"line one\nline two\n", `"line one\nline two"`},
		{"{\"a\":1}\nrota:progress 50\n", `{"a":1}`},
		{"{\"a\":1}\n{\"b\":2}\n", `"{\"a\":1}\n{\"b\":2}"`},
		{"xrota:progress 5\n", `"xrota:progress 5"`},
	} {
		if got := parse(tc.out, 1<<20); got != tc.want {
			t.Errorf("stdout %q: result %s, want %s", tc.out, got, tc.want)
		}
	}
	// Output over the limit is never taken for JSON.
	if got := parse(`{"a": "0123456789"}`, 10); got != `"{\"a\": \"012"` {
		t.Errorf("overflowing JSON: result %s", got)
	}
	// A long line that starts like a directive is output.
	long := "rota:progress " + strings.Repeat("1", 100) + "\n"
	if got := parse(long, 1<<20); got != strconv.Quote(strings.TrimSpace(long)) {
		t.Errorf("long line: result %s", got)
	}
}

func TestTextResultCap(t *testing.T) {
	text := strings.Repeat("é", maxTextResult) // 2 bytes each
	raw := textResult([]byte(text))
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if len(s) > maxTextResult || len(s) < maxTextResult-1 || !utf8.ValidString(s) {
		t.Errorf("capped result is %d bytes (valid UTF-8: %v), want about %d", len(s), utf8.ValidString(s), maxTextResult)
	}
}

func TestParseProgress(t *testing.T) {
	for line, want := range map[string]float64{"rota:progress 0": 0, "rota:progress 100": 100, "rota:progress 3.25": 3.25, "rota:progress  7 %": 7} {
		if v, ok := parseProgress(line); !ok || v != want {
			t.Errorf("%q = %v, %v; want %v", line, v, ok, want)
		}
	}
	for _, line := range []string{"rota:progress", "rota:progress -1", "rota:progress 101", "rota:progress NaN", "rota:progress1", "rota:progress 5 6"} {
		if v, ok := parseProgress(line); ok {
			t.Errorf("%q = %v, want rejected", line, v)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 10}
	tb.Write([]byte("short\n"))
	if got := tb.text(); got != "short" {
		t.Errorf("text = %q", got)
	}
	for i := 0; i < 100; i++ {
		tb.Write([]byte("abcdefgh\n"))
	}
	tb.Write([]byte("the end\n"))
	if got := tb.text(); got != "…h\nthe end" {
		t.Errorf("text = %q, want the last 10 bytes after an ellipsis", got)
	}
	tb = &tailBuffer{max: 3}
	tb.Write([]byte("xéé")) // 5 bytes; the cut falls inside the first é
	if got := tb.text(); got != "…é" {
		t.Errorf("text = %q, want a whole character", got)
	}
}

func TestLinePrefixer(t *testing.T) {
	var b strings.Builder
	l := &linePrefixer{w: &b, prefix: "job 1 | "}
	l.Write([]byte("a\nb"))
	l.Write([]byte("c\n\nd"))
	l.flush()
	if want := "job 1 | a\njob 1 | bc\njob 1 | \njob 1 | d\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}

// TestRunProgramKillsGroup checks that stopping a program stops what it
// started too, and that a program that ignores SIGTERM gets SIGKILL.
func TestRunProgramKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	script := `trap '' TERM; sleep 60 & echo $$ $! > ` + pidFile + `.tmp; mv ` + pidFile + `.tmp ` + pidFile + `; wait`
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ctx, cancel := context.WithCancel(context.Background())
	progs := &programs{running: map[*program]struct{}{}}
	type result struct {
		startErr, waitErr error
		stopped           bool
	}
	done := make(chan result, 1)
	go func() {
		s, w, st := runProgram(ctx, cmd, 200*time.Millisecond, progs)
		done <- result{s, w, st}
	}()
	pids := readPidFile(t, pidFile)
	deadline := time.Now().Add(10 * time.Second)
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("runProgram did not return after its context ended")
	}
	if r.startErr != nil || !r.stopped {
		t.Fatalf("startErr %v, stopped %v; want a stopped program", r.startErr, r.stopped)
	}
	for time.Now().Before(deadline) && (alive(pids[0]) || alive(pids[1])) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still running", pid)
		}
	}
	if len(progs.running) != 0 {
		t.Errorf("programs still tracked: %v", progs.running)
	}
}

// readPidFile waits until a script has written its pids to path, and
// returns them.
func readPidFile(t *testing.T, path string) []int {
	t.Helper()
	var pids []int
	deadline := time.Now().Add(30 * time.Second)
	for len(pids) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the script did not write its pids")
		}
		if b, err := os.ReadFile(path); err == nil {
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return pids
}

// waitDead waits (generously) until the processes have ended, and
// fails the test for those that have not.
func waitDead(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d is still running", pid)
		}
	}
}

// TestRunProgramKillsLeftovers checks that when a program exits by
// itself, what it started and left running in its group is killed, even
// when it no longer holds the program's output open.
func TestRunProgramKillsLeftovers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	script := `sleep 300 >/dev/null 2>&1 & echo $! > ` + pidFile + `.tmp; mv ` + pidFile + `.tmp ` + pidFile + `; echo done`
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = programAttr()
	var out strings.Builder
	cmd.Stdout = &out
	progs := &programs{running: map[*program]struct{}{}}
	startErr, waitErr, stopped := runProgram(context.Background(), cmd, 10*time.Second, progs)
	if startErr != nil || waitErr != nil || stopped {
		t.Fatalf("startErr %v, waitErr %v, stopped %v; want a program that exited by itself", startErr, waitErr, stopped)
	}
	if out.String() != "done\n" {
		t.Errorf("stdout %q", out.String())
	}
	waitDead(t, readPidFile(t, pidFile))
}

// TestProgramsKillAll checks that killAll, which every way out of "rota
// work" runs, kills running programs with what they started.
func TestProgramsKillAll(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	script := `sleep 300 & echo $$ $! > ` + pidFile + `.tmp; mv ` + pidFile + `.tmp ` + pidFile + `; wait`
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = programAttr()
	progs := &programs{running: map[*program]struct{}{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runProgram(context.Background(), cmd, 10*time.Second, progs)
	}()
	pids := readPidFile(t, pidFile)
	progs.killAll()
	if !progs.wait(30 * time.Second) {
		t.Fatal("the program did not end after killAll")
	}
	<-done
	waitDead(t, pids)
}

// TestGuardKillsGroups feeds runGuard the groups of two real programs,
// one of them removed again: when its input ends, it kills the group it
// still knows of, with what the program started, and leaves the other.
func TestGuardKillsGroups(t *testing.T) {
	dir := t.TempDir()
	start := func(name string) (*exec.Cmd, []int) {
		path := filepath.Join(dir, name)
		cmd := exec.Command("sh", "-c", `sleep 300 & echo $$ $! > `+path+`.tmp; mv `+path+`.tmp `+path+`; wait`)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pids := readPidFile(t, path)
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		})
		return cmd, pids
	}
	doomed, doomedPids := start("doomed")
	kept, keptPids := start("kept")
	reaped := make(chan struct{})
	go func() {
		doomed.Wait()
		close(reaped)
	}()
	in := fmt.Sprintf("+%d\n+%d\n-%d\n", doomed.Process.Pid, kept.Process.Pid, kept.Process.Pid)
	runGuard(strings.NewReader(in), "test-"+strconv.Itoa(os.Getpid()))
	select {
	case <-reaped:
	case <-time.After(30 * time.Second):
		t.Fatal("the guard did not kill the group it was left with")
	}
	waitDead(t, doomedPids)
	for _, pid := range keptPids {
		if !alive(pid) {
			t.Errorf("process %d of the removed group was killed", pid)
		}
	}
}

// TestPermanentError checks that exit status 65 fails a job for good
// with the documented error text, without rota.Permanent's prefix.
func TestPermanentError(t *testing.T) {
	err := permanentError("exit status 65: bad data")
	var perm *rota.PermanentError
	if !errors.As(err, &perm) {
		t.Errorf("%v is not a rota.PermanentError", err)
	}
	if err.Error() != "exit status 65: bad data" {
		t.Errorf("error text %q, want the message alone", err.Error())
	}
}

// TestGuardKillsMarked: a program the guard was never told of (its worker
// died between starting it and reporting its group) still dies with what
// it started, by the token in their environment; a process without the
// token is left alone.
func TestGuardKillsMarked(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	token := "test-marked-" + strconv.Itoa(os.Getpid())
	start := func(name string, env []string) []int {
		path := filepath.Join(dir, name)
		cmd := exec.Command("sh", "-c", `sleep 300 & echo $$ $! > `+path+`.tmp; mv `+path+`.tmp `+path+`; wait`)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait() // reap it, so that a killed program is not a zombie
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		return readPidFile(t, path)
	}
	marked := start("marked", []string{guardEnv + "=" + token})
	other := start("other", []string{guardEnv + "=another-worker"})
	runGuard(strings.NewReader(""), token)
	waitDead(t, marked)
	for _, pid := range other {
		if !alive(pid) {
			t.Errorf("process %d, marked by another worker's guard, was killed", pid)
		}
	}
}
