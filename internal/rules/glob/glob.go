// Package glob is rota's type and group patterns: a compiled Pattern,
// matched against names, and the quoting of a name into the pattern that
// selects it alone. It is a rule of what a caller selects, the same on
// every store and protocol, and does no I/O; its errors are plain, and
// callers make them match store.ErrInvalid (check.CompilePattern,
// store.NewReach).
package glob

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rotajobs/rota/internal/rules/names"
)

// rota's patterns are SQLite's GLOB, the syntax Bedrock's GetJob takes,
// so that a pattern selects the same names over every protocol:
//
//   - * matches any run of characters (/ included), ? one character;
//   - [abc], [a-z] match one character of a class, [^abc] one outside it;
//     a ] first in the class is one of its characters, and so is a - first
//     or last;
//   - everything else matches itself, case-sensitively; there is no escape
//     character: [*], [?], [[] and [{] match those characters (Quote).
//
// rota adds two things, which no text Bedrock matches by GLOB can hold
// (Bedrock splits a name with a comma into a list of exact names first):
//
//   - {a,b} matches any of its comma-separated alternatives; braces
//     without a comma inside are plain characters;
//   - a [ that no ] closes is a plain character (SQLite's GLOB then
//     matches nothing at all), so that a name such as "a[b" is taken by
//     its own text.

// Meta are the characters where a pattern may stop matching only
// itself: a name's literal start ends before the first of them.
const Meta = "*?[{"

// maxAlternatives bounds the patterns a {a,b} pattern expands to.
const maxAlternatives = 1024

type tokenKind uint8

const (
	litToken   tokenKind = iota // r itself
	oneToken                    // ?
	anyToken                    // *
	classToken                  // [...]: body, SQLite's loop over it
)

type token struct {
	kind tokenKind
	r    rune
	body []rune // a class's characters after [ and ^, before its ]
	neg  bool   // [^...]
}

// classEnd returns the index of the ] that closes the class opening at
// s[i] (a '['), as SQLite reads it, or -1 when none does.
func classEnd(s string, i int) int {
	j := i + 1
	if j < len(s) && s[j] == '^' {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	if k := strings.IndexByte(s[j:], ']'); k >= 0 {
		return j + k
	}
	return -1
}

// braceGroup finds the first {…} with a comma at its own level, outside
// classes, and returns its bounds and the positions of those commas.
func braceGroup(s string) (open, end int, commas []int, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			if e := classEnd(s, i); e >= 0 {
				i = e
			}
		case '{':
			depth, cs := 0, []int(nil)
		scan:
			for j := i; j < len(s); j++ {
				switch s[j] {
				case '[':
					if e := classEnd(s, j); e >= 0 {
						j = e
					}
				case '{':
					depth++
				case '}':
					depth--
					if depth == 0 {
						if len(cs) > 0 {
							return i, j, cs, true
						}
						break scan
					}
				case ',':
					if depth == 1 {
						cs = append(cs, j)
					}
				}
			}
		}
	}
	return 0, 0, nil, false
}

// expand turns the {a,b} groups of s into the brace-free patterns they
// stand for.
func expand(s string, out []string) ([]string, error) {
	open, end, commas, ok := braceGroup(s)
	if !ok {
		if len(out) >= maxAlternatives {
			return nil, fmt.Errorf("pattern %q has more than %d alternatives", s, maxAlternatives)
		}
		return append(out, s), nil
	}
	start := open + 1
	for _, c := range append(commas, end) {
		var err error
		if out, err = expand(s[:open]+s[start:c]+s[end+1:], out); err != nil {
			return nil, err
		}
		start = c + 1
	}
	return out, nil
}

