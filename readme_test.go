package rota_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadmeExample builds and runs the README's Go example as a user
// would paste it: it adds a job, says the job's id and what the add did,
// runs the job with its worker, and stops on SIGINT.
func TestReadmeExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Use it from Go")
	_, rest, ok2 := strings.Cut(rest, "```go\n")
	src, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no Go example under \"## Use it from Go\"")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "example")
	if out, err := exec.Command(gobin, "build", "-o", bin, filepath.Join(dir, "main.go")).CombinedOutput(); err != nil {
		t.Fatalf("the README's example does not build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log []string
	want := []string{"job 1 inserted", `sending "hello" to ada@example.com (attempt 1)`}
	for len(want) > 0 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the example ended before it logged %q:\n%s", want[0], strings.Join(log, "\n"))
			}
			log = append(log, line)
			if strings.HasSuffix(line, want[0]) {
				want = want[1:]
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the example did not log %q:\n%s", want[0], strings.Join(log, "\n"))
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	go func() {
		for range lines {
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the example did not stop cleanly on SIGINT: %v", err)
	}
}
