package storetest

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- commands that change several things in one call ----

// testFinishCarries: a finish carries data, a priority, the end of a
// schedule, a run time relative to the store's clock, and the drop of
// ended children, all applied with the finish (Bedrock's FinishJob,
// RetryJob, FailJob); a fenced-out finish applies none of them.
func testFinishCarries(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	prio := 9

	// Complete with data, ending the schedule: the job ends.
	j := start(t, s, store.AddParams{Type: "rep", Schedule: "SCHEDULED, +1 HOUR"})
	mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete, Data: raw(`{ "n": 2 }`), EndSchedule: true})
	got := get(t, s, j.ID)
	wantState(t, got, store.Completed)
	wantJSON(t, "data", got.Data, `{"n":2}`)
	if got.Schedule != "" {
		t.Errorf("schedule %q after a completion that ended it", got.Schedule)
	}

	// Snooze with data, priority, a delay from the store's time.
	j = start(t, s, store.AddParams{Type: "snooze", Data: raw(`{"n":1}`)})
	before := time.Now()
	mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Snooze, Data: raw(`{"n":2}`), Priority: &prio, RunIn: time.Hour})
	got = get(t, s, j.ID)
	wantState(t, got, store.Pending)
	wantJSON(t, "data", got.Data, `{"n":2}`)
	if got.Priority != prio {
		t.Errorf("priority %d, want %d", got.Priority, prio)
	}
	within(t, "run at", got.RunAt, before.Add(time.Hour-slack), time.Now().Add(time.Hour+slack))
	if got.RunAt.Truncate(time.Second) != got.RunAt {
		t.Errorf("run at %v: a delay counts from the store's whole second", got.RunAt)
	}

	// Snooze to the next slot of a recurring job.
	j = start(t, s, store.AddParams{Type: "slot", Schedule: "STARTED, +1 HOUR"})
	mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Snooze, AtNextSlot: true, RunIn: time.Minute})
	got = get(t, s, j.ID)
	sameTime(t, "run at the next slot", got.RunAt, j.StartedAt.Truncate(time.Second).Add(time.Hour))

	// Fail with data; a stale lease changes nothing.
	j = start(t, s, store.AddParams{Type: "fail", Data: raw(`{"n":1}`)})
	stale := store.FinishParams{Lease: store.Lease{ID: j.ID, Token: "stale"}, As: store.Fail, Permanent: true, Data: raw(`{"n":3}`)}
	wantErr(t, "a stale finish", finish(t, s, stale), store.ErrWorkerConflict)
	unchanged(t, "after a stale finish with data", j, get(t, s, j.ID))
	mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Permanent: true, Data: raw(`{"n":2}`)})
	got = get(t, s, j.ID)
	wantState(t, got, store.Failed)
	wantJSON(t, "data", got.Data, `{"n":2}`)

	// A snooze that drops the ended children: the completed and cancelled
	// ones go, the failed one stays for the next run.
	parent := start(t, s, store.AddParams{Type: "parent"})
	var kids []store.Job
	for _, typ := range []string{"done", "dropped", "broken"} {
		kids = append(kids, addOne(t, s, store.AddParams{Type: typ, Parent: parent.ID}))
	}
	mustFinish(t, s, store.FinishParams{Lease: lease(parent), As: store.Complete}) // waits for its children
	done := accept(t, s, store.AcceptParams{Types: []string{"done"}}).Jobs[0]
	mustFinish(t, s, store.FinishParams{Lease: lease(done), As: store.Complete})
	mustCancel(t, s, kids[1].ID)
	broken := accept(t, s, store.AcceptParams{Types: []string{"broken"}}).Jobs[0]
	mustFinish(t, s, store.FinishParams{Lease: lease(broken), As: store.Fail, Permanent: true})
	parent = accept(t, s, store.AcceptParams{Types: []string{"parent"}}).Jobs[0]
	mustFinish(t, s, store.FinishParams{Lease: lease(parent), As: store.Snooze, DropEndedChildren: true})
	gone(t, s, kids[0].ID)
	gone(t, s, kids[1].ID)
	wantState(t, get(t, s, kids[2].ID), store.Failed)
	wantState(t, get(t, s, parent.ID), store.Pending)

	// What does not go with the ending is refused, whole.
	for _, p := range []store.FinishParams{
		{Lease: lease(j), As: store.Complete, Priority: &prio},
		{Lease: lease(j), As: store.Fail, EndSchedule: true},
		{Lease: lease(j), As: store.Complete, RunIn: time.Second},
		{Lease: lease(j), As: store.Snooze, RunIn: -time.Second},
		{Lease: lease(j), As: store.Snooze, RunIn: time.Second, RunAt: time.Now()},
		{Lease: lease(j), As: store.Complete, DropEndedChildren: true},
		{Lease: lease(j), As: store.Complete, Data: raw(`{`)},
	} {
		if _, err := s.Finish(t.Context(), []store.FinishParams{p}); err == nil {
			t.Errorf("Finish(%+v) passed", p)
		} else {
			wantErr(t, "a finish with what does not go with it", err, store.ErrInvalid)
		}
	}
}

