package sqlite

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rotajobs/rota/internal/sqlfile"
)

// TestNamedStatements holds the code and sql/*.sql to each other: every
// statement the code names exists and every statement of the files is
// named by the code (a statement renamed, dropped or left behind fails
// it); statements are named by string literals, so that this test sees
// them all; and no SQL on the store's tables is left in Go outside
// accept.go's statements and List's assembled one.
func TestNamedStatements(t *testing.T) {
	named := map[string]int{"run": 0, "rows": 0, "row": 0, "stmt": 0}
	inline := map[string]int{"exec": 0, "query": 0, "queryRow": 0}
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
		if _, ok := named[c.Func]; ok {
			if c.Recv == "" && c.Func != "stmt" || c.Recv != "" && c.Func == "stmt" {
				continue // another function or method of the same name
			}
			switch {
			case c.Lit:
				if _, ok := statements[c.Name]; !ok {
					t.Errorf("%s:%d asks for statement %q, which sql/*.sql does not have", c.File, c.Line, c.Name)
				}
				asked[c.Name] = true
			case c.In == "run" || c.In == "rows" || c.In == "row":
				// a named-statement method passing its name on
			default:
				t.Errorf("%s:%d (%s) names a statement with something other than a string literal", c.File, c.Line, c.In)
			}
			continue
		}
		if c.Recv == "w" && c.File != "accept.go" && c.In != "run" && c.In != "rows" && c.In != "row" {
			t.Errorf("%s:%d (%s) runs inline SQL (%s); statements outside accept.go are named, in sql/*.sql", c.File, c.Line, c.In, c.Func)
		}
	}
	for _, name := range statements.Names() {
		if !asked[name] {
			t.Errorf("statement %s of sql/*.sql is used by no code", name)
		}
	}

	tables := regexp.MustCompile(`\brota_(jobs|types|groups|group_config|tokens|migrations)\b`)
	verb := regexp.MustCompile(`(?i)\b(select|insert|update|delete)\b`)
	lits, err := sqlfile.Literals(".", func(s string) bool { return tables.MatchString(s) && verb.MatchString(s) })
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lits {
		if l.File == "accept.go" || l.File == "read.go" && l.In == "list" {
			continue // accept.go's own; List's filters assemble its statement
		}
		t.Errorf("%s:%d (%s) holds SQL in Go: %s", l.File, l.Line, l.In, strings.Join(strings.Fields(l.Text), " "))
	}
}
