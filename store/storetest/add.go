package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- add ----

func testAdd(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Meta", func(t *testing.T) {
		s := open(t)
		meta := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "é": ""}
		j := addOne(t, s, store.AddParams{Type: "m", Key: "k", Meta: meta})
		if !reflect.DeepEqual(j.Meta, meta) {
			t.Fatalf("added meta %v, want %v", j.Meta, meta)
		}
		if got := get(t, s, j.ID); !reflect.DeepEqual(got.Meta, meta) {
			t.Fatalf("stored meta %v, want %v", got.Meta, meta)
		}
		// A re-add without meta keeps it; with meta, replaces it.
		add(t, s, store.AddParams{Type: "m", Key: "k"})
		if got := get(t, s, j.ID); !reflect.DeepEqual(got.Meta, meta) {
			t.Fatalf("after a re-add without meta: %v", got.Meta)
		}
		add(t, s, store.AddParams{Type: "m", Key: "k", Meta: map[string]string{"a": "b"}})
		if got := get(t, s, j.ID); !reflect.DeepEqual(got.Meta, map[string]string{"a": "b"}) {
			t.Fatalf("after a re-add with meta: %v", got.Meta)
		}
		res := accept(t, s, store.AcceptParams{Types: []string{"m"}})
		if len(res.Jobs) != 1 || !reflect.DeepEqual(res.Jobs[0].Meta, map[string]string{"a": "b"}) {
			t.Fatalf("accepted %+v", res.Jobs)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(res.Jobs[0]), As: store.Complete})
		if got := get(t, s, j.ID); !reflect.DeepEqual(got.Meta, map[string]string{"a": "b"}) {
			t.Fatalf("completed job's meta %v", got.Meta)
		}
		if got := addOne(t, s, store.AddParams{Type: "m"}); got.Meta != nil {
			t.Fatalf("a job without meta has %v", got.Meta)
		}
		big := map[string]string{"k": strings.Repeat("x", store.MaxMetaSize)}
		for what, bad := range map[string]map[string]string{"too large": big, "empty key": {"": "v"}, "not UTF-8": {"k": "\xff"}} {
			if _, err := s.Add(t.Context(), []store.AddParams{{Type: "m", Meta: bad}}); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("meta %s: %v, want ErrInvalid", what, err)
			}
		}
	})
	t.Run("Defaults", func(t *testing.T) {
		s := open(t)
		before := time.Now()
		j := addOne(t, s, store.AddParams{Type: "email.send"})
		after := time.Now()
		if j.ID <= 0 {
			t.Errorf("new job id %d, want a positive id", j.ID)
		}
		wantState(t, j, store.Pending)
		if j.Type != "email.send" || j.Key != "" || j.Group != "" || j.Priority != 0 {
			t.Errorf("new job type %q key %q group %q priority %d, want email.send, no key, no group, priority 0",
				j.Type, j.Key, j.Group, j.Priority)
		}
		wantAttempt(t, j, 0)
		if j.MaxAttempts != store.DefaultMaxAttempts {
			t.Errorf("max_attempts %d, want the default %d", j.MaxAttempts, store.DefaultMaxAttempts)
		}
		if j.BackoffBase != store.DefaultBackoffBase || j.BackoffMax != store.DefaultBackoffMax {
			t.Errorf("back-off %v..%v, want the defaults %v..%v", j.BackoffBase, j.BackoffMax,
				store.DefaultBackoffBase, store.DefaultBackoffMax)
		}
		wantJSON(t, "data of a job added without data", j.Data, `{}`)
		aboutNow(t, "run_at of a job added without run_at", j.RunAt, before, after)
		aboutNow(t, "created_at", j.CreatedAt, before, after)
		if j.Token != "" || !j.LeaseUntil.IsZero() || !j.FinishedAt.IsZero() || !j.StartedAt.IsZero() {
			t.Errorf("new job has token %q, lease_until %v, started_at %v, finished_at %v; want none of them",
				j.Token, j.LeaseUntil, j.StartedAt, j.FinishedAt)
		}
		if j.LastError != "" || len(j.Errors) != 0 || len(j.Result) != 0 || j.Progress != 0 {
			t.Errorf("new job has last_error %q, errors %v, result %s, progress %v; want none",
				j.LastError, j.Errors, j.Result, j.Progress)
		}
		unchanged(t, "reading back the added job (Add's result vs Get)", j, get(t, s, j.ID))
	})

	t.Run("AllFields", func(t *testing.T) {
		s := open(t)
		runAt := time.Now().Add(time.Hour)
		p := store.AddParams{
			Type: "email.send", Key: "welcome-42", Group: "tenant-1", Priority: 7, RunAt: runAt,
			Data: raw(`{ "to": "a@example.com", "n": [1, 2] }`), MaxAttempts: 3,
			BackoffBase: 2 * time.Second, BackoffMax: time.Minute,
		}
		j := addOne(t, s, p)
		got := get(t, s, j.ID)
		unchanged(t, "reading back the added job (Add's result vs Get)", j, got)
		if got.Key != p.Key || got.Group != p.Group || got.Priority != p.Priority {
			t.Errorf("key %q group %q priority %d, want %q %q %d", got.Key, got.Group, got.Priority, p.Key, p.Group, p.Priority)
		}
		sameTime(t, "run_at", got.RunAt, runAt)
		wantJSON(t, "data", got.Data, `{"to":"a@example.com","n":[1,2]}`)
		if got.MaxAttempts != 3 || got.BackoffBase != 2*time.Second || got.BackoffMax != time.Minute {
			t.Errorf("max_attempts %d back-off %v..%v, want 3 and 2s..1m", got.MaxAttempts, got.BackoffBase, got.BackoffMax)
		}
		if got.State != store.Pending {
			t.Errorf("a job scheduled for later is %v, want pending", got.State)
		}
	})

	t.Run("BatchInOrder", func(t *testing.T) {
		s := open(t)
		var ps []store.AddParams
		for i := range 5 {
			ps = append(ps, store.AddParams{Type: fmt.Sprintf("t%d", i%2), Data: raw(fmt.Sprintf(`{"i":%d}`, i))})
		}
		res := add(t, s, ps...)
		for i, r := range res {
			if r.Outcome != store.Inserted {
				t.Errorf("result %d: outcome %v, want inserted", i, r.Outcome)
			}
			if r.Job.Type != ps[i].Type {
				t.Errorf("result %d: type %q, want %q (results must be in the order of the batch)", i, r.Job.Type, ps[i].Type)
			}
			wantJSON(t, fmt.Sprintf("result %d data", i), r.Job.Data, string(ps[i].Data))
			if i > 0 && r.Job.ID <= res[i-1].Job.ID {
				t.Errorf("result %d: id %d, not greater than the previous id %d", i, r.Job.ID, res[i-1].Job.ID)
			}
		}
		jobs, err := s.Get(t.Context(), resultIDs(res))
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range jobs {
			wantJSON(t, fmt.Sprintf("stored job %d data", i), j.Data, string(ps[i].Data))
		}
	})

	t.Run("IDsIncreaseAndAreNotReused", func(t *testing.T) {
		s := open(t)
		a := addOne(t, s, store.AddParams{Type: "x"})
		b := addOne(t, s, store.AddParams{Type: "y"})
		if b.ID <= a.ID {
			t.Errorf("second job id %d, want greater than the first job's %d", b.ID, a.ID)
		}
		errs, err := s.Remove(t.Context(), []int64{b.ID})
		if err != nil || errs[0] != nil {
			t.Fatalf("Remove(%d) = %v, %v", b.ID, errs, err)
		}
		c := addOne(t, s, store.AddParams{Type: "x"})
		if c.ID <= b.ID {
			t.Errorf("job added after removing job %d got id %d, want a new, greater id", b.ID, c.ID)
		}
	})

	t.Run("InvalidRejectsWholeBatch", func(t *testing.T) {
		s := open(t)
		huge := `{"x":"` + strings.Repeat("a", store.MaxDataSize) + `"}`
		cases := []struct {
			name string
			p    store.AddParams
		}{
			{"empty type", store.AddParams{}},
			{"type with a control character", store.AddParams{Type: "email\x01"}},
			{"type with control character", store.AddParams{Type: "a\nb"}},
			{"type longer than 255", store.AddParams{Type: strings.Repeat("t", store.MaxNameLen+1)}},
			{"data is an array", store.AddParams{Type: "ok", Data: raw(`[1,2]`)}},
			{"data is a string", store.AddParams{Type: "ok", Data: raw(`"x"`)}},
			{"data is invalid JSON", store.AddParams{Type: "ok", Data: raw(`{"a":`)}},
			{"data larger than MaxDataSize", store.AddParams{Type: "ok", Data: raw(huge)}},
			{"negative max_attempts", store.AddParams{Type: "ok", MaxAttempts: -1}},
			{"negative backoff", store.AddParams{Type: "ok", BackoffBase: -time.Second}},
			{"backoff_max < backoff_base", store.AddParams{Type: "ok", BackoffBase: time.Minute, BackoffMax: time.Second}},
			{"run_at in year 10000", store.AddParams{Type: "ok", RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
			{"run_at before 1970", store.AddParams{Type: "ok", RunAt: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)}},
			{"key longer than 255", store.AddParams{Type: "ok", Key: strings.Repeat("k", store.MaxNameLen+1)}},
			{"group longer than 255", store.AddParams{Type: "ok", Group: strings.Repeat("g", store.MaxNameLen+1)}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				batch := []store.AddParams{{Type: "ok", Key: "k1"}, c.p, {Type: "ok", Key: "k2"}}
				res, err := s.Add(t.Context(), batch)
				wantErr(t, "Add of a batch with "+c.name, err, store.ErrInvalid)
				if res != nil {
					t.Errorf("Add of a bad batch returned results %v, want none", res)
				}
				_, err = s.Add(t.Context(), []store.AddParams{c.p})
				wantErr(t, "Add of one job with "+c.name, err, store.ErrInvalid)
				if jobs := listAll(t, s, store.ListParams{}); len(jobs) != 0 {
					t.Errorf("after rejected adds the store holds %d jobs, want none", len(jobs))
				}
			})
		}
	})
}

