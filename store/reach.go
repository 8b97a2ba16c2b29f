package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rotajobs/rota/internal/rules/glob"
)

// Reach is what a caller may reach: the jobs whose group matches one of
// Groups and whose type matches one of Types (GLOB patterns; "" is the
// default group). Nil Groups or Types reach every group or type, and a nil
// *Reach reaches everything. A server gives each request its token's
// reach (WithReach), and the stores honour it inside the operation, in
// its transaction or query, so that a job out of reach is one that does
// not exist: a parent out of reach is a missing parent, a listing pages
// over the jobs in reach only, counts count only them.
type Reach struct {
	groups, types []string
	inGroup       func(string) bool
	typePats      []glob.Pattern
}

// NewReach returns the reach of these group and type patterns; nil
// patterns reach every group or type.
func NewReach(groups, types []string) (*Reach, error) {
	r := &Reach{groups: groups, types: types}
	var err error
	if r.inGroup, err = glob.GroupScope(groups); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, p := range types {
		pat, err := glob.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		r.typePats = append(r.typePats, pat)
	}
	return r, nil
}

// Groups are the group patterns, nil for every group.
func (r *Reach) Groups() []string {
	if r == nil {
		return nil
	}
	return r.groups
}

// Types are the type patterns, nil for every type.
func (r *Reach) Types() []string {
	if r == nil {
		return nil
	}
	return r.types
}

// Scoped reports whether the reach leaves some jobs out.
func (r *Reach) Scoped() bool { return r != nil && (r.groups != nil || r.types != nil) }

// Has reports whether a job of this type and group is in reach.
func (r *Reach) Has(typ, group string) bool {
	if r == nil {
		return true
	}
	if r.groups != nil && !r.inGroup(group) {
		return false
	}
	return r.HasType(typ)
}

// HasType reports whether jobs of this type (in some group) are in reach.
func (r *Reach) HasType(typ string) bool {
	return r == nil || r.types == nil || slices.ContainsFunc(r.typePats, func(p glob.Pattern) bool { return p.Match(typ) })
}

// HasGroup reports whether jobs of this group (of some type) are in reach.
func (r *Reach) HasGroup(group string) bool {
	return r == nil || r.groups == nil || r.inGroup(group)
}

type reachKey struct{}

// WithReach returns ctx carrying reach r, which stores honour (Reach); a
// nil r reaches everything, whatever reach ctx carried (for what a server
// reads for every caller, such as counts it shares).
func WithReach(ctx context.Context, r *Reach) context.Context {
	if !r.Scoped() {
		if ReachOf(ctx) == nil {
			return ctx
		}
		r = nil
	}
	return context.WithValue(ctx, reachKey{}, r)
}

// ReachOf returns the reach ctx carries; nil (everything) when none.
func ReachOf(ctx context.Context) *Reach {
	r, _ := ctx.Value(reachKey{}).(*Reach)
	return r
}

// HasGroupConfig reports whether a group setting is in reach: its group,
// and its type (a setting for every type needs a reach of every type).
func (r *Reach) HasGroupConfig(g GroupConfig) bool {
	if !r.HasGroup(g.Group) {
		return false
	}
	if g.Type == "" {
		return r.Types() == nil
	}
	return r.HasType(g.Type)
}

// NarrowAccept limits an accept to reach r: to r's groups when p names
// none, and each group and type pattern p names must be one of r's own
// patterns or a name in reach. It returns the first that is not ("group"
// or "type", and the pattern), or two empty strings when p is in reach; p
// must have passed check.Accept.
func (r *Reach) NarrowAccept(p *AcceptParams) (what, pattern string) {
	if !r.Scoped() {
		return "", ""
	}
	if r.groups != nil {
		if len(p.Groups) == 0 {
			p.Groups = r.groups
		}
		for _, g := range p.Groups {
			if !slices.Contains(r.groups, g) && !(glob.Literal(g) && r.HasGroup(g)) {
				return "group", g
			}
		}
	}
	if r.types != nil {
		for _, t := range p.Types {
			if !slices.Contains(r.types, t) && !(glob.Literal(t) && r.HasType(t)) {
				return "type", t
			}
		}
	}
	return "", ""
}

// GroupRanges returns ranges [from, to) of group names, in byte order,
// that hold every group in reach (to "": no bound above), for a store's
// listing query to read only those groups' jobs; ListInReach keeps the
// ones in reach exactly. Nil when the reach does not narrow the groups:
// every group, or a pattern that starts with a metacharacter.
func (r *Reach) GroupRanges() [][2]string {
	if r == nil || r.groups == nil {
		return nil
	}
	var out [][2]string
	for _, g := range r.groups {
		i := strings.IndexAny(g, glob.Meta)
		if i < 0 {
			// A name: itself (and names that go on with a NUL, which no
			// group has; a store's text may not hold one).
			out = append(out, [2]string{g, g + "\x01"})
			continue
		}
		if i == 0 {
			return nil
		}
		out = append(out, [2]string{g[:i], successor(g[:i])})
	}
	return out
}

// successor is the least string, in byte order, above every string that
// starts with prefix ("" when there is none): prefix with its last rune
// made the next one (UTF-8's byte order is code point order).
func successor(prefix string) string {
	for prefix != "" {
		c, n := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-n]
		if c == utf8.RuneError && n <= 1 {
			return "" // not UTF-8, which names are: no bound
		}
		if c < utf8.MaxRune {
			c++
			if c == 0xD800 {
				c = 0xE000 // past the surrogates, which UTF-8 does not hold
			}
			return prefix + string(c)
		}
	}
	return ""
}
