package storetest

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// testWatchLeases checks that every change about a job carries the
// fingerprint of the lease it concerns (store.Event.Lease): for an accept,
// the new lease; for a heartbeat, the current one; for a finish, cancel,
// removal or lease expiry, the lease the job had before. A worker acts
// only on changes about its own lease.
func testWatchLeases(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	rec := newRecorder()
	stop := s.Watch(rec.fn)
	defer stop()
	// last returns the last change of job id once n have arrived.
	last := func(id int64, n int) store.Event {
		t.Helper()
		cs := rec.waitFor(t, id, n)
		return cs[n-1]
	}
	want := func(what string, c store.Event, state store.State, removed bool, lease string) {
		t.Helper()
		if c.State != state || c.Removed != removed || c.Lease != lease {
			t.Errorf("%s: change %+v, want state %v, removed %v, lease %q", what, c, state, removed, lease)
		}
	}
	startOne := func(typ string) store.Job {
		t.Helper()
		j := addOne(t, s, store.AddParams{Type: typ, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
		want("add", last(j.ID, 1), store.Pending, false, "")
		res := accept(t, s, store.AcceptParams{Types: []string{typ}})
		if len(res.Jobs) != 1 || res.Jobs[0].ID != j.ID {
			t.Fatalf("Accept(%s) = %v, want job %d", typ, ids(res.Jobs), j.ID)
		}
		j = res.Jobs[0]
		want("accept", last(j.ID, 2), store.Running, false, store.LeaseTag(j.Token))
		return j
	}

	done := startOne("complete")
	p := 50.0
	heartbeat(t, s, store.HeartbeatParams{Lease: lease(done), Progress: &p})
	want("heartbeat with progress", last(done.ID, 3), store.Running, false, store.LeaseTag(done.Token))
	mustFinish(t, s, store.FinishParams{Lease: lease(done), As: store.Complete})
	want("complete", last(done.ID, 4), store.Completed, false, store.LeaseTag(done.Token))

	failed := startOne("fail")
	mustFinish(t, s, store.FinishParams{Lease: lease(failed), As: store.Fail, Error: "boom"})
	want("fail with a retry", last(failed.ID, 3), store.Pending, false, store.LeaseTag(failed.Token))

	cancelled := startOne("cancel")
	mustCancel(t, s, cancelled.ID)
	want("cancel of a running job", last(cancelled.ID, 3), store.Cancelled, false, store.LeaseTag(cancelled.Token))

	removed := startOne("remove")
	if errs, err := s.Remove(t.Context(), []int64{removed.ID}); err != nil || errs[0] != nil {
		t.Fatalf("Remove = %v, %v", errs, err)
	}
	want("removal of a running job", last(removed.ID, 3), store.Running, true, store.LeaseTag(removed.Token))

	expired := startOne("expire")
	if n, _ := expire(t, s, time.Now().Add(time.Hour)); n != 1 {
		t.Fatalf("ExpireLeases took back %d jobs, want 1", n)
	}
	want("lease expiry", last(expired.ID, 3), store.Pending, false, store.LeaseTag(expired.Token))

	// The next run of the expired job has a lease of its own.
	res := accept(t, s, store.AcceptParams{Types: []string{"expire"}})
	if len(res.Jobs) != 1 || res.Jobs[0].Token == expired.Token {
		t.Fatalf("Accept after expiry = %+v, want the job again under a new token", res.Jobs)
	}
	want("accept after expiry", last(expired.ID, 4), store.Running, false, store.LeaseTag(res.Jobs[0].Token))
}
