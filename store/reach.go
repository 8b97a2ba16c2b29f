package store

import (
	"context"
	"fmt"
	"slices"

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

// HasBatch reports whether batch b is in reach: every group and type of
// its members and callbacks is (Batch.Groups, Types), so that the batch
// shows nothing of jobs out of reach. Reach is a product of groups and
// types, so this holds exactly when each member and callback is in reach.
// A Wide batch is in the reach of unscoped callers only.
func (r *Reach) HasBatch(b *Batch) bool {
	if !r.Scoped() {
		return true
	}
	if b.Wide {
		return false
	}
	return !slices.ContainsFunc(b.Groups, func(g string) bool { return !r.HasGroup(g) }) &&
		!slices.ContainsFunc(b.Types, func(t string) bool { return !r.HasType(t) })
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