// testOneCallParams: an update's run time relative to the store's clock,
// a resubmit that hands a run back (Bedrock's RequeueJobs), and an add
// that gives Bedrock ids in its own transaction.
func testOneCallParams(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	j := addOne(t, s, store.AddParams{Type: "later"})
	before := time.Now()
	jobs, errs, err := s.Update(t.Context(), []store.UpdateParams{{ID: j.ID, RunIn: time.Hour}})
	if err != nil || errs[0] != nil {
		t.Fatalf("Update: %v %v", err, errs)
	}
	within(t, "run at", jobs[0].RunAt, before.Add(time.Hour-slack), time.Now().Add(time.Hour+slack))
	// Run now: a pending job due later is due at the store's time.
	before = time.Now()
	if res := resubmit(t, s, store.ResubmitParams{ID: j.ID, RunNow: true}); res.Job.ID != j.ID {
		t.Fatalf("resubmit returned job %d", res.Job.ID)
	}
	within(t, "run now", get(t, s, j.ID).RunAt, before.Add(-slack), time.Now().Add(slack))

	// A running job is handed back (its attempt kept when asked), a
	// pending one moved, a paused one left as it is.
	a := start(t, s, store.AddParams{Type: "a"})
	b := start(t, s, store.AddParams{Type: "b"})
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	res, errs, err := s.Resubmit(t.Context(), []store.ResubmitParams{
		{ID: a.ID, RunAt: at, HandBack: true, Rename: "a2"},
		{ID: b.ID, RunAt: at, HandBack: true, KeepAttempt: true},
		{ID: j.ID, RunAt: at, HandBack: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("item %d: %v", i, e)
		}
	}
	ga, gb := get(t, s, a.ID), get(t, s, b.ID)
	wantState(t, ga, store.Pending)
	wantAttempt(t, ga, 0)
	wantAttempt(t, gb, 1)
	sameTime(t, "handed back to run at", ga.RunAt, at)
	sameTime(t, "pending moved to", get(t, s, j.ID).RunAt, at)
	if ga.Type != "a2" || res[0].Job.ID != a.ID || res[0].Job.Type != "a2" {
		t.Errorf("renamed to %q; result %d %q", ga.Type, res[0].Job.ID, res[0].Job.Type)
	}
	wantErr(t, "the handed-back lease", finish(t, s, store.FinishParams{Lease: lease(a), As: store.Complete}), store.ErrWorkerConflict)
	if _, _, err := s.Resubmit(t.Context(), []store.ResubmitParams{{ID: a.ID, KeepAttempt: true}}); err == nil {
		t.Error("KeepAttempt without HandBack passed")
	}

	if _, ok := s.(store.BedrockIDs); !ok {
		return
	}
	out := add(t, s, store.AddParams{Type: "bid", BedrockID: true}, store.AddParams{Type: "plain"},
		store.AddParams{Type: "bid", Unique: true, BedrockID: true})
	if out[0].Job.BedrockID <= 0 || out[1].Job.BedrockID != 0 {
		t.Fatalf("Bedrock ids %d %d, want one for the first job only", out[0].Job.BedrockID, out[1].Job.BedrockID)
	}
	if out[2].Job.ID != out[0].Job.ID || out[2].Job.BedrockID != out[0].Job.BedrockID {
		t.Errorf("the unique add found job %d with Bedrock id %d, want %d with %d", out[2].Job.ID, out[2].Job.BedrockID, out[0].Job.ID, out[0].Job.BedrockID)
	}
	if got := get(t, s, out[0].Job.ID); got.BedrockID != out[0].Job.BedrockID {
		t.Errorf("the job shows Bedrock id %d, the add gave %d", got.BedrockID, out[0].Job.BedrockID)
	}
}
