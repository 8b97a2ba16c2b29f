package glob

import (
	"database/sql"
	"math/rand/v2"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// TestPatternIsSQLiteGlob compares rota's patterns with SQLite's own GLOB
// (Bedrock's GetJob matches names with it) over random patterns and names
// built from the characters that matter: the same answer for every pattern
// without braces, except that a [ no ] closes is a plain character (SQLite
// then matches nothing).
func TestPatternIsSQLiteGlob(t *testing.T) {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmt, err := db.Prepare(`SELECT ? GLOB ?`)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	glob := func(name, pat string) bool {
		var m bool
		if err := stmt.QueryRow(name, pat).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	rng := rand.New(rand.NewPCG(1, 2))
	patChars := []string{"a", "b", "c", "?", "*", "[", "]", "^", "-", "!", "/", "é", "\\"}
	nameChars := []string{"a", "b", "c", "[", "]", "^", "-", "!", "/", "é", "?", "*", "\\"}
	word := func(chars []string, n int) string {
		var b strings.Builder
		for range rng.IntN(n + 1) {
			b.WriteString(chars[rng.IntN(len(chars))])
		}
		return b.String()
	}
	compared, unclosed := 0, 0
	for range 20000 {
		pat := word(patChars, 7)
		if pat == "" {
			continue
		}
		p, err := Compile(pat)
		if err != nil {
			t.Fatalf("Compile(%q): %v", pat, err)
		}
		open := hasUnclosedClass(pat)
		for range 8 {
			name := word(nameChars, 6)
			if rng.IntN(4) == 0 {
				name = pat
			}
			got, want := p.Match(name), glob(name, pat)
			switch {
			case !open && got != want:
				t.Fatalf("%q against pattern %q: rota %v, SQLite GLOB %v", name, pat, got, want)
			case open && want:
				t.Fatalf("SQLite matched %q with %q, whose [ nothing closes", name, pat)
			case open:
				unclosed++
			default:
				compared++
			}
		}
	}
	if compared < 50000 || unclosed == 0 {
		t.Errorf("compared %d names, %d against unclosed classes: too few", compared, unclosed)
	}
}

// hasUnclosedClass reports whether SQLite would meet a [ that no ]
// closes, reading the pattern as it does.
func hasUnclosedClass(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '[' {
			e := classEnd(p, i)
			if e < 0 {
				return true
			}
			i = e
		}
	}
	return false
}

func TestPatterns(t *testing.T) {
	for _, c := range []struct {
		pat, name string
		match     bool
	}{
		{"www-prod/*", "www-prod/UserActivityEvaluator?accountID=856", true},
		{"*Evaluator?accountID=*", "www-prod/UserActivityEvaluator?accountID=856", true},
		{"a?b", "a?b", true},
		{"a?b", "axb", true},
		{"a[?]b", "a?b", true},
		{"a[?]b", "axb", false},
		{"a[b", "a[b", true}, // unclosed: plain (SQLite: nothing)
		{"a[b", "ab", false},
		{"a[1]", "a1", true},
		{"a[1]", "a[1]", false},
		{"a[[]1]", "a[1]", true},
		{"[^a]", "b", true},
		{"[^a]", "a", false},
		{"[!a]", "!", true}, // ! is no negation in SQLite's GLOB
		{"[]a]", "]", true},
		{"[a-]", "-", true},
		{"a\\*", "a\\bc", true}, // no escape character
		{"alt.{a,b}", "alt.b", true},
		{"alt.{a,b}", "alt.{a,b}", false},
		{"alt.{a,b*}", "alt.bzz", true},
		{"{a}", "{a}", true},
		{"{a}", "a", false},
		{"x{a,{b,c}}", "xc", true},
		{"[{]a,b}", "{a,b}", true},
		{"[{a,b}]", "{", true},
		{"[{a,b}]", "a", true},
		{"Ü?", "Üé", true},
	} {
		p, err := Compile(c.pat)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.pat, err)
			continue
		}
		if got := p.Match(c.name); got != c.match {
			t.Errorf("%q against %q: %v, want %v", c.name, c.pat, got, c.match)
		}
	}
	for name, want := range map[string]string{"a?b": "a[?]b", "a[1]": "a[[]1]", "{a,b}*": "[{]a,b}[*]", "plain": "plain"} {
		if got := Quote(name); got != want {
			t.Errorf("Quote(%q) = %q, want %q", name, got, want)
		}
		p, _ := Compile(Quote(name))
		if exact, ok := p.Exact(); !ok || exact != name {
			t.Errorf("Quote(%q): Exact %q %v", name, exact, ok)
		}
	}
	if _, err := Compile(strings.Repeat("{a,b}", 11)); err == nil {
		t.Error("2048 alternatives compiled")
	}
}
