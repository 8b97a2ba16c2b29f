package postgres

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rotajobs/rota/internal/sqlfile"
)

// TestNamedStatements holds the code and sql/*.sql to each other: every
// statement the code names exists and every statement of the files is
// named by the code (a statement renamed, dropped or left behind fails
// it); statements are named by string literals, so that this test sees
// them all; the schema is filled in by the {{schema}} placeholder, not by
// replacing "rota." in the text, outside accept.go's inline statements.
func TestNamedStatements(t *testing.T) {
	st, err := loadStatements(`"rota"`, "rota:rota")
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range st {
		if strings.Contains(q, "rota.") || strings.Contains(q, "{{") {
			t.Errorf("statement %s names a table without the schema's placeholder: %s", name, q)
		}
	}
	named := map[string]int{"run": 0, "rows": 0, "row": 0, "stmt": 0, "readRows": 1}
	inline := map[string]int{"exec": 0, "query": 0, "queryRow": 0, "q": 0, "bothTables": 0}
	funcs := map[string]int{}
	for k, v := range named {
		funcs[k] = v
	}
	for k, v := range inline {
		funcs[k] = v
	}
	calls, err := sqlfile.Calls(".", funcs)
	if err != nil {
		t.Fatal(err)
	}
	asked := map[string]bool{}
	for _, c := range calls {
		where := c.File + ":" + strings.TrimSpace(c.In)
		if c.Recv == "" && c.Func != "bothTables" {
			continue // a function of the same name, not the store's method
		}
		if _, ok := named[c.Func]; ok {
			switch {
			case c.Lit:
				if _, ok := st[c.Name]; !ok {
					t.Errorf("%s:%d asks for statement %q, which sql/*.sql does not have", c.File, c.Line, c.Name)
				}
				asked[c.Name] = true
			case isNamed(c.In, named):
				// a named-statement method passing its name on
			default:
				t.Errorf("%s:%d (%s) names a statement with something other than a string literal", c.File, c.Line, where)
			}
			continue
		}
		if c.Recv != "" && (strings.HasSuffix(c.Recv, ".db") || strings.HasPrefix(c.Recv, "d.") || c.Recv == "m.tx") {
			continue // the connection's own methods
		}
		if c.File != "accept.go" && !isInline(c.In) {
			t.Errorf("%s:%d (%s) runs inline SQL (%s); statements outside accept.go are named, in sql/*.sql", c.File, c.Line, where, c.Func)
		}
	}
	for _, name := range st.Names() {
		if !asked[name] {
			t.Errorf("statement %s of sql/*.sql is used by no code", name)
		}
	}

	// The schema by its placeholder: no text replacement of "rota." on
	// SQL, but for accept.go's inline statements (the bridge in Open).
	replace := regexp.MustCompile(`strings\.(ReplaceAll|Replace|NewReplacer)\(.*"rota\.`)
	files, _ := filepath.Glob("*.go")
	bridges := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "accept.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if !replace.MatchString(line) {
				continue
			}
			if f == "postgres.go" && strings.Contains(line, "s.inline = strings.NewReplacer(") {
				bridges++
				continue
			}
			t.Errorf("%s:%d fills in the schema by replacing text: %s", f, i+1, strings.TrimSpace(line))
		}
	}
	if bridges > 1 {
		t.Errorf("%d bridges for accept.go's inline statements, want at most one", bridges)
	}

	// No SQL on the store's tables left in Go, outside accept.go's
	// statements (and bothTables, which only they use).
	tables := regexp.MustCompile(`\brota\.(jobs|jobs_ended|types|groups|group_config|tokens|lock_group)\b`)
	lits, err := sqlfile.Literals(".", tables.MatchString)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lits {
		if l.File == "accept.go" || l.In == "bothTables" {
			continue
		}
		t.Errorf("%s:%d (%s) holds SQL in Go: %s", l.File, l.Line, l.In, strings.Join(strings.Fields(l.Text), " "))
	}
}

func isNamed(fn string, named map[string]int) bool { _, ok := named[fn]; return ok }

// isInline reports whether fn is one of the methods that run accept.go's
// inline statements, passing them on.
func isInline(fn string) bool {
	switch fn {
	case "exec", "query", "queryRow", "q":
		return true
	}
	return false
}
