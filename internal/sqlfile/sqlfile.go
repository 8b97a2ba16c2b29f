// Package sqlfile reads a store's SQL statements from .sql files embedded
// in the store's package, one named statement after another:
//
//	-- name: retry
//	-- Records an attempt's error and makes the job pending again.
//	-- $1 id, $2 run time, $3 error text, $4 whether the lease is fenced out
//	UPDATE {{schema}}.jobs SET …
//
// A statement runs from its "-- name:" line to the next one. The comment
// lines under the name say what it does and what each parameter is; they
// are left out of the text sent to the database, so that a statement is
// the same text it was when it was written inline. The text is a text/template executed once, when the store opens, with the
// store's functions: {{schema}} (PostgreSQL's schema, quoted), and the
// fragments that the stores share with Go code (the columns a job is
// scanned from, the retention rule), so that each is written once.
package sqlfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// Statements are a store's statements by name, their templates executed.
type Statements map[string]string

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Load reads every .sql file in dir of fsys and executes each statement's
// template with funcs. A name given twice, an empty statement, a name
// that is not lower_snake_case, or a template that fails is an error.
func Load(fsys fs.FS, dir string, funcs template.FuncMap) (Statements, error) {
	raw, err := Parse(fsys, dir)
	if err != nil {
		return nil, err
	}
	out := make(Statements, len(raw))
	for name, text := range raw {
		t, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(text)
		if err != nil {
			return nil, fmt.Errorf("sqlfile: statement %s: %w", name, err)
		}
		var b strings.Builder
		if err := t.Execute(&b, nil); err != nil {
			return nil, fmt.Errorf("sqlfile: statement %s: %w", name, err)
		}
		out[name] = b.String()
	}
	return out, nil
}

// Parse reads the statements of every .sql file in dir of fsys, as
// written (templates not executed).
func Parse(fsys fs.FS, dir string) (map[string]string, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := map[string]string{}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		if err := parse(f, data, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parse(file string, data []byte, out map[string]string) error {
	var name string
	var body strings.Builder
	line := 0
	flush := func() error {
		if name == "" {
			if strings.TrimSpace(stripComments(body.String())) != "" {
				return fmt.Errorf("sqlfile: %s: SQL before the first -- name: line", file)
			}
			return nil
		}
		text := strings.TrimSpace(body.String())
		if strings.TrimSpace(stripComments(text)) == "" {
			return fmt.Errorf("sqlfile: %s: statement %s is empty", file, name)
		}
		out[name] = strings.TrimSuffix(text, ";")
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line++
		l := sc.Text()
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "-- name:"); ok {
			if err := flush(); err != nil {
				return err
			}
			name = strings.TrimSpace(rest)
			if !nameRE.MatchString(name) {
				return fmt.Errorf("sqlfile: %s:%d: statement name %q is not lower_snake_case", file, line, name)
			}
			if _, dup := out[name]; dup {
				return fmt.Errorf("sqlfile: %s:%d: statement %s is named twice", file, line, name)
			}
			body.Reset()
			continue
		}
		if body.Len() == 0 && (strings.HasPrefix(strings.TrimSpace(l), "--") || strings.TrimSpace(l) == "") {
			continue // the statement's documentation
		}
		body.WriteString(l)
		body.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flush()
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Names returns the statements' names, sorted.
func (s Statements) Names() []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
