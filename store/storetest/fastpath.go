package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- the set-based completion is the rule's completion ----

// testFastPath holds each store's set-based completion to the engine's
// general path: for jobs set up alike, a completion sent alone (which the
// store may apply in one statement when lifecycle.Completes holds) and the
// same completion sent twice in one batch (a job named twice takes the
// general path, lifecycle.Finish, and the repeat is a completion by the
// same lease again) answer alike and leave the jobs alike, whether or not
// the job qualifies (resubmitted, recurring, a parent, a stale token, ended).
func testFastPath(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	result := raw(`{"done":true}`)
	cases := []struct {
		name  string
		setup func(t *testing.T, typ string) store.Job // a running job of type typ, as leased
		token func(j store.Job) string
	}{
		{name: "plain", setup: func(t *testing.T, typ string) store.Job {
			return start(t, s, store.AddParams{Type: typ, Data: raw(`{"n":1}`)})
		}},
		{name: "stale token", setup: func(t *testing.T, typ string) store.Job {
			return start(t, s, store.AddParams{Type: typ})
		}, token: func(store.Job) string { return "stale" }},
		{name: "resubmitted", setup: func(t *testing.T, typ string) store.Job {
			j := start(t, s, store.AddParams{Type: typ, Data: raw(`{"n":1}`)})
			resubmit(t, s, store.ResubmitParams{ID: j.ID, Data: raw(`{"n":2}`)})
			return j
		}},
		{name: "recurring", setup: func(t *testing.T, typ string) store.Job {
			return start(t, s, store.AddParams{Type: typ, Schedule: "FINISHED, +1 HOUR"})
		}},
		{name: "parent with a child", setup: func(t *testing.T, typ string) store.Job {
			p := start(t, s, store.AddParams{Type: typ})
			addOne(t, s, store.AddParams{Type: typ + "-child", Parent: p.ID})
			return p
		}},
		{name: "cancelled", setup: func(t *testing.T, typ string) store.Job {
			j := start(t, s, store.AddParams{Type: typ})
			mustCancel(t, s, j.ID)
			return j
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			alone := c.setup(t, "alone-"+c.name)
			twice := c.setup(t, "twice-"+c.name)
			token := func(j store.Job) string {
				if c.token != nil {
					return c.token(j)
				}
				return j.Token
			}
			item := func(j store.Job) store.FinishParams {
				return store.FinishParams{Lease: store.Lease{ID: j.ID, Token: token(j)}, As: store.Complete, Result: result}
			}
			errsAlone, err := s.Finish(t.Context(), []store.FinishParams{item(alone)})
			if err != nil {
				t.Fatalf("Finish alone: %v", err)
			}
			errsTwice, err := s.Finish(t.Context(), []store.FinishParams{item(twice), item(twice)})
			if err != nil {
				t.Fatalf("Finish twice: %v", err)
			}
			same := (errsAlone[0] == nil) == (errsTwice[0] == nil)
			for _, target := range []error{store.ErrCanceled, store.ErrWorkerConflict, store.ErrNotFound} {
				same = same && errors.Is(errsAlone[0], target) == errors.Is(errsTwice[0], target)
			}
			if !same {
				t.Errorf("answers differ: alone %v, in a batch %v", errsAlone[0], errsTwice[0])
			}
			a, b := get(t, s, alone.ID), get(t, s, twice.ID)
			if a.State != b.State || a.Attempt != b.Attempt || a.Resubmit != b.Resubmit || a.Token != "" != (b.Token != "") ||
				!jsonEqual(a.Data, b.Data) || !jsonEqual(a.Result, b.Result) || a.LastError != b.LastError ||
				a.Slot.IsZero() != b.Slot.IsZero() || a.FinishedAt.IsZero() != b.FinishedAt.IsZero() ||
				!a.LeaseUntil.IsZero() != !b.LeaseUntil.IsZero() || a.RunAt.Sub(b.RunAt).Abs() > time.Minute {
				t.Errorf("the jobs differ: alone %v attempt %d resubmit %v data %s result %s slot %v run at %v, in a batch %v attempt %d resubmit %v data %s result %s slot %v run at %v",
					a.State, a.Attempt, a.Resubmit, a.Data, a.Result, a.Slot, a.RunAt, b.State, b.Attempt, b.Resubmit, b.Data, b.Result, b.Slot, b.RunAt)
			}
		})
	}
}