// ---- keys ----

func testKeys(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("UniqueWithinType", func(t *testing.T) {
		s := open(t)
		res := add(t, s,
			store.AddParams{Type: "a", Key: "k", Data: raw(`{"v":"a"}`)},
			store.AddParams{Type: "b", Key: "k", Data: raw(`{"v":"b"}`)},
			store.AddParams{Type: "a", Data: raw(`{"v":"no key 1"}`)},
			store.AddParams{Type: "a", Data: raw(`{"v":"no key 2"}`)},
		)
		seen := map[int64]bool{}
		for i, r := range res {
			if r.Outcome != store.Inserted {
				t.Errorf("job %d: outcome %v, want inserted (the same key in another type, or no key, is a new job)", i, r.Outcome)
			}
			if seen[r.Job.ID] {
				t.Errorf("job %d: id %d was already returned for another job", i, r.Job.ID)
			}
			seen[r.Job.ID] = true
		}
		for i, typ := range []string{"a", "b"} {
			j, err := s.GetByKey(t.Context(), typ, "", "k")
			if err != nil {
				t.Fatalf("GetByKey(%q, k): %v", typ, err)
			}
			if j.ID != res[i].Job.ID {
				t.Errorf("GetByKey(%q, k) = job %d, want %d", typ, j.ID, res[i].Job.ID)
			}
			wantJSON(t, "data of "+typ+"/k", j.Data, fmt.Sprintf(`{"v":%q}`, typ))
		}
	})

	t.Run("ReaddPendingUpdates", func(t *testing.T) {
		s := open(t)
		first := addOne(t, s, store.AddParams{Type: "t", Key: "k", Group: "g1", Priority: 1,
			RunAt: time.Now().Add(time.Hour), Data: raw(`{"v":1}`)})
		runAt := time.Now().Add(2 * time.Hour)
		r := add(t, s, store.AddParams{Type: "t", Key: "k", Group: "g1", Priority: 5, RunAt: runAt, Data: raw(`{"v":2}`)})[0]
		if r.Outcome != store.Updated {
			t.Errorf("re-add of a pending job: outcome %v, want updated", r.Outcome)
		}
		if r.Job.ID != first.ID {
			t.Errorf("re-add of a pending job: id %d, want the same id %d", r.Job.ID, first.ID)
		}
		j := get(t, s, first.ID)
		unchanged(t, "reading back the re-added job (Add's result vs Get)", r.Job, j)
		wantState(t, j, store.Pending)
		wantAttempt(t, j, 0)
		wantJSON(t, "data after re-add", j.Data, `{"v":2}`)
		sameTime(t, "run_at after re-add", j.RunAt, runAt)
		if j.Priority != 5 || j.Group != "g1" {
			t.Errorf("after re-add priority %d group %q, want 5 and g1", j.Priority, j.Group)
		}
		if n := len(listAll(t, s, store.ListParams{Types: []string{"t"}})); n != 1 {
			t.Errorf("after re-add there are %d jobs of the type, want 1", n)
		}

		// Same run time, new data: the data is still replaced (couch_jobs
		// skipped this write).
		r = add(t, s, store.AddParams{Type: "t", Key: "k", Group: "g1", Priority: 5, RunAt: runAt, Data: raw(`{"v":3}`)})[0]
		if r.Outcome != store.Updated {
			t.Errorf("re-add with the same run_at: outcome %v, want updated", r.Outcome)
		}
		wantJSON(t, "data after re-add with the same run_at", get(t, s, first.ID).Data, `{"v":3}`)
	})

	t.Run("ReaddRunningResubmits", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":1}`)})
		runAt := time.Now().Add(time.Hour)
		r := add(t, s, store.AddParams{Type: "t", Key: "k", RunAt: runAt, Data: raw(`{"v":2}`)})[0]
		if r.Outcome != store.Resubmitted {
			t.Errorf("re-add of a running job: outcome %v, want resubmitted", r.Outcome)
		}
		if r.Job.ID != j.ID {
			t.Errorf("re-add of a running job: id %d, want the same id %d", r.Job.ID, j.ID)
		}
		got := get(t, s, j.ID)
		wantState(t, got, store.Running)
		if got.Token != j.Token {
			t.Errorf("re-add of a running job changed its token; the worker's attempt must go on undisturbed")
		}
		if !got.Resubmit {
			t.Errorf("re-add of a running job: resubmit flag not set")
		}
		wantJSON(t, "data of the running attempt after re-add", got.Data, `{"v":1}`)
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs while the resubmitted job still runs, want 0", n)
		}

		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		got = get(t, s, j.ID)
		wantState(t, got, store.Pending)
		wantAttempt(t, got, 0)
		wantJSON(t, "data after the resubmitted run ended", got.Data, `{"v":2}`)
		sameTime(t, "run_at after the resubmitted run ended", got.RunAt, runAt)
		if got.Resubmit {
			t.Errorf("resubmit flag still set after the run ended")
		}
		if n := len(accept(t, s, store.AcceptParams{Types: []string{"t"}}).Jobs); n != 0 {
			t.Errorf("Accept took %d jobs before the requested run_at, want 0", n)
		}
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}, DueBy: runAt.Add(time.Minute)})
		if len(res.Jobs) != 1 || res.Jobs[0].ID != j.ID {
			t.Fatalf("Accept due by the requested run_at = %v, want job %d", ids(res.Jobs), j.ID)
		}
		wantAttempt(t, res.Jobs[0], 1)
		if res.Jobs[0].Token == j.Token {
			t.Errorf("the new run got the old token, want a fresh one")
		}
	})

	t.Run("ReaddRunningDefaultsToNow", func(t *testing.T) {
		s := open(t)
		j := start(t, s, store.AddParams{Type: "t", Key: "k", RunAt: time.Now().Add(-time.Hour)})
		r := add(t, s, store.AddParams{Type: "t", Key: "k"})[0]
		if r.Outcome != store.Resubmitted {
			t.Errorf("re-add of a running job: outcome %v, want resubmitted", r.Outcome)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
		if len(res.Jobs) != 1 || res.Jobs[0].ID != j.ID {
			t.Errorf("Accept after the resubmitted run ended = %v, want job %d due now", ids(res.Jobs), j.ID)
		}
	})

	for _, state := range []store.State{store.Completed, store.Failed, store.Cancelled} {
		t.Run("ReaddRequeues/"+state.String(), func(t *testing.T) {
			s := open(t)
			j := ended(t, s, store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":1}`)}, state)
			before := time.Now()
			r := add(t, s, store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":2}`)})[0]
			after := time.Now()
			if r.Outcome != store.Requeued {
				t.Errorf("re-add of a %v job: outcome %v, want requeued", state, r.Outcome)
			}
			if r.Job.ID != j.ID {
				t.Errorf("re-add of a %v job: id %d, want the same id %d", state, r.Job.ID, j.ID)
			}
			got := get(t, s, j.ID)
			unchanged(t, "reading back the requeued job (Add's result vs Get)", r.Job, got)
			wantState(t, got, store.Pending)
			wantAttempt(t, got, 0)
			wantJSON(t, "data after requeue", got.Data, `{"v":2}`)
			aboutNow(t, "run_at after requeue", got.RunAt, before, after)
			if got.LastError != "" || len(got.Errors) != 0 || len(got.Result) != 0 {
				t.Errorf("after requeue last_error %q errors %v result %s, want all cleared", got.LastError, got.Errors, got.Result)
			}
			if !got.FinishedAt.IsZero() || got.CancelRequested || got.Resubmit {
				t.Errorf("after requeue finished_at %v cancel_requested %v resubmit %v, want all cleared",
					got.FinishedAt, got.CancelRequested, got.Resubmit)
			}
			res := accept(t, s, store.AcceptParams{Types: []string{"t"}})
			if len(res.Jobs) != 1 || res.Jobs[0].ID != j.ID {
				t.Fatalf("Accept after requeue = %v, want job %d", ids(res.Jobs), j.ID)
			}
			wantAttempt(t, res.Jobs[0], 1)
		})
	}

	t.Run("SameKeyTwiceInBatch", func(t *testing.T) {
		s := open(t)
		res := add(t, s,
			store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":1}`)},
			store.AddParams{Type: "t", Key: "k", Data: raw(`{"v":2}`)},
		)
		if res[0].Outcome != store.Inserted || res[1].Outcome != store.Updated {
			t.Errorf("outcomes %v, %v; want inserted, updated", res[0].Outcome, res[1].Outcome)
		}
		if res[0].Job.ID != res[1].Job.ID {
			t.Errorf("ids %d and %d, want the same job", res[0].Job.ID, res[1].Job.ID)
		}
		wantJSON(t, "data", get(t, s, res[0].Job.ID).Data, `{"v":2}`)
	})
}