// tokens reads a brace-free pattern.
func tokens(s string) []token {
	var ts []token
	for i := 0; i < len(s); {
		switch s[i] {
		case '*':
			ts = append(ts, token{kind: anyToken})
			i++
			continue
		case '?':
			ts = append(ts, token{kind: oneToken})
			i++
			continue
		case '[':
			if e := classEnd(s, i); e >= 0 {
				t := token{kind: classToken}
				j := i + 1
				if s[j] == '^' {
					t.neg = true
					j++
				}
				t.body = []rune(s[j:e])
				ts = append(ts, t)
				i = e + 1
				continue
			}
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		ts = append(ts, token{kind: litToken, r: r})
		i += n
	}
	return ts
}

// inClass is SQLite's test of c against a class body: a leading ] is one
// of its characters, x-y a range (a - first or last is itself).
func inClass(body []rune, c rune) bool {
	var prior rune
	i := 0
	if len(body) > 0 && body[0] == ']' {
		if c == ']' {
			return true
		}
		i = 1
	}
	for ; i < len(body); i++ {
		c2 := body[i]
		if c2 == '-' && i+1 < len(body) && prior > 0 {
			i++
			if c >= prior && c <= body[i] {
				return true
			}
			prior = 0
			continue
		}
		if c == c2 {
			return true
		}
		prior = c2
	}
	return false
}

func (t *token) one(c rune) bool {
	switch t.kind {
	case litToken:
		return t.r == c
	case oneToken:
		return true
	case classToken:
		return inClass(t.body, c) != t.neg
	}
	return false
}

// matchTokens matches s against a brace-free pattern: every token but *
// takes one character, so a * only has to remember where to take one
// more.
func matchTokens(ts []token, s string) bool {
	ti, si := 0, 0
	star, starS := -1, 0
	for si < len(s) {
		if ti < len(ts) && ts[ti].kind == anyToken {
			star, starS = ti, si
			ti++
			continue
		}
		c, n := utf8.DecodeRuneInString(s[si:])
		if ti < len(ts) && ts[ti].one(c) {
			ti++
			si += n
			continue
		}
		if star < 0 {
			return false
		}
		_, n = utf8.DecodeRuneInString(s[starS:])
		starS += n
		ti, si = star+1, starS
	}
	for ti < len(ts) && ts[ti].kind == anyToken {
		ti++
	}
	return ti == len(ts)
}

// exactName returns the one name a brace-free pattern matches, if it
// matches only one: its characters are plain or classes of one character
// ([?] for ?).
func exactName(ts []token) (string, bool) {
	var b strings.Builder
	for _, t := range ts {
		switch {
		case t.kind == litToken:
			b.WriteRune(t.r)
		case t.kind == classToken && !t.neg && len(t.body) == 1:
			b.WriteRune(t.body[0])
		default:
			return "", false
		}
	}
	return b.String(), true
}

// Quote returns the pattern that matches name and nothing else:
// its *, ?, [ and { in classes of their own.
func Quote(name string) string {
	if !strings.ContainsAny(name, Meta) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		switch r {
		case '*', '?', '[', '{':
			b.WriteByte('[')
			b.WriteRune(r)
			b.WriteByte(']')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Pattern matches type names with GLOB syntax (above): * any run, ?
// one character, [abc], [a-z] and [^abc] classes, {a,b} alternatives.
type Pattern struct {
	src     string
	literal bool
	alts    [][]token // the brace-free patterns {a,b} expands to
}

// Compile parses a type name or GLOB pattern. Every text of a valid name
// (names.Check) is a pattern; only one with too many {a,b} alternatives
// is refused.
func Compile(p string) (Pattern, error) {
	if err := names.Check("type pattern", p, true); err != nil {
		return Pattern{}, err
	}
	if !strings.ContainsAny(p, Meta) {
		return Pattern{src: p, literal: true}, nil
	}
	alts, err := expand(p, nil)
	if err != nil {
		return Pattern{}, err
	}
	pat := Pattern{src: p, alts: make([][]token, len(alts))}
	for i, a := range alts {
		pat.alts[i] = tokens(a)
	}
	if name, ok := pat.Exact(); ok && name == p {
		pat.literal, pat.alts = true, nil // "a[b", "{a}": plain text
	}
	return pat, nil
}

// Literal reports whether the pattern is a plain type name, matched by
// its text alone.
func (p Pattern) Literal() bool { return p.literal }

// Exact returns the one type name the pattern matches, when it matches
// only one: a literal's text, or a quoted name's (Quote).
func (p Pattern) Exact() (string, bool) {
	if p.literal {
		return p.src, true
	}
	if len(p.alts) != 1 {
		return "", false
	}
	return exactName(p.alts[0])
}

// Match reports whether the type name matches.
func (p Pattern) Match(name string) bool {
	if p.literal {
		return p.src == name
	}
	for _, a := range p.alts {
		if matchTokens(a, name) {
			return true
		}
	}
	return false
}

func (p Pattern) String() string { return p.src }

// Literal reports whether the text p is a valid pattern that is a plain
// name.
func Literal(p string) bool {
	pat, err := Compile(p)
	return err == nil && pat.Literal()
}

// MatchTypes returns the type names that pats select: literal names as
// they are (known or not), patterns matched against the known names;
// sorted, each once.
func MatchTypes(pats []Pattern, known iter.Seq[string]) []string {
	var selected []string
	for _, p := range pats {
		if name, ok := p.Exact(); ok {
			selected = append(selected, name)
			continue
		}
		for name := range known {
			if p.Match(name) {
				selected = append(selected, name)
			}
		}
	}
	slices.Sort(selected)
	return slices.Compact(selected)
}

// GroupScope compiles group patterns (AcceptParams.Groups, a reach's
// groups) into a test of a group's name; nil patterns allow every group.
func GroupScope(patterns []string) (func(group string) bool, error) {
	if len(patterns) == 0 {
		return func(string) bool { return true }, nil
	}
	pats := make([]Pattern, len(patterns))
	for i, g := range patterns {
		if g == "" {
			// The default group's name is empty: a literal pattern.
			pats[i] = Pattern{literal: true}
			continue
		}
		var err error
		if pats[i], err = Compile(g); err != nil {
			return nil, fmt.Errorf("group pattern %q: %w", g, err)
		}
	}
	return func(group string) bool {
		for _, p := range pats {
			if p.Match(group) {
				return true
			}
		}
		return false
	}, nil
}
