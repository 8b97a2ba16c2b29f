package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- batches with callbacks (store.Batches) ----

func batchesOf(t *testing.T, s store.Store) store.Batches {
	t.Helper()
	b, ok := s.(store.Batches)
	if !ok {
		t.Fatalf("%T does not keep batches (store.Batches)", s)
	}
	return b
}

func getBatch(t *testing.T, bs store.Batches, id int64) store.Batch {
	t.Helper()
	b, err := bs.GetBatch(t.Context(), id)
	if err != nil {
		t.Fatalf("GetBatch(%d): %v", id, err)
	}
	return b
}

// runAll accepts every due job of typ and finishes each as end says.
func runAll(t *testing.T, s store.Store, typ string, end func(j store.Job) store.FinishParams) []store.Job {
	t.Helper()
	res := accept(t, s, store.AcceptParams{Types: []string{typ}, Limit: 1000, LeaseTimeout: time.Minute})
	ps := make([]store.FinishParams, len(res.Jobs))
	for i, j := range res.Jobs {
		ps[i] = end(j)
		ps[i].Lease = lease(j)
	}
	errs, err := s.Finish(t.Context(), ps)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Finish job %d: %v", ps[i].ID, err)
		}
	}
	return res.Jobs
}

func completeAll(j store.Job) store.FinishParams { return store.FinishParams{As: store.Complete} }

// callbackBatch is what a callback job's data says of its batch.
type callbackBatch struct {
	Batch struct {
		ID       int64             `json:"id"`
		Counts   store.BatchCounts `json:"counts"`
		Callback string            `json:"callback"`
	} `json:"batch"`
	Note string `json:"note"`
}

func callbackOf(t *testing.T, s store.Store, id int64) callbackBatch {
	t.Helper()
	if id == 0 {
		t.Fatal("the callback job was not added")
	}
	var cb callbackBatch
	if err := json.Unmarshal(get(t, s, id).Data, &cb); err != nil {
		t.Fatalf("callback job %d: data: %v", id, err)
	}
	return cb
}

func countJobs(t *testing.T, s store.Store, typ string) int64 {
	t.Helper()
	counts, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range counts {
		if c.Type == typ {
			n += c.Jobs
		}
	}
	return n
}

