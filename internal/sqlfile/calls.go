package sqlfile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A Call is a call, in a package's Go source, of one of the functions or
// methods a store names its statements with.
type Call struct {
	Func string // the function or method called
	Recv string // what the method is called on ("" for a function)
	File string // the file's base name
	Line int
	In   string // the function the call is in
	Name string // the statement's name, when the argument is a string literal
	Lit  bool   // whether the argument is a string literal
}

// Calls finds the calls of funcs (function or method name → the index of
// the argument that names a statement) in the non-test Go files of dir.
// It is for the stores' tests that hold their code and their .sql files
// to each other.
func Calls(dir string, funcs map[string]int) ([]Call, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Call
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var name, recv string
				switch fn := c.Fun.(type) {
				case *ast.Ident:
					name = fn.Name
				case *ast.SelectorExpr:
					name, recv = fn.Sel.Name, types.ExprString(fn.X)
				}
				at, ok := funcs[name]
				if !ok || len(c.Args) <= at {
					return true
				}
				call := Call{Func: name, Recv: recv, File: filepath.Base(path), Line: fset.Position(c.Pos()).Line, In: fd.Name.Name}
				if lit, ok := c.Args[at].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					call.Name, _ = strconv.Unquote(lit.Value)
					call.Lit = true
				}
				out = append(out, call)
				return true
			})
		}
	}
	return out, nil
}

// A Literal is a string literal of a package's Go source.
type Literal struct {
	File string // the file's base name
	Line int
	In   string // the function it is in ("" outside functions)
	Text string
}

// Literals finds the string literals of the non-test Go files of dir
// that match match: for the stores' tests, SQL left in Go.
func Literals(dir string, match func(string) bool) ([]Literal, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Literal
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		visit := func(in string) func(ast.Node) bool {
			return func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				text, err := strconv.Unquote(lit.Value)
				if err == nil && match(text) {
					out = append(out, Literal{File: filepath.Base(path), Line: fset.Position(lit.Pos()).Line, In: in, Text: text})
				}
				return true
			}
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				ast.Inspect(fd, visit(fd.Name.Name))
			} else {
				ast.Inspect(d, visit(""))
			}
		}
	}
	return out, nil
}
