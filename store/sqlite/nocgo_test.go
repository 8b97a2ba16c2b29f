package sqlite_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWithoutCgo builds a program that imports store/sqlite with
// CGO_ENABLED=0: it builds (the driver's C is left out), and Open, directly
// or through rota.Open, says why it cannot work and what to use instead,
// creating no file.
func TestWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	dir := t.TempDir()
	prog := `package main

import (
	"fmt"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store/sqlite"
)

func main() {
	_, err := sqlite.Open("jobs.db", sqlite.Config{})
	fmt.Println(err)
	_, err = rota.Open("jobs.db")
	fmt.Println(err)
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	build := exec.Command(gobin, "build", "-o", bin, filepath.Join(dir, "main.go"))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build of a program that imports store/sqlite: %v\n%s", err, out)
	}
	run := exec.Command(bin)
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	const want = "the SQLite store needs cgo (CGO_ENABLED=1 and a C compiler); use store/postgres or remote without it"
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], want) || !strings.HasSuffix(lines[1], want) {
		t.Errorf("sqlite.Open and rota.Open without cgo said:\n%s\nwant each to end %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "jobs.db")); !os.IsNotExist(err) {
		t.Errorf("an Open without cgo left a database file (%v)", err)
	}
}
