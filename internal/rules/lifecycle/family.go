package lifecycle

import (
	"time"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// This file holds the rules of parent and child jobs (Bedrock's), without
// Bedrock's orphans: a child added while its parent runs waits (paused)
// until the parent's run ends; a parent whose run completes with
// unfinished children waits (paused) until the last of them ends, then
// runs again and sees them; a parent that ends for good (fails, is
// cancelled or removed) takes its unfinished children with it. Stores
// apply these through Family after every change to a job in a family.

// AddChild decides the state of a job added as a child of job parentID
// (parent nil when it does not exist) by a caller with reach (nil:
// everything): paused while the parent runs, pending while the parent
// waits for its children. Children cannot have children. A parent out of
// the caller's reach is answered exactly as a missing one, so that the
// refusal tells nothing of another tenant's job.
func AddChild(parentID int64, parent *Row, reach *store.Reach) (store.State, error) {
	if parent != nil && !reach.Has(parent.Type, parent.Group) {
		parent = nil
	}
	switch {
	case parent == nil:
		return 0, check.JobErrorf(store.ErrNotFound, "parent job %d does not exist", parentID)
	case parent.Parent != 0:
		return 0, check.Invalidf("parent job %d is itself a child (of job %d): children cannot have children", parentID, parent.Parent)
	case parent.State == store.Running:
		return store.Paused, nil
	case parent.State == store.Paused:
		return store.Pending, nil
	}
	return 0, check.Invalidf("parent job %d is %s: a child can be added while its parent runs, or waits for its children", parentID, parent.State)
}

// Wake is the plan of a paused job (a child whose parent's run ended, or
// a parent whose last child ended) that becomes pending, due at now.
func Wake(r *Row, now time.Time) Plan {
	return Plan{Kind: KindResume, State: store.Pending, RunAt: now, Attempt: r.Attempt, Event: event(r, store.Pending, now)}
}

// FamilyWork is what a change to a job in a family asks of the rest of it,
// once the change is applied.
type FamilyWork struct {
	// ReleaseChildren: the job's paused children become pending (Wake):
	// its run ended, and they wait no more.
	ReleaseChildren bool
	// DropEndedChildren: its ended children, which its completed run saw,
	// are deleted, so that its next run sees only new ones (as Bedrock
	// deletes them).
	DropEndedChildren bool
	// KeepFailedChildren, with DropEndedChildren, keeps the failed ones
	// (Bedrock's RetryJob deletes finished and cancelled children only).
	KeepFailedChildren bool
	// CancelChildren: the job ended for good, and its unfinished children
	// are cancelled (Cancel) rather than left waiting for it.
	CancelChildren bool
	// RemoveChildren: the job was removed, and its children with it.
	RemoveChildren bool
	// CheckParent: a child ended or was removed; its parent, when paused
	// with no unfinished children left, resumes (Wake).
	CheckParent bool
}

// Family says what plan p, applied to r (as it was before), asks of the
// job's family. It is all false for a job with no parent and no children.
func Family(r *Row, p *Plan) FamilyWork {
	var w FamilyWork
	if r.HasChildren {
		switch p.Kind {
		case KindWait:
			w.ReleaseChildren, w.DropEndedChildren = true, true
		case KindComplete, KindRecur:
			w.DropEndedChildren = true
		case KindRemove:
			w.RemoveChildren = true
		}
		// A run that ends without completing (retry, snooze, release, run
		// again) leaves the children it added paused until a run of it
		// completes.
		if p.State.Terminal() && p.Kind != KindComplete && p.Kind != KindKeep {
			w.CancelChildren = true
		}
		if p.DropEndedChildren && !w.DropEndedChildren {
			// A snooze that asks for it: its completed and cancelled
			// children go, its failed ones stay for its next run to see.
			w.DropEndedChildren, w.KeepFailedChildren = true, true
		}
	}
	if r.Parent != 0 && (p.Kind == KindRemove || (p.State.Terminal() && !r.State.Terminal())) {
		w.CheckParent = true
	}
	return w
}

// ParentAfterChild decides what becomes of a parent (r, with Unfinished
// counted after its child's change) when a child ended: a paused parent
// with no unfinished children left resumes.
func ParentAfterChild(r *Row, now time.Time) (Plan, bool) {
	if r == nil || r.State != store.Paused || r.Unfinished {
		return Plan{}, false
	}
	return Wake(r, now), true
}