func testJobBatches(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("CallbacksOnce", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		jobs := make([]store.AddParams, 5)
		for i := range jobs {
			jobs[i] = store.AddParams{Type: "member"}
		}
		b, res, err := bs.AddBatch(t.Context(), store.NewBatch{
			Jobs:        jobs,
			OnComplete:  &store.AddParams{Type: "after", Data: json.RawMessage(`{"note":"all ended"}`)},
			OnSuccess:   &store.AddParams{Type: "after", Data: json.RawMessage(`{"note":"all completed"}`)},
			Description: "five members",
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 5 || b.Counts != (store.BatchCounts{Total: 5, Remaining: 5}) || b.Done || b.Description != "five members" {
			t.Fatalf("AddBatch: %d results, batch %+v; want 5 members remaining, not done", len(res), b)
		}
		for _, r := range res {
			if r.Job.Batch != b.ID || get(t, s, r.Job.ID).Batch != b.ID {
				t.Errorf("member %d: batch %d, want %d", r.Job.ID, get(t, s, r.Job.ID).Batch, b.ID)
			}
		}
		// Three complete through the set-based path, one with a result
		// and one through a retry first (which is no ending).
		res1 := accept(t, s, store.AcceptParams{Types: []string{"member"}, Limit: 5, LeaseTimeout: time.Minute}).Jobs
		ps := []store.FinishParams{
			{Lease: lease(res1[0]), As: store.Complete},
			{Lease: lease(res1[1]), As: store.Complete},
			{Lease: lease(res1[2]), As: store.Complete, Result: json.RawMessage(`{"n":1}`)},
			{Lease: lease(res1[3]), As: store.Fail, Error: "again"},
		}
		if _, err := s.Finish(t.Context(), ps); err != nil {
			t.Fatal(err)
		}
		got := getBatch(t, bs, b.ID)
		if want := (store.BatchCounts{Total: 5, Remaining: 2, Completed: 3}); got.Counts != want || got.Done {
			t.Fatalf("after 3 completions and a retry: %+v, want counts %+v, not done", got, want)
		}
		if n := countJobs(t, s, "after"); n != 0 {
			t.Fatalf("%d callbacks before the batch is done, want none", n)
		}
		if err := finish(t, s, store.FinishParams{Lease: lease(res1[4]), As: store.Complete}); err != nil {
			t.Fatal(err)
		}
		// The retried one, made due, is the last.
		if _, _, err := s.Update(t.Context(), []store.UpdateParams{{ID: res1[3].ID, RunAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
		if ran := runAll(t, s, "member", completeAll); len(ran) != 1 {
			t.Fatalf("%d members ran again, want the retried one", len(ran))
		}
		got = getBatch(t, bs, b.ID)
		want := store.BatchCounts{Total: 5, Completed: 5}
		if got.Counts != want || !got.Done || got.DoneAt.IsZero() || got.CompleteJob == 0 || got.SuccessJob == 0 {
			t.Fatalf("after the last: %+v, want done with counts %+v and both callbacks", got, want)
		}
		if n := countJobs(t, s, "after"); n != 2 {
			t.Errorf("%d callback jobs, want 2 (on_complete and on_success, once each)", n)
		}
		for id, which := range map[int64]string{got.CompleteJob: "complete", got.SuccessJob: "success"} {
			cb := callbackOf(t, s, id)
			if cb.Batch.ID != b.ID || cb.Batch.Counts != want || cb.Batch.Callback != which || cb.Note == "" {
				t.Errorf("callback job %d sees %+v, want batch %d, counts %+v, callback %q and its own data", id, cb, b.ID, want, which)
			}
			if j := get(t, s, id); j.Batch != 0 {
				t.Errorf("callback job %d is a member of batch %d, want none", id, j.Batch)
			}
		}
		// A member's later change no longer moves a done batch.
		if errs, err := s.Remove(t.Context(), []int64{res[0].Job.ID}); err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
		if again := getBatch(t, bs, b.ID); again.Counts != want {
			t.Errorf("after a member's removal: %+v, want the done batch's counts kept", again.Counts)
		}
		_, err = s.Add(t.Context(), []store.AddParams{{Type: "member", Batch: b.ID}})
		wantErr(t, "joining a done batch", err, store.ErrFinished)
	})

	// A callback runs after jobs named when the batch was added; one of
	// them removed before the batch is done counts as removed (its
	// policy applies), and the member that ends the batch still finishes.
	// A callback cannot be a child: its parent may have ended by then.
	t.Run("CallbackAfterRemoved", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		res, err := s.Add(t.Context(), []store.AddParams{{Type: "dep"}, {Type: "dep"}})
		if err != nil {
			t.Fatal(err)
		}
		gone, kept := res[0].Job.ID, res[1].Job.ID
		b, _, err := bs.AddBatch(t.Context(), store.NewBatch{
			Jobs:       []store.AddParams{{Type: "member"}},
			OnComplete: &store.AddParams{Type: "cb", After: []int64{gone, kept}},
			OnSuccess:  &store.AddParams{Type: "cb", After: []int64{gone, kept}, OnDepFailure: store.DepRun},
		})
		if err != nil {
			t.Fatal(err)
		}
		if errs, err := s.Remove(t.Context(), []int64{gone}); err != nil || errs[0] != nil {
			t.Fatalf("Remove(%d): %v %v", gone, err, errs)
		}
		runAll(t, s, "member", completeAll) // fails the test if a finish is refused
		b = getBatch(t, bs, b.ID)
		if !b.Done || b.CompleteJob == 0 || b.SuccessJob == 0 {
			t.Fatalf("batch after its member ended: %+v; want done with both callbacks", b)
		}
		if j := get(t, s, b.CompleteJob); j.State != store.Cancelled || !strings.Contains(j.LastError, "removed") {
			t.Errorf("on_complete after a removed job (cancel): %s %q; want cancelled, saying the dependency was removed", j.State, j.LastError)
		}
		if j := get(t, s, b.SuccessJob); j.State != store.Waiting {
			t.Errorf("on_success after a removed job (run anyway) and a pending one: %s; want waiting for the pending one", j.State)
		}
		runAll(t, s, "dep", completeAll)
		if j := get(t, s, b.SuccessJob); j.State != store.Pending {
			t.Errorf("on_success once its remaining dependency completed: %s; want pending", j.State)
		}
		_, _, err = bs.AddBatch(t.Context(), store.NewBatch{OnComplete: &store.AddParams{Type: "cb", Parent: kept}})
		wantErr(t, "a callback with a parent", err, store.ErrInvalid)
	})

	t.Run("NoSuccessWhenOneFails", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		b, res, err := bs.AddBatch(t.Context(), store.NewBatch{
			Jobs:       []store.AddParams{{Type: "ok"}, {Type: "bad", MaxAttempts: 1}, {Type: "gone"}, {Type: "stop"}, {Type: "late", MaxAttempts: 1}},
			OnComplete: &store.AddParams{Type: "after"},
			OnSuccess:  &store.AddParams{Type: "success"},
		})
		if err != nil {
			t.Fatal(err)
		}
		runAll(t, s, "ok", completeAll)
		runAll(t, s, "bad", func(store.Job) store.FinishParams { return store.FinishParams{As: store.Fail, Error: "boom"} })
		if errs, err := s.Remove(t.Context(), []int64{res[2].Job.ID}); err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
		if errs, err := s.Cancel(t.Context(), []int64{res[3].Job.ID}); err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
		if got := getBatch(t, bs, b.ID); got.Done || got.Counts.Remaining != 1 {
			t.Fatalf("one member left: %+v, want not done", got)
		}
		// The last: its lease runs out on its last attempt.
		accept(t, s, store.AcceptParams{Types: []string{"late"}, LeaseTimeout: time.Minute})
		if n, _ := expire(t, s, time.Now().Add(2*time.Minute)); n != 1 {
			t.Fatalf("ExpireLeases took back %d, want 1", n)
		}
		got := getBatch(t, bs, b.ID)
		want := store.BatchCounts{Total: 5, Completed: 1, Failed: 2, Cancelled: 1, Removed: 1}
		if !got.Done || got.Counts != want {
			t.Fatalf("batch %+v, want done with %+v", got, want)
		}
		if got.SuccessJob != 0 || countJobs(t, s, "success") != 0 {
			t.Errorf("on_success ran (job %d) though a member failed", got.SuccessJob)
		}
		if cb := callbackOf(t, s, got.CompleteJob); cb.Batch.Counts != want || cb.Batch.Callback != "complete" {
			t.Errorf("on_complete sees %+v, want counts %+v", cb.Batch, want)
		}
	})

	t.Run("ExtendOpen", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		b, _, err := bs.AddBatch(t.Context(), store.NewBatch{Open: true, Jobs: []store.AddParams{{Type: "m"}},
			OnComplete: &store.AddParams{Type: "after"}})
		if err != nil {
			t.Fatal(err)
		}
		runAll(t, s, "m", completeAll)
		if got := getBatch(t, bs, b.ID); got.Done || !got.Open || got.Counts != (store.BatchCounts{Total: 1, Completed: 1}) {
			t.Fatalf("an open batch whose members ended: %+v, want it open and not done", got)
		}
		// More members join, from outside and from a member's run.
		add(t, s, store.AddParams{Type: "m", Batch: b.ID}, store.AddParams{Type: "m", Batch: b.ID})
		if got := getBatch(t, bs, b.ID); got.Counts != (store.BatchCounts{Total: 3, Remaining: 2, Completed: 1}) {
			t.Fatalf("extended: %+v", got.Counts)
		}
		closed, err := bs.CloseBatch(t.Context(), b.ID)
		if err != nil || closed.Open || closed.Done {
			t.Fatalf("CloseBatch: %+v, %v; want closed, not done", closed, err)
		}
		run := accept(t, s, store.AcceptParams{Types: []string{"m"}, Limit: 1, LeaseTimeout: time.Minute}).Jobs[0]
		add(t, s, store.AddParams{Type: "m", Batch: b.ID}) // joins while a member runs
		if err := finish(t, s, store.FinishParams{Lease: lease(run), As: store.Complete}); err != nil {
			t.Fatal(err)
		}
		runAll(t, s, "m", completeAll)
		got := getBatch(t, bs, b.ID)
		if !got.Done || got.Counts != (store.BatchCounts{Total: 4, Completed: 4}) || got.CompleteJob == 0 {
			t.Fatalf("after the last member: %+v, want done with 4 completed", got)
		}
		if again, err := bs.CloseBatch(t.Context(), b.ID); err != nil || again.DoneAt != got.DoneAt {
			t.Errorf("closing a done batch: %+v, %v; want it unchanged", again, err)
		}
		_, err = s.Add(t.Context(), []store.AddParams{{Type: "m", Batch: b.ID}})
		wantErr(t, "joining a done batch", err, store.ErrFinished)
		_, err = s.Add(t.Context(), []store.AddParams{{Type: "m", Batch: b.ID + 1000}})
		wantErr(t, "joining a batch that does not exist", err, store.ErrNotFound)
		_, err = bs.GetBatch(t.Context(), b.ID+1000)
		wantErr(t, "GetBatch of none", err, store.ErrNotFound)
		_, err = bs.CloseBatch(t.Context(), b.ID+1000)
		wantErr(t, "CloseBatch of none", err, store.ErrNotFound)
		if n := countJobs(t, s, "after"); n != 1 {
			t.Errorf("%d callbacks, want 1", n)
		}
	})

	t.Run("CloseAfterEnded", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		b, _, err := bs.AddBatch(t.Context(), store.NewBatch{Open: true, Jobs: []store.AddParams{{Type: "m"}},
			OnSuccess: &store.AddParams{Type: "after"}})
		if err != nil {
			t.Fatal(err)
		}
		runAll(t, s, "m", completeAll)
		closed, err := bs.CloseBatch(t.Context(), b.ID)
		if err != nil || !closed.Done || closed.SuccessJob == 0 {
			t.Fatalf("closing a batch whose members ended: %+v, %v; want it done with its callback", closed, err)
		}
	})

	t.Run("Empty", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		b, res, err := bs.AddBatch(t.Context(), store.NewBatch{OnComplete: &store.AddParams{Type: "after"}, OnSuccess: &store.AddParams{Type: "after"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 0 || !b.Done || b.CompleteJob == 0 || b.SuccessJob == 0 {
			t.Fatalf("an empty batch: %+v, want it done at once with both callbacks", b)
		}
		if cb := callbackOf(t, s, b.SuccessJob); cb.Batch.ID != b.ID || cb.Batch.Counts != (store.BatchCounts{}) {
			t.Errorf("callback sees %+v", cb.Batch)
		}
	})

	t.Run("Atomic", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		for _, c := range []struct {
			name string
			b    store.NewBatch
		}{
			{"a bad member", store.NewBatch{Jobs: []store.AddParams{{Type: "m"}, {Type: ""}}}},
			{"a member naming a batch", store.NewBatch{Jobs: []store.AddParams{{Type: "m"}, {Type: "m", Batch: 1}}}},
			{"a callback without a type", store.NewBatch{Jobs: []store.AddParams{{Type: "m"}}, OnComplete: &store.AddParams{}}},
			{"a callback whose data is not an object", store.NewBatch{Jobs: []store.AddParams{{Type: "m"}},
				OnSuccess: &store.AddParams{Type: "x", Data: json.RawMessage(`[1]`)}}},
			{"a callback whose data has the batch's field", store.NewBatch{Jobs: []store.AddParams{{Type: "m"}},
				OnSuccess: &store.AddParams{Type: "x", Data: json.RawMessage(`{"batch":1}`)}}},
		} {
			_, _, err := bs.AddBatch(t.Context(), c.b)
			wantErr(t, c.name, err, store.ErrInvalid)
		}
		// A member that fails in the store (a child of a job that does
		// not exist) rolls back the batch and its other members.
		_, _, err := bs.AddBatch(t.Context(), store.NewBatch{Jobs: []store.AddParams{{Type: "m"}, {Type: "m", Parent: 99999}}})
		if err == nil {
			t.Fatal("a batch with a member whose parent does not exist was added")
		}
		if n := countJobs(t, s, "m"); n != 0 {
			t.Errorf("%d jobs after refused batches, want none", n)
		}
		if list, err := bs.ListBatches(t.Context(), store.BatchListParams{}); err != nil || len(list) != 0 {
			t.Errorf("ListBatches after refused batches: %v, %v; want none", list, err)
		}
	})

	t.Run("List", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		var ids []int64
		for range 3 {
			b, _, err := bs.AddBatch(t.Context(), store.NewBatch{Jobs: []store.AddParams{{Type: "m"}}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, b.ID)
		}
		list, err := bs.ListBatches(t.Context(), store.BatchListParams{Limit: 2})
		if err != nil || len(list) != 2 || list[0].ID != ids[2] || list[1].ID != ids[1] {
			t.Fatalf("first page: %+v, %v; want batches %d, %d", list, err, ids[2], ids[1])
		}
		list, err = bs.ListBatches(t.Context(), store.BatchListParams{Before: ids[1], Limit: 2})
		if err != nil || len(list) != 1 || list[0].ID != ids[0] || list[0].Counts.Total != 1 {
			t.Fatalf("second page: %+v, %v; want batch %d", list, err, ids[0])
		}
		_, err = bs.ListBatches(t.Context(), store.BatchListParams{Limit: store.MaxListLimit + 1})
		wantErr(t, "a limit over the maximum", err, store.ErrInvalid)
		if err != nil && errors.Is(err, store.ErrNotFound) {
			t.Error("wrong error kind")
		}
	})

	// A batch is in a caller's reach only when every member and callback
	// is: out of reach, it is missing to get, list, extend and close.
	t.Run("Reach", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		acme := store.WithReach(t.Context(), reachOf(t, []string{"acme-*"}, nil))
		globex := store.WithReach(t.Context(), reachOf(t, []string{"globex-*"}, nil))
		mails := store.WithReach(t.Context(), reachOf(t, nil, []string{"mail.*"}))
		// acme's batch: its members and callback in acme's groups.
		mine, _, err := bs.AddBatch(acme, store.NewBatch{Open: true,
			Jobs:       []store.AddParams{{Type: "mail.send", Group: "acme-1"}, {Type: "mail.send", Group: "acme-2"}},
			OnComplete: &store.AddParams{Type: "mail.report", Group: "acme-1"}})
		if err != nil {
			t.Fatal(err)
		}
		// A batch whose callback is acme's but a member globex's.
		mixed, _, err := bs.AddBatch(t.Context(), store.NewBatch{Open: true,
			Jobs:       []store.AddParams{{Type: "mail.send", Group: "globex-1"}},
			OnComplete: &store.AddParams{Type: "mail.report", Group: "acme-1"}})
		if err != nil {
			t.Fatal(err)
		}
		// globex's batch whose callback is of another type than mail's.
		theirs, _, err := bs.AddBatch(globex, store.NewBatch{Open: true,
			Jobs:      []store.AddParams{{Type: "mail.send", Group: "globex-1"}},
			OnSuccess: &store.AddParams{Type: "bill", Group: "globex-1"}})
		if err != nil {
			t.Fatal(err)
		}
		missing := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: %v; want the batch missing (ErrNotFound)", what, err)
			}
		}
		for _, c := range []struct {
			name string
			ctx  context.Context
			in   []int64 // the batches in reach, newest first
		}{
			{"acme", acme, []int64{mine.ID}},
			{"globex", globex, []int64{theirs.ID}},
			{"mail types", mails, []int64{mixed.ID, mine.ID}},
			{"unscoped", t.Context(), []int64{theirs.ID, mixed.ID, mine.ID}},
		} {
			for _, id := range []int64{mine.ID, mixed.ID, theirs.ID} {
				_, err := bs.GetBatch(c.ctx, id)
				if slices.Contains(c.in, id) {
					if err != nil {
						t.Errorf("%s: GetBatch(%d) in reach: %v", c.name, id, err)
					}
					continue
				}
				missing(fmt.Sprintf("%s: GetBatch(%d)", c.name, id), err)
				_, err = s.Add(c.ctx, []store.AddParams{{Type: "mail.send", Group: "acme-1", Batch: id}})
				missing(fmt.Sprintf("%s: an add to batch %d", c.name, id), err)
				_, err = bs.CloseBatch(c.ctx, id)
				missing(fmt.Sprintf("%s: CloseBatch(%d)", c.name, id), err)
			}
			// Pages of one: the cursor goes on over the batches out of reach.
			var got []int64
			before := int64(0)
			for {
				list, err := bs.ListBatches(c.ctx, store.BatchListParams{Before: before, Limit: 1})
				if err != nil {
					t.Fatalf("%s: ListBatches: %v", c.name, err)
				}
				if len(list) == 0 {
					break
				}
				got = append(got, list[0].ID)
				before = list[0].ID
			}
			if !slices.Equal(got, c.in) {
				t.Errorf("%s: ListBatches pages: %v; want %v", c.name, got, c.in)
			}
		}
		// Out of reach, nothing changed: the batches are as they were.
		for _, b := range []store.Batch{mine, mixed, theirs} {
			if got := getBatch(t, bs, b.ID); got.Counts.Total != b.Counts.Total || !got.Open {
				t.Errorf("batch %d after the refused calls: %+v; want %d members, open", b.ID, got.Counts, b.Counts.Total)
			}
		}
		// In reach: acme extends and closes its batch.
		if _, err := s.Add(acme, []store.AddParams{{Type: "mail.send", Group: "acme-3", Batch: mine.ID}}); err != nil {
			t.Fatalf("acme's add to its batch: %v", err)
		}
		b, err := bs.CloseBatch(acme, mine.ID)
		if err != nil || b.Open || b.Counts.Total != 3 {
			t.Fatalf("acme closes its batch: %+v, %v; want closed with 3 members", b, err)
		}
		// A member of another tenant joining (by an unscoped caller) takes
		// the batch out of acme's reach.
		if _, err := s.Add(t.Context(), []store.AddParams{{Type: "mail.send", Group: "globex-1", Batch: theirs.ID}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(t.Context(), []store.AddParams{{Type: "mail.send", Group: "initech", Batch: mixed.ID}}); err != nil {
			t.Fatal(err)
		}
		if _, err := bs.GetBatch(mails, mixed.ID); err != nil {
			t.Errorf("mail types: GetBatch(%d) after a mail job joined: %v", mixed.ID, err)
		}
		_, err = bs.GetBatch(globex, mixed.ID)
		missing("globex: a batch with an initech member", err)
	})

	// A scoped caller's batch with nothing in it is its tenant's until its
	// first job joins; a callback names only jobs in the adder's reach,
	// checked when the batch is added (it is added later, by whoever ends
	// the last member).
	t.Run("ReachOwner", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		acme := store.WithReach(t.Context(), reachOf(t, []string{"acme-*"}, nil))
		globex := store.WithReach(t.Context(), reachOf(t, []string{"globex-*"}, nil))
		mails := store.WithReach(t.Context(), reachOf(t, nil, []string{"mail.*"}))
		empty, _, err := bs.AddBatch(acme, store.NewBatch{Open: true})
		if err != nil {
			t.Fatal(err)
		}
		for name, ctx := range map[string]context.Context{"globex": globex, "mail types": mails} {
			if _, err := bs.GetBatch(ctx, empty.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: GetBatch of acme's empty batch: %v; want ErrNotFound", name, err)
			}
			if _, err := s.Add(ctx, []store.AddParams{{Type: "mail.send", Group: "globex-1", Batch: empty.ID}}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: a join of acme's empty batch: %v; want ErrNotFound", name, err)
			}
			if _, err := bs.CloseBatch(ctx, empty.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: CloseBatch of acme's empty batch: %v; want ErrNotFound", name, err)
			}
		}
		if list, err := bs.ListBatches(globex, store.BatchListParams{}); err != nil || len(list) != 0 {
			t.Errorf("globex lists %v, %v; want none", list, err)
		}
		if _, err := bs.GetBatch(t.Context(), empty.ID); err != nil {
			t.Errorf("unscoped: GetBatch of acme's empty batch: %v", err)
		}
		if _, err := s.Add(acme, []store.AddParams{{Type: "report", Group: "acme-1", Batch: empty.ID}}); err != nil {
			t.Fatalf("acme joins its empty batch: %v", err)
		}
		if _, err := bs.GetBatch(store.WithReach(t.Context(), reachOf(t, []string{"acme-1"}, nil)), empty.ID); err != nil {
			t.Errorf("acme-1's reach, once acme-1's job joined: %v", err)
		}
		// Callbacks: globex's job is a missing one to acme, as a
		// dependency; acme's own is taken.
		res, err := s.Add(t.Context(), []store.AddParams{{Type: "w", Group: "globex-1"}, {Type: "w", Group: "acme-1"}})
		if err != nil {
			t.Fatal(err)
		}
		theirs, mine := res[0].Job.ID, res[1].Job.ID
		for _, cb := range []store.AddParams{
			{Type: "cb", Group: "acme-1", After: []int64{theirs}, OnDepFailure: store.DepRun},
			{Type: "cb", Group: "acme-1", After: []int64{mine, theirs}},
		} {
			for _, open := range []bool{false, true} {
				if _, _, err := bs.AddBatch(acme, store.NewBatch{Open: open, OnComplete: &cb}); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("acme's batch with a callback naming globex's job (%+v, open %v): %v; want ErrNotFound", cb, open, err)
				}
				if _, _, err := bs.AddBatch(acme, store.NewBatch{Open: open, OnSuccess: &cb}); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("acme's batch with an on_success naming globex's job (%+v, open %v): %v; want ErrNotFound", cb, open, err)
				}
			}
		}
		if _, _, err := bs.AddBatch(acme, store.NewBatch{Open: true, OnComplete: &store.AddParams{Type: "cb", Group: "acme-1", After: []int64{mine}}}); err != nil {
			t.Errorf("acme's batch with a callback after its own job: %v", err)
		}
		if _, _, err := bs.AddBatch(t.Context(), store.NewBatch{Open: true, OnComplete: &store.AddParams{Type: "cb", Group: "acme-1", After: []int64{theirs}}}); err != nil {
			t.Errorf("an unscoped batch with a callback after globex's job: %v", err)
		}
		if js, err := s.Get(t.Context(), []int64{theirs}); err != nil || js[0].HasChildren {
			t.Errorf("globex's job has children of acme's callbacks")
		}
	})

	// A batch with more distinct groups than it keeps is in the reach of
	// unscoped callers only.
	t.Run("ReachWide", func(t *testing.T) {
		s := open(t)
		bs := batchesOf(t, s)
		jobs := make([]store.AddParams, store.MaxBatchReach+1)
		for i := range jobs {
			jobs[i] = store.AddParams{Type: "m", Group: fmt.Sprintf("acme-%d", i)}
		}
		b, _, err := bs.AddBatch(t.Context(), store.NewBatch{Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bs.GetBatch(store.WithReach(t.Context(), reachOf(t, []string{"acme-*"}, nil)), b.ID)
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a scoped GetBatch of a batch over %d groups: %v; want ErrNotFound", store.MaxBatchReach, err)
		}
		if got := getBatch(t, bs, b.ID); got.Counts.Total != int64(len(jobs)) {
			t.Errorf("unscoped: %+v", got.Counts)
		}
	})
}
