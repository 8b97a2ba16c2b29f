package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// ---- resubmit ----

func testResubmit(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Rename", func(t *testing.T) {
		// Bedrock's RequeueJobs with a name: a pending job and an ended
		// one take the new type, and accepts of it take them (the
		// suite checks the group counts after every test).
		s := open(t)
		pending := addOne(t, s, store.AddParams{Type: "old", RunAt: time.Now().Add(time.Hour)})
		failed := addOne(t, s, store.AddParams{Type: "old", Key: "k"})
		running := accept(t, s, store.AcceptParams{Types: []string{"old"}})
		if len(running.Jobs) != 1 || running.Jobs[0].ID != failed.ID {
			t.Fatalf("accept took %d jobs", len(running.Jobs))
		}
		if _, errs, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: failed.ID, Rename: "new?x"}}); err != nil {
			t.Fatal(err)
		} else if !errors.Is(errs[0], store.ErrInvalid) {
			t.Errorf("rename of a running job by resubmit: %v, want ErrInvalid", errs[0])
		}
		if err := finish(t, s, store.FinishParams{Lease: running.Jobs[0].Lease(), As: store.Fail, Permanent: true}); err != nil {
			t.Fatal(err)
		}
		// Its key must be free in the new type (and its group).
		addOne(t, s, store.AddParams{Type: "taken", Key: "k", RunAt: time.Now().Add(time.Hour)})
		if _, errs, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: failed.ID, Rename: "taken"}}); err != nil {
			t.Fatal(err)
		} else if !errors.Is(errs[0], store.ErrInvalid) || !strings.Contains(errs[0].Error(), `key "k"`) {
			t.Errorf("rename to a type where the key is taken: %v, want ErrInvalid naming the key", errs[0])
		}
		if got := get(t, s, failed.ID); got.Type != "old" || got.State != store.Failed {
			t.Errorf("after a refused rename the job is %s %s, want old failed", got.Type, got.State)
		}
		for _, id := range []int64{pending.ID, failed.ID} {
			r := resubmit(t, s, store.ResubmitParams{ID: id, RunAt: time.Now().Add(-time.Second), Rename: "new?x"})
			if r.Job.Type != "new?x" || r.Job.State != store.Pending {
				t.Errorf("job %d after a renaming resubmit: %s %s, want new?x pending", id, r.Job.Type, r.Job.State)
			}
		}
		if got := accept(t, s, store.AcceptParams{Types: []string{"old"}, Limit: 5}); len(got.Jobs) != 0 {
			t.Errorf("accept of the old type took %d jobs", len(got.Jobs))
		}
		if got := accept(t, s, store.AcceptParams{Types: []string{glob.Quote("new?x")}, Limit: 5}); len(got.Jobs) != 2 {
			t.Errorf("accept of the new type took %d jobs, want 2", len(got.Jobs))
		}
		if _, _, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: pending.ID, Rename: "bad\x01"}}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("rename to a bad type: %v, want ErrInvalid", err)
		}
	})
	t.Run("Pending", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t", RunAt: time.Now().Add(time.Hour), Priority: 3, Data: raw(`{"v":1}`)})
		runAt := time.Now().Add(2 * time.Hour)
		r := resubmit(t, s, store.ResubmitParams{ID: j.ID, RunAt: runAt})
		if r.Outcome != store.Updated || r.Job.ID != j.ID {
			t.Errorf("Resubmit of a pending job: outcome %v id %d, want updated, id %d", r.Outcome, r.Job.ID, j.ID)
		}
		got := get(t, s, j.ID)
		sameTime(t, "run_at after resubmit", got.RunAt, runAt)
		wantJSON(t, "data after resubmit without data", got.Data, `{"v":1}`)
		if got.Priority != 3 {
			t.Errorf("resubmit changed the priority to %d, want it kept at 3", got.Priority)
		}

		// No run time keeps a pending job's run time.
		resubmit(t, s, store.ResubmitParams{ID: j.ID})
		sameTime(t, "run_at after resubmit without run_at", get(t, s, j.ID).RunAt, runAt)

		// Data replaces the data.
		resubmit(t, s, store.ResubmitParams{ID: j.ID, RunAt: time.Now().Add(-time.Minute), Data: raw(`{"v":2}`)})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 {
			t.Fatalf("Accept after resubmitting to a past time took %d jobs, want 1", len(res.Jobs))
		}
		wantJSON(t, "data after resubmit with data", res.Jobs[0].Data, `{"v":2}`)
	})

	t.Run("Running", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Data: raw(`{"v":1}`)})
		r := resubmit(t, s, store.ResubmitParams{ID: j.ID, Data: raw(`{"v":2}`)})
		if r.Outcome != store.Resubmitted {
			t.Errorf("Resubmit of a running job: outcome %v, want resubmitted", r.Outcome)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Running)
		if !got.Resubmit || got.Token != j.Token {
			t.Errorf("after resubmit: resubmit %v, token changed %v; want the flag set and the token kept", got.Resubmit, got.Token != j.Token)
		}
		if hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j)}); hb.Err != nil || !hb.Resubmit {
			t.Errorf("Heartbeat after resubmit = resubmit %v err %v, want true and no error", hb.Resubmit, hb.Err)
		}
		before := time.Now()
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		after := time.Now()
		got = get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		wantJSON(t, "data", got.Data, `{"v":2}`)
		aboutNow(t, "run_at after a resubmit without run_at", got.RunAt, before, after)
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 || res.Jobs[0].Resubmit {
			t.Errorf("Accept after the resubmitted run = %v (resubmit flag %v), want the job, without the flag",
				ids(res.Jobs), len(res.Jobs) == 1 && res.Jobs[0].Resubmit)
		}
	})

	t.Run("RunningKeepsWorkerData", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Data: raw(`{"v":1}`)})
		runAt := time.Now().Add(time.Hour)
		resubmit(t, s, store.ResubmitParams{ID: j.ID, RunAt: runAt})
		if hb := heartbeat(t, s, store.HeartbeatParams{Lease: lease(j), Data: raw(`{"v":"worker"}`)}); hb.Err != nil {
			t.Fatalf("Heartbeat: %v", hb.Err)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		got := get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantJSON(t, "data after a resubmit without data", got.Data, `{"v":"worker"}`)
		sameTime(t, "run_at", got.RunAt, runAt)
	})

	for _, state := range []store.State{store.Completed, store.Failed, store.Cancelled} {
		t.Run(state.String(), func(t *testing.T) {
			s := open(t)
			j := ended(t, s, store.AddParams{Type: "t", Data: raw(`{"v":1}`)}, state)
			before := time.Now()
			r := resubmit(t, s, store.ResubmitParams{ID: j.ID})
			after := time.Now()
			if r.Outcome != store.Requeued || r.Job.ID != j.ID {
				t.Errorf("Resubmit of a %v job: outcome %v id %d, want requeued, id %d", state, r.Outcome, r.Job.ID, j.ID)
			}
			got := get(t, s, j.ID)
			wantState(t, got, store.Pending)
			wantAttempt(t, got, 0)
			wantJSON(t, "data after resubmit without data", got.Data, `{"v":1}`)
			aboutNow(t, "run_at after resubmit without run_at", got.RunAt, before, after)
			if got.LastError != "" || len(got.Errors) != 0 || len(got.Result) != 0 || !got.FinishedAt.IsZero() {
				t.Errorf("after resubmit last_error %q errors %v result %s finished_at %v, want all cleared",
					got.LastError, got.Errors, got.Result, got.FinishedAt)
			}
		})
	}

	t.Run("Missing", func(t *testing.T) {
		s := open(t)
		j := ended(t, s, store.AddParams{Type: "t"}, store.Completed)
		res, errs, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: j.ID + 1000}, {ID: j.ID}})
		if err != nil {
			t.Fatalf("Resubmit: the call failed: %v", err)
		}
		if len(res) != 2 || len(errs) != 2 {
			t.Fatalf("Resubmit(2 items) returned %d results and %d errors", len(res), len(errs))
		}
		wantErr(t, "Resubmit of a missing job", errs[0], store.ErrNotFound)
		if errs[1] != nil || res[1].Outcome != store.Requeued {
			t.Errorf("Resubmit of an existing job in the same batch: %v, outcome %v; want success, requeued", errs[1], res[1].Outcome)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		j := addOne(t, s, store.AddParams{Type: "t"})
		for _, c := range []struct {
			name string
			p    store.ResubmitParams
		}{
			{"id 0", store.ResubmitParams{}},
			{"data not an object", store.ResubmitParams{ID: j.ID, Data: raw(`[1]`)}},
			{"run_at in year 10000", store.ResubmitParams{ID: j.ID, RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		} {
			_, _, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: j.ID, RunAt: time.Now().Add(time.Hour)}, c.p})
			wantErr(t, "Resubmit with "+c.name, err, store.ErrInvalid)
		}
		unchanged(t, "rejected resubmits", j, get(t, s, j.ID))
	})
}
