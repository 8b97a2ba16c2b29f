package check

import (
	"slices"

	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// What a caller's reach (store.Reach, a scoped token's) allows beyond the
// jobs themselves, which each store filters: accepts and group settings.

// AcceptInReach limits an accept to reach r: to r's groups when p names
// none, and each group and type pattern p names must be one of r's own
// patterns or a name in reach. It returns the first that is not ("group"
// or "type", and the pattern), or two empty strings when p is in reach; p
// must have passed Accept.
func AcceptInReach(r *store.Reach, p *store.AcceptParams) (what, pattern string) {
	if !r.Scoped() {
		return "", ""
	}
	if r.Groups() != nil {
		if len(p.Groups) == 0 {
			p.Groups = r.Groups()
		}
		for _, g := range p.Groups {
			if !slices.Contains(r.Groups(), g) && !(glob.Literal(g) && r.HasGroup(g)) {
				return "group", g
			}
		}
	}
	if r.Types() != nil {
		for _, t := range p.Types {
			if !slices.Contains(r.Types(), t) && !(glob.Literal(t) && r.HasType(t)) {
				return "type", t
			}
		}
	}
	return "", ""
}

// GroupConfigInReach reports whether a group setting is in reach r: its
// group, and its type (a setting for every type needs a reach of every
// type).
func GroupConfigInReach(r *store.Reach, g store.GroupConfig) bool {
	if !r.HasGroup(g.Group) {
		return false
	}
	if g.Type == "" {
		return r.Types() == nil
	}
	return r.HasType(g.Type)
}
