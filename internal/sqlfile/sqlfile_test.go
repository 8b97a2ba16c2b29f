package sqlfile

import (
	"strings"
	"testing"
	"testing/fstest"
	"text/template"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"sql/a.sql": {Data: []byte(`-- What the file holds.

-- name: one
-- Reads a job.
-- $1 id.
SELECT * FROM {{schema}}.jobs
	-- a comment inside stays
	WHERE id = $1;

-- name: two
DELETE FROM {{schema}}.jobs WHERE id = $1
`)},
		"sql/b.sql": {Data: []byte("-- name: three\nSELECT {{cols}};\n")},
	}
	st, err := Load(fsys, "sql", template.FuncMap{
		"schema": func() string { return `"s"` },
		"cols":   func() string { return "a, b" },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"one":   "SELECT * FROM \"s\".jobs\n\t-- a comment inside stays\n\tWHERE id = $1",
		"two":   `DELETE FROM "s".jobs WHERE id = $1`,
		"three": "SELECT a, b",
	}
	if len(st) != len(want) {
		t.Errorf("got %d statements %v, want %d", len(st), st.Names(), len(want))
	}
	for name, q := range want {
		if st[name] != q {
			t.Errorf("%s = %q, want %q", name, st[name], q)
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n", "statement a is named twice"},
		{"-- name: a\n-- only a comment\n", "statement a is empty"},
		{"-- name: Bad-Name\nSELECT 1;\n", `statement name "Bad-Name" is not lower_snake_case`},
		{"SELECT 1;\n-- name: a\nSELECT 2;\n", "SQL before the first -- name: line"},
		{"-- name: a\nSELECT {{nosuch}};\n", "statement a"},
	} {
		_, err := Load(fstest.MapFS{"sql/x.sql": {Data: []byte(c.src)}}, "sql", template.FuncMap{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.src, err, c.want)
		}
	}
}
