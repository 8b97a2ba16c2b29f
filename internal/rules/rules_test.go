package rules_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// ioPackages are the standard library's ways out of a process: a rule
// that imports one of them (or a package under it) reads or writes
// something other than its arguments.
var ioPackages = []string{"os", "net", "database/sql", "syscall", "io/ioutil", "io/fs", "log", "path/filepath"}

// TestRulesDoNoIO checks the layering docs/design.md draws: every package
// under internal/rules imports no standard package that does I/O, and
// depends, directly or not, on no rota package but the job types (store)
// and other rules, so on no store, no database driver and no network
// package either.
func TestRulesDoNoIO(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	const rota = "github.com/rotajobs/rota"
	cmd := exec.Command(gobin, "list", "-json=ImportPath,Imports,Deps", rota+"/internal/rules/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	seen := map[string]bool{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen[strings.TrimPrefix(p.ImportPath, rota+"/internal/rules/")] = true
		for _, imp := range p.Imports {
			for _, io := range ioPackages {
				if imp == io || strings.HasPrefix(imp, io+"/") {
					t.Errorf("%s imports %s", p.ImportPath, imp)
				}
			}
		}
		for _, dep := range p.Deps {
			switch {
			case dep == "database/sql" || dep == "net" || strings.HasPrefix(dep, "net/"):
				t.Errorf("%s depends on %s", p.ImportPath, dep)
			case strings.HasPrefix(dep, rota+"/") && dep != rota+"/store" && !strings.HasPrefix(dep, rota+"/internal/rules/"):
				t.Errorf("%s depends on %s, which is not a rule or the job types", p.ImportPath, dep)
			}
		}
	}
	for _, want := range []string{"lifecycle", "fair", "schedule", "check", "glob", "names"} {
		if !seen[want] {
			t.Errorf("internal/rules/%s is missing from go list's answer", want)
		}
	}
}
