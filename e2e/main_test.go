// Package e2e_test drives a real rota server through the rota binary: it
// builds the binary once, starts `rota serve` on a loopback port for each
// test, and runs the CLI's commands (including `rota work` with shell
// scripts) against it.
package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bin is the rota binary under test.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rota-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "rota")
	build := exec.Command("go", "build", "-o", bin, "github.com/rotajobs/rota/cmd/rota")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building rota:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// commandTimeout bounds one CLI command, only to keep a hang from
// blocking the run.
const commandTimeout = 30 * time.Second

// server is a running `rota serve`.
type server struct {
	URL   string
	token string
	log   *syncBuffer

	cmd  *exec.Cmd
	data string   // its data directory
	args []string // its extra arguments
}

var servingRE = regexp.MustCompile(`msg="rota serving".* http=(https?://\S+)`)

// startServer starts `rota serve` on a free loopback port with its own
// data directory; it stops when the test ends.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	return serveAt(t, "127.0.0.1:0", t.TempDir(), args...)
}

// serveAt starts `rota serve` on addr with the data directory data; it
// stops when the test ends.
func serveAt(t *testing.T, addr, data string, args ...string) *server {
	t.Helper()
	return serveWith(t, bin, addr, data, args...)
}

// serveWith is serveAt with another rota binary (an older release).
func serveWith(t *testing.T, binary, addr, data string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--http", addr, "--data", data}, args...)...)
	cmd.Env = cleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{log: &syncBuffer{}, cmd: cmd, data: data, args: args}
	served := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.log.Write([]byte(line + "\n"))
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case served <- m[1]:
				default:
				}
			}
		}
		close(served)
	}()
	t.Cleanup(func() { stop(t, cmd, syscall.SIGTERM) })
	select {
	case u, ok := <-served:
		if !ok {
			t.Fatalf("rota serve exited before serving:\n%s", s.log)
		}
		s.URL = u
	case <-time.After(commandTimeout):
		t.Fatalf("rota serve did not log its address:\n%s", s.log)
	}
	return s
}

// restart stops the server and starts it again on the same address with
// the same data directory (and token).
func (s *server) restart(t *testing.T) {
	t.Helper()
	stop(t, s.cmd, syscall.SIGTERM)
	again := serveAt(t, strings.TrimPrefix(s.URL, "http://"), s.data, s.args...)
	if again.URL != s.URL {
		t.Fatalf("the restarted server serves %s, not %s", again.URL, s.URL)
	}
	s.cmd, s.log = again.cmd, again.log
}

// stop signals a process and waits for it, killing it if it takes too
// long.
func stop(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) {
	cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Errorf("%s did not stop after %v; killing it", strings.Join(cmd.Args, " "), sig)
		cmd.Process.Kill()
		<-done
	}
}

// cleanEnv is the environment without ROTA_ variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ROTA_") {
			env = append(env, kv)
		}
	}
	return env
}

func (s *server) env() []string {
	env := append(cleanEnv(), "ROTA_SERVER="+s.URL)
	if s.token != "" {
		env = append(env, "ROTA_TOKEN="+s.token)
	}
	return env
}

// result is how a command ended.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r result) String() string {
	return fmt.Sprintf("rota %s: exit status %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// run runs the CLI against the server with stdin and returns how it
// ended.
func (s *server) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = s.env()
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("rota %s did not end within %v", strings.Join(args, " "), commandTimeout)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("rota %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// rota runs a command that must succeed and returns its stdout.
func (s *server) rota(t *testing.T, args ...string) string {
	t.Helper()
	r := s.run(t, "", args...)
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	return r.stdout
}

// rotaJSON runs a command with --json that must succeed and decodes its
// output.
func (s *server) rotaJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	stdout := s.rota(t, append(args, "--json")...)
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		t.Fatalf("rota %s --json: %v\n%s", strings.Join(args, " "), err, stdout)
	}
}

// job is the part of a job's JSON the tests look at.
type job struct {
	ID          int64             `json:"id"`
	Type        string            `json:"type"`
	Key         string            `json:"key"`
	Group       string            `json:"group"`
	Meta        map[string]string `json:"meta"`
	Priority    int               `json:"priority"`
	State       string            `json:"state"`
	RunAt       time.Time         `json:"run_at"`
	Data        json.RawMessage   `json:"data"`
	Attempt     int               `json:"attempt"`
	MaxAttempts int               `json:"max_attempts"`
	Progress    float64           `json:"progress"`
	LastError   string            `json:"last_error"`
	Errors      []struct {
		Attempt int    `json:"attempt"`
		Error   string `json:"error"`
	} `json:"errors"`
	Result json.RawMessage `json:"result"`
}

func (s *server) get(t *testing.T, id int64) job {
	t.Helper()
	var resp struct{ Job job }
	s.rotaJSON(t, &resp, "get", strconv.FormatInt(id, 10))
	return resp.Job
}

// add adds a job and returns its id.
func (s *server) add(t *testing.T, args ...string) int64 {
	t.Helper()
	var resp struct {
		Job     job
		Outcome string
	}
	s.rotaJSON(t, &resp, append([]string{"add"}, args...)...)
	if resp.Job.ID <= 0 {
		t.Fatalf("rota add %v: no job id in the answer", args)
	}
	return resp.Job.ID
}

// eventually polls cond until it holds, failing the test after a generous
// time limit (which only guards against hangs).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(commandTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// process is a long-running CLI command (work, watch, wait).
type process struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	code   int
}

// start starts a long-running command; it is stopped with SIGTERM when
// the test ends, if it is still running.
func (s *server) start(t *testing.T, args ...string) *process {
	t.Helper()
	return s.startWith(t, bin, args...)
}

// startWith is start with another rota binary (an older release).
func (s *server) startWith(t *testing.T, binary string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = s.env()
	p := &process{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Errorf("rota %s did not stop on SIGTERM; killing it", strings.Join(args, " "))
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("rota %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.stdout, p.stderr)
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit status.
func (p *process) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(commandTimeout):
		t.Fatalf("%s did not exit\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args, " "), p.stdout, p.stderr)
		return -1
	}
}

// signal sends sig to the process and waits for it to exit.
func (p *process) signal(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	p.cmd.Process.Signal(sig)
	return p.wait(t)
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ io.Writer = (*syncBuffer)(nil)

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) == 0 || fields[0] != "Z"
}
