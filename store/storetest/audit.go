package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- the audit trail (store.Auditor) ----

func history(t *testing.T, s store.Store, ctx context.Context, id int64) []store.HistoryEntry {
	t.Helper()
	a, ok := s.(store.Auditor)
	if !ok {
		t.Fatalf("%T is no store.Auditor", s)
	}
	h, err := a.History(ctx, id)
	if err != nil {
		t.Fatalf("History(%d): %v", id, err)
	}
	return h
}

// audited is the audit lines of h as "action by actor: detail".
func audited(h []store.HistoryEntry) []string {
	var out []string
	for _, e := range h {
		if e.Audited {
			out = append(out, fmt.Sprintf("%s by %s: %s", e.Action, e.Actor, e.Detail))
		}
	}
	return out
}

func wantAudit(t *testing.T, what string, h []store.HistoryEntry, want ...string) {
	t.Helper()
	got := audited(h)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: audit records\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func as(t *testing.T, actor string) context.Context { return store.WithActor(t.Context(), actor) }

// testAudit checks that every producer operation and every change of a
// job's type's or group's settings is recorded with its actor and what it
// changed, in time order with the job's own life, and nothing else.
func testAudit(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("EachChangeRecorded", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "invoice", Group: "acme", Data: raw(`{"n":1}`)})
		other := addOne(t, s, store.AddParams{Type: "invoice", Group: "globex"})
		p := 5
		if _, errs, err := s.Update(as(t, "alice"), []store.UpdateParams{{ID: j.ID, Priority: &p, Data: raw(`{"n":2}`)}}); err != nil || errs[0] != nil {
			t.Fatalf("Update: %v %v", err, errs)
		}
		if err := s.SetTypeConfig(as(t, "ops"), store.TypeConfig{Type: "invoice", Paused: true}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetTypeConfig(as(t, "ops"), store.TypeConfig{Type: "invoice"}); err != nil {
			t.Fatal(err)
		}
		// A setting that changes nothing records nothing; one of another
		// type or group is not in this job's history.
		if err := s.SetTypeConfig(as(t, "ops"), store.TypeConfig{Type: "invoice"}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetTypeConfig(as(t, "ops"), store.TypeConfig{Type: "email", Paused: true}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetGroupConfig(as(t, "ops"), store.GroupConfig{Group: "globex", Paused: true}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetGroupConfig(as(t, "tenant-admin"), store.GroupConfig{Group: "acme", Type: "invoice", MaxRunning: 3}); err != nil {
			t.Fatal(err)
		}
		if errs, err := s.Cancel(as(t, "bob"), []int64{j.ID}); err != nil || errs[0] != nil {
			t.Fatalf("Cancel: %v %v", err, errs)
		}
		// A cancel that changes nothing, and a refused item, record nothing.
		if errs, err := s.Cancel(as(t, "bob"), []int64{j.ID}); err != nil || errs[0] != nil {
			t.Fatalf("Cancel of a cancelled job: %v %v", err, errs)
		}
		if errs, err := s.Cancel(as(t, "bob"), []int64{j.ID, j.ID + 100}); err != nil || errs[1] == nil {
			t.Fatalf("Cancel of a job that does not exist: %v %v, want an item error", err, errs)
		}
		if _, errs, err := s.Resubmit(as(t, "carol"), []store.ResubmitParams{{ID: j.ID, RunNow: true}}); err != nil || errs[0] != nil {
			t.Fatalf("Resubmit: %v %v", err, errs)
		}
		h := history(t, s, t.Context(), j.ID)
		wantAudit(t, "the job's history", h,
			"update by alice: priority 0 → 5, data replaced",
			"pause type by ops: type invoice",
			"resume type by ops: type invoice",
			`set group by tenant-admin: group "acme" of type invoice: max_running 0 → 3`,
			"cancel by bob: pending → cancelled",
			"retry by carol: cancelled → pending")
		if h[0].Action != "added" || h[0].Audited || !h[0].At.Equal(j.CreatedAt) {
			t.Errorf("the history begins with %+v, want the job's add at %v", h[0], j.CreatedAt)
		}
		for i := 1; i < len(h); i++ {
			if h[i].At.Before(h[i-1].At) {
				t.Errorf("history out of time order: %+v before %+v", h[i-1], h[i])
			}
		}
		wantAudit(t, "the other job's history", history(t, s, t.Context(), other.ID),
			"pause type by ops: type invoice",
			"resume type by ops: type invoice",
			`pause group by ops: group "globex" of every type`)
	})

	t.Run("ChangeBeforeItsEffect", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "invoice"})
		if errs, err := s.Cancel(as(t, "bob"), []int64{j.ID}); err != nil || errs[0] != nil {
			t.Fatalf("Cancel: %v %v", err, errs)
		}
		var got []string
		for _, e := range history(t, s, t.Context(), j.ID) {
			got = append(got, e.Action+" by "+e.Actor)
		}
		if want := "added by ,cancel by bob,ended by "; strings.Join(got, ",") != want {
			t.Errorf("history of a cancelled job: %q, want %q", strings.Join(got, ","), want)
		}
	})

	t.Run("RunNowWithoutActor", func(t *testing.T) {
		s := open(t)
		later := time.Now().Add(time.Hour).Truncate(time.Second)
		j := addOne(t, s, store.AddParams{Type: "invoice", RunAt: later})
		if _, errs, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: j.ID, RunNow: true}}); err != nil || errs[0] != nil {
			t.Fatalf("Resubmit: %v %v", err, errs)
		}
		got := audited(history(t, s, t.Context(), j.ID))
		want := "run now by : run_at " + later.UTC().Format(time.RFC3339) + " → "
		if len(got) != 1 || !strings.HasPrefix(got[0], want) {
			t.Errorf("a run now through the Go API without an actor: %q, want one record beginning %q", got, want)
		}
	})

	t.Run("RunsAndEnds", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "report", MaxAttempts: 2})
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "disk full"})
		start(t, s, store.AddParams{Type: "other"}) // a job of another type: not in the history
		res := accept(t, s, store.AcceptParams{Types: []string{"report"}, Worker: "worker-1", DueBy: time.Now().Add(time.Hour)})
		if len(res.Jobs) != 1 {
			t.Fatalf("accept the retry: %d jobs", len(res.Jobs))
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Fail, Error: "disk still full"})
		var actions []string
		for _, e := range history(t, s, t.Context(), res.Jobs[0].ID) {
			actions = append(actions, e.Action+": "+e.Detail)
		}
		want := []string{"added: type report, group \"\"", "started: the run before the last", "attempt failed: attempt 1: disk full",
			"started: attempt 2 by worker-1", "attempt failed: attempt 2: disk still full", "ended: failed: disk still full"}
		if strings.Join(actions, "\n") != strings.Join(want, "\n") {
			t.Errorf("history of a job that failed twice:\n  %s\nwant\n  %s", strings.Join(actions, "\n  "), strings.Join(want, "\n  "))
		}
	})

	t.Run("RemovedJobKeepsItsRecords", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "invoice", Group: "acme"})
		if errs, err := s.Remove(as(t, "dave"), []int64{j.ID}); err != nil || errs[0] != nil {
			t.Fatalf("Remove: %v %v", err, errs)
		}
		gone(t, s, j.ID)
		wantAudit(t, "a removed job's history", history(t, s, t.Context(), j.ID), "remove by dave: removed while pending")
		_, err := s.(store.Auditor).History(t.Context(), j.ID+100)
		wantErr(t, "History of a job that never was", err, store.ErrNotFound)
	})

	t.Run("Retention", func(t *testing.T) {
		s := open(t)
		r, ok := s.(store.Retirer)
		if !ok {
			t.Skipf("%T deletes nothing in the background", s)
		}
		j := addOne(t, s, store.AddParams{Type: "invoice"})
		k := addOne(t, s, store.AddParams{Type: "invoice"})
		mustCancel(t, s, j.ID)
		if errs, err := s.Remove(as(t, "dave"), []int64{k.ID}); err != nil || errs[0] != nil {
			t.Fatalf("Remove: %v %v", err, errs)
		}
		// Within the trail's retention, the sweep keeps the records, a
		// removed job's too (the cancelled job itself goes with its
		// type's retention, 7 days).
		if _, err := r.Retire(t.Context(), time.Now().Add(store.AuditRetention-time.Hour), 1000); err != nil {
			t.Fatal(err)
		}
		if got := audited(history(t, s, t.Context(), k.ID)); len(got) != 1 {
			t.Errorf("the removed job's records before the trail's retention passed: %q, want its removal", got)
		}
		if got := audited(history(t, s, t.Context(), j.ID)); len(got) != 1 {
			t.Errorf("the retired job's records before the trail's retention passed: %q, want its cancel", got)
		}
		if _, err := r.Retire(t.Context(), time.Now().Add(store.AuditRetention+time.Hour), 1000); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{j.ID, k.ID} {
			_, err := s.(store.Auditor).History(t.Context(), id)
			wantErr(t, fmt.Sprintf("History(%d) after the trail's retention", id), err, store.ErrNotFound)
		}
	})

	t.Run("Reach", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "invoice", Group: "acme"})
		k := addOne(t, s, store.AddParams{Type: "invoice", Group: "acme"})
		mustCancel(t, s, j.ID)
		if errs, err := s.Remove(t.Context(), []int64{k.ID}); err != nil || errs[0] != nil {
			t.Fatalf("Remove: %v %v", err, errs)
		}
		globex := store.WithReach(t.Context(), reachOf(t, []string{"globex"}, nil))
		for _, id := range []int64{j.ID, k.ID} {
			_, err := s.(store.Auditor).History(globex, id)
			wantErr(t, fmt.Sprintf("History(%d) for another tenant", id), err, store.ErrNotFound)
		}
		acme := store.WithReach(t.Context(), reachOf(t, []string{"acme"}, nil))
		if h := history(t, s, acme, k.ID); len(audited(h)) != 1 {
			t.Errorf("the removed job's history for its tenant: %v", audited(h))
		}
		// Changes out of the caller's reach record nothing.
		if errs, err := s.Cancel(store.WithActor(globex, "mallory"), []int64{k.ID + 1}); err != nil || errs[0] == nil {
			t.Fatalf("Cancel out of reach: %v %v, want an item error", err, errs)
		}
	})
}
