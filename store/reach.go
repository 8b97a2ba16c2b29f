package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
	return !slices.ContainsFunc(b.Groups, func(g string) bool { return !r.hasBatchName(g, r.groups, r.HasGroup) }) &&
		!slices.ContainsFunc(b.Types, func(t string) bool { return !r.hasBatchName(t, r.types, r.HasType) })
}

// batchOwnerMark starts a batch's group or type that is a pattern of the
// scoped caller that added it (BatchOwner) rather than a name. Names have
// no control characters, so that no group or type starts with it, and a
// node that does not know the mark reads it as a group no scoped token
// reaches.
const batchOwnerMark = "\x00"

// hasBatchName reports whether a batch's group or type (name), of the
// reach's patterns pats, is in reach: a name as has says, a pattern of
// the batch's owner when the reach has the same pattern, or all of that
// kind.
func (r *Reach) hasBatchName(name string, pats []string, has func(string) bool) bool {
	if p, ok := strings.CutPrefix(name, batchOwnerMark); ok {
		return pats == nil || slices.Contains(pats, p)
	}
	return has(name)
}

// BatchOwner is what a batch added by a caller with reach r keeps, as its
// groups and types (Batch.Groups, Types), while it holds neither a job
// nor a callback: r's patterns, marked as such ("*" for every group or
// type), so that it is in the reach of the callers whose reach has the
// same patterns (or every group, or type) and of no other tenant, which
// could otherwise read it, close it, or join it and so take it from its
// tenant. The first job to join replaces them with its group and type
// (IsBatchOwner). An unscoped caller's batch keeps none: it is in every
// reach until its first job joins.
func BatchOwner(r *Reach) (groups, types []string) {
	if !r.Scoped() {
		return nil, nil
	}
	mark := func(pats []string) []string {
		if pats == nil {
			return []string{batchOwnerMark + "*"}
		}
		out := make([]string, len(pats))
		for i, p := range pats {
			out[i] = batchOwnerMark + p
		}
		return out
	}
	return mark(r.groups), mark(r.types)
}

// IsBatchOwner reports whether a batch's group or type is one of its
// owner's patterns (BatchOwner), not a job's.
func IsBatchOwner(name string) bool { return strings.HasPrefix(name, batchOwnerMark) }

// Dep is dependency d as a caller with reach r sees it: whole when it
// reaches it (or it was removed, and nothing is left of it), else its id
// and state alone, as those of a job that is not the caller's (the
// admin's dependencies may cross tenants; a scoped caller's may not).
func (r *Reach) Dep(d Dep) Dep {
	if d.Removed || r.Has(d.Type, d.Group) {
		return d
	}
	return Dep{ID: d.ID, State: d.State}
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
