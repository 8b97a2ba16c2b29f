package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// A batch of finishes takes a set-based path for the common case (complete
// a job running under the token) and the one-job-at-a-time path for the
// rest. The two stores here get the same jobs and the same finishes: one as
// a single Finish batch, the other one finish at a time through FinishTx,
// which never takes the set-based path. Outcomes, jobs and group counts
// must agree.
func TestFinishBatchMatchesOneAtATime(t *testing.T) {
	ctx := context.Background()
	type item struct {
		job    int
		as     store.Ending
		wrong  bool // a token that is not the job's
		result string
	}
	items := []item{
		{job: 0, as: store.Complete},
		{job: 1, as: store.Complete, result: `{"a":1}`},
		{job: 2, as: store.Complete, wrong: true},
		{job: 3, as: store.Complete}, // resubmitted while running: runs again
		{job: 4, as: store.Complete}, // cancelled
		{job: 5, as: store.Complete}, // removed
		{job: 6, as: store.Complete, result: `[1,2]`},
		{job: 6, as: store.Complete, result: `[1,2]`}, // the same again
		{job: 7, as: store.Fail},
		{job: 8, as: store.Complete, result: `"é\"\\"`},
		{job: 9, as: store.Complete}, // completed before the batch
		{job: 10, as: store.Snooze},
		{job: 11, as: store.Release},
		{job: 12, as: store.Cancel},
	}
	setup := func(s *sqlite.Store) []store.Job {
		var ps []store.AddParams
		for i := range 13 {
			ps = append(ps, store.AddParams{Type: "batch.test", Group: fmt.Sprintf("g%d", i%3), Data: raw(`{}`)})
		}
		if _, err := s.Add(ctx, ps); err != nil {
			t.Fatal(err)
		}
		res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"batch.test"}, Limit: 13})
		if err != nil || len(res.Jobs) != 13 {
			t.Fatalf("accept: %d jobs, %v", len(res.Jobs), err)
		}
		jobs := res.Jobs
		byID := func(i int) store.Job {
			for _, j := range jobs {
				if j.ID == int64(i+1) {
					return j
				}
			}
			t.Fatalf("job %d not accepted", i+1)
			return store.Job{}
		}
		sorted := make([]store.Job, 13)
		for i := range sorted {
			sorted[i] = byID(i)
		}
		if _, _, err := s.Resubmit(ctx, []store.ResubmitParams{{ID: sorted[3].ID}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Cancel(ctx, []int64{sorted[4].ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Remove(ctx, []int64{sorted[5].ID}); err != nil {
			t.Fatal(err)
		}
		if errs, err := s.Finish(ctx, []store.FinishParams{{Lease: sorted[9].Lease(), As: store.Complete}}); err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
		return sorted
	}
	params := func(jobs []store.Job) []store.FinishParams {
		ps := make([]store.FinishParams, len(items))
		for i, it := range items {
			ps[i] = store.FinishParams{Lease: jobs[it.job].Lease(), As: it.as, Error: "boom"}
			if it.wrong {
				ps[i].Token = "not-" + ps[i].Token
			}
			if it.result != "" {
				ps[i].Result = raw(it.result)
			}
		}
		return ps
	}
	batched, single := open(t), open(t)
	bJobs, sJobs := setup(batched), setup(single)

	bErrs, err := batched.Finish(ctx, params(bJobs))
	if err != nil {
		t.Fatal(err)
	}
	db, err := single.DB()
	if err != nil {
		t.Fatal(err)
	}
	var sErrs []error
	for _, p := range params(sJobs) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		errs, err := single.FinishTx(ctx, tx, []store.FinishParams{p})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		sErrs = append(sErrs, errs[0])
	}
	class := func(err error) string {
		for _, e := range []error{store.ErrWorkerConflict, store.ErrCanceled, store.ErrFinished, store.ErrNotFound} {
			if errors.Is(err, e) {
				return e.Error()
			}
		}
		if err != nil {
			return "other: " + err.Error()
		}
		return "ok"
	}
	for i := range items {
		if b, s := class(bErrs[i]), class(sErrs[i]); b != s {
			t.Errorf("item %d (%+v): batch gives %s, one at a time %s", i, items[i], b, s)
		}
	}
	bGot, err := batched.Get(ctx, ids(bJobs))
	if err != nil {
		t.Fatal(err)
	}
	sGot, err := single.Get(ctx, ids(sJobs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range bGot {
		b, s := bGot[i], sGot[i]
		if b.State != s.State || string(b.Result) != string(s.Result) || b.LastError != s.LastError ||
			b.Attempt != s.Attempt || b.Resubmit != s.Resubmit || len(b.Errors) != len(s.Errors) ||
			b.FinishedAt.IsZero() != s.FinishedAt.IsZero() || b.LeaseUntil.IsZero() != s.LeaseUntil.IsZero() {
			t.Errorf("job %d: batch gives %+v\none at a time gives %+v", i, b, s)
		}
	}
	if got := string(bGot[8].Result); got != `"é\"\\"` {
		t.Errorf("job 8 result = %s", got)
	}
	checkGroupCounts(t, batched)
	checkGroupCounts(t, single)
}

func ids(jobs []store.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// checkGroupCounts compares the per-group counts accept relies on with
// the jobs themselves.
func checkGroupCounts(t *testing.T, s *sqlite.Store) {
	t.Helper()
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT g.type, g.grp, g.pending, g.running,
		(SELECT count(*) FROM rota_jobs j WHERE j.type = g.type AND j.grp = g.grp AND j.state = 0),
		(SELECT count(*) FROM rota_jobs j WHERE j.type = g.type AND j.grp = g.grp AND j.state = 1)
		FROM rota_groups g`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, grp string
		var p, r, wantP, wantR int
		if err := rows.Scan(&typ, &grp, &p, &r, &wantP, &wantR); err != nil {
			t.Fatal(err)
		}
		if p != wantP || r != wantR {
			t.Errorf("group %s/%s counts pending %d running %d, jobs say %d and %d", typ, grp, p, r, wantP, wantR)
		}
	}
	var missing int
	if err := db.QueryRow(`SELECT count(*) FROM rota_jobs j WHERE state IN (0, 1)
		AND NOT EXISTS (SELECT 1 FROM rota_groups g WHERE g.type = j.type AND g.grp = j.grp)`).Scan(&missing); err != nil {
		t.Fatal(err)
	}
	if missing > 0 {
		t.Errorf("%d pending or running jobs have no group row", missing)
	}
}

// Group counts stay right through a drain in batches, with retries and
// concurrent adds.
func TestGroupCountsAfterBatches(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	var ps []store.AddParams
	for i := range 600 {
		ps = append(ps, store.AddParams{Type: fmt.Sprintf("count.t%d", i%2), Group: fmt.Sprintf("g%d", i%7), Data: raw(`{}`)})
	}
	if _, err := s.Add(ctx, ps); err != nil {
		t.Fatal(err)
	}
	for round := 0; ; round++ {
		res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"count.*"}, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) == 0 {
			break
		}
		fs := make([]store.FinishParams, len(res.Jobs))
		for i, j := range res.Jobs {
			fs[i] = store.FinishParams{Lease: j.Lease(), As: store.Complete}
			if (i+round)%5 == 0 {
				fs[i].As, fs[i].Error = store.Fail, "again"
			}
		}
		if _, err := s.Finish(ctx, fs); err != nil {
			t.Fatal(err)
		}
		if round%4 == 0 {
			checkGroupCounts(t, s)
		}
	}
	checkGroupCounts(t, s)
}

// Accept fills in part of each job from what the claim set rather than
// reading it back; the jobs it returns must equal the stored ones.
func TestAcceptedJobsMatchStored(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	if _, err := s.Add(ctx, []store.AddParams{
		{Type: "match.a", Key: "k1", Group: "g", Priority: 3, Data: raw(`{"x":1}`), MaxAttempts: 3},
		{Type: "match.a", Data: raw(`{}`)},
	}); err != nil {
		t.Fatal(err)
	}
	check := func(worker string) []store.Job {
		res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"match.*"}, Limit: 10, Worker: worker})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, ids(res.Jobs))
		if err != nil {
			t.Fatal(err)
		}
		for i := range res.Jobs {
			a, g := fmt.Sprintf("%+v", res.Jobs[i]), fmt.Sprintf("%+v", got[i])
			if a != g {
				t.Errorf("accepted %s\nstored   %s", a, g)
			}
		}
		return res.Jobs
	}
	jobs := check("w1")
	// A failed attempt brings errors and a last error to the next claim.
	var fs []store.FinishParams
	for _, j := range jobs {
		fs = append(fs, store.FinishParams{Lease: j.Lease(), As: store.Snooze})
	}
	fs[0].As, fs[0].Error = store.Fail, "first"
	if _, err := s.Finish(ctx, fs); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Resubmit(ctx, []store.ResubmitParams{{ID: jobs[0].ID, RunAt: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	if n := len(check("")); n != 2 {
		t.Fatalf("second accept: %d jobs", n)
	}
}

// Adds count their jobs per group themselves (migration 0013): the counts
// stay right through adds of many groups in one call, re-adds by key,
// unique adds that find their job, children paused under a running parent,
// adds in a caller's transaction, and an add that fails part-way and
// leaves nothing behind.
func TestGroupCountsAfterAdds(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	var ps []store.AddParams
	for i := range 300 {
		ps = append(ps, store.AddParams{Type: fmt.Sprintf("adds.t%d", i%3), Group: fmt.Sprintf("g%d", i%11), Data: raw(`{}`)})
	}
	ps = append(ps,
		store.AddParams{Type: "adds.t0", Key: "k", Group: "g1", Data: raw(`{}`)},
		store.AddParams{Type: "adds.t0", Key: "k", Group: "g2", Data: raw(`{"again":true}`)},
		store.AddParams{Type: "adds.t1", Unique: true, Data: raw(`{"u":1}`)},
		store.AddParams{Type: "adds.t1", Unique: true, Data: raw(`{"u":1}`)},
	)
	if _, err := s.Add(ctx, ps); err != nil {
		t.Fatal(err)
	}
	checkGroupCounts(t, s)

	// A parent running: its children are added paused, and not counted as
	// pending.
	res, err := s.Add(ctx, []store.AddParams{{Type: "adds.parent", Data: raw(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if acc, err := s.Accept(ctx, store.AcceptParams{Types: []string{"adds.parent"}, Limit: 1}); err != nil || len(acc.Jobs) != 1 {
		t.Fatalf("accept the parent: %v, %d jobs", err, len(acc.Jobs))
	}
	if _, err := s.Add(ctx, []store.AddParams{{Type: "adds.child", Parent: res[0].Job.ID, Data: raw(`{}`)},
		{Type: "adds.child", Group: "g1", Parent: res[0].Job.ID, Data: raw(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	checkGroupCounts(t, s)

	// In a caller's transaction, committed and rolled back.
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{true, false} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddTx(ctx, tx, []store.AddParams{{Type: "adds.tx", Group: "g3", Data: raw(`{}`)}, {Type: "adds.t2", Group: "g3", Data: raw(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		checkGroupCounts(t, s)
	}

	// An add whose last job cannot be added (a child of a job that does
	// not exist) leaves nothing behind, counts included.
	_, err = s.Add(ctx, []store.AddParams{{Type: "adds.t0", Group: "g5", Data: raw(`{}`)}, {Type: "adds.t0", Group: "new", Data: raw(`{}`)},
		{Type: "adds.child", Parent: 1 << 40, Data: raw(`{}`)}})
	if err == nil {
		t.Fatal("adding a child of a job that does not exist succeeded")
	}
	checkGroupCounts(t, s)
}
