package rota_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAliasDocsListFields: go doc shows an alias of a store type without
// its fields (a user of AddResult guessed res.ID before finding
// res.Job.ID), so each alias's comment in rota.go names every exported
// field of the struct it stands for. A field added to a store type must be
// named in its alias's comment too.
func TestAliasDocsListFields(t *testing.T) {
	fset := token.NewFileSet()
	root, err := parser.ParseFile(fset, "rota.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("store", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	structs := map[string]*ast.StructType{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					structs[ts.Name.Name] = st
				}
			}
			return true
		})
	}
	aliases := 0
	for _, d := range root.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			sel, ok := ts.Type.(*ast.SelectorExpr)
			if !ts.Assign.IsValid() || !ok {
				continue
			}
			st := structs[sel.Sel.Name]
			if st == nil {
				continue // not a struct: State, Outcome …
			}
			aliases++
			doc := ts.Doc.Text()
			for _, field := range st.Fields.List {
				for _, name := range field.Names {
					if !name.IsExported() {
						continue
					}
					if !regexp.MustCompile(`\b` + name.Name + `\b`).MatchString(doc) {
						t.Errorf("the comment of rota.%s does not name its field %s (go doc shows the alias without fields):\n%s",
							ts.Name.Name, name.Name, strings.TrimSpace(doc))
					}
				}
			}
		}
	}
	if aliases < 10 {
		t.Errorf("found %d aliases of store structs in rota.go, want the job model's", aliases)
	}
}
