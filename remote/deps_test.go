package remote_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestClientLinksNoServer checks the layering a client program relies on:
// the remote client, and the root package it returns, link no store
// driver, no part of rota's HTTP server and no Prometheus, and build
// without cgo.
func TestClientLinksNoServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	forbidden := []string{
		"github.com/rotajobs/rota/store/sqlite",
		"github.com/rotajobs/rota/store/postgres",
		"github.com/rotajobs/rota/httpapi",
		"github.com/mattn/go-sqlite3",
		"github.com/jackc/",
		"github.com/prometheus/",
	}
	for _, pkg := range []string{"github.com/rotajobs/rota/remote", "github.com/rotajobs/rota"} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if dep == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f)) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
	cmd := exec.Command(gobin, "build", "-o", os.DevNull, "github.com/rotajobs/rota/remote/...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./remote/...: %v\n%s", err, out)
	}
}
