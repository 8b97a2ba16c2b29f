package storetest

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- per-job logs (store.Logs) ----

func logsOf(t *testing.T, s store.Store) store.Logs {
	t.Helper()
	l, ok := s.(store.Logs)
	if !ok {
		t.Skip("the store keeps no per-job logs")
	}
	return l
}

// appendLogs appends recs under l and returns the item's result.
func appendLogs(t *testing.T, lg store.Logs, l store.Lease, dropped int, recs ...store.LogRecord) store.AppendLogsResult {
	t.Helper()
	res, err := lg.AppendLogs(t.Context(), []store.AppendLogsParams{{Lease: l, Records: recs, Dropped: dropped}})
	if err != nil {
		t.Fatalf("AppendLogs(job %d): the call failed: %v", l.ID, err)
	}
	if len(res) != 1 {
		t.Fatalf("AppendLogs(1 item) returned %d results, want one per item", len(res))
	}
	return res[0]
}

func readLogs(t *testing.T, lg store.Logs, p store.LogsParams) store.LogsResult {
	t.Helper()
	res, err := lg.Logs(t.Context(), p)
	if err != nil {
		t.Fatalf("Logs(%+v): %v", p, err)
	}
	return res
}

func messages(recs []store.LogRecord) string {
	var b []string
	for _, r := range recs {
		b = append(b, r.Message)
	}
	return strings.Join(b, ",")
}

func rec(msg string) store.LogRecord { return store.LogRecord{Level: slog.LevelInfo, Message: msg} }

func testLogs(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("PerAttempt", func(t *testing.T) {
		s := open(t)
		lg := logsOf(t, s)
		j := start(t, s, store.AddParams{Type: "log", MaxAttempts: 3})
		at := time.Date(2026, 11, 27, 18, 0, 0, 123456000, time.UTC)
		before := time.Now()
		r := appendLogs(t, lg, lease(j), 0,
			store.LogRecord{Time: at, Level: slog.LevelWarn, Message: "first", Attrs: raw(`{ "n": 1, "g": {"k": "v"} }`)},
			store.LogRecord{Level: slog.LevelDebug - 2, Message: "second"})
		if r.Err != nil || r.Kept != 2 || r.Dropped != 0 {
			t.Fatalf("AppendLogs = %+v, want 2 kept", r)
		}
		if r := appendLogs(t, lg, lease(j), 0, rec("third")); r.Err != nil || r.Kept != 1 {
			t.Fatalf("second AppendLogs = %+v, want 1 kept", r)
		}
		res := readLogs(t, lg, store.LogsParams{ID: j.ID})
		if res.Attempt != 1 || len(res.Records) != 3 || res.Next != 0 {
			t.Fatalf("Logs = attempt %d, %d records, next %d; want attempt 1, 3 records, no next page", res.Attempt, len(res.Records), res.Next)
		}
		first, second := res.Records[0], res.Records[1]
		if first.Attempt != 1 || first.Seq != 1 || second.Seq != 2 || res.Records[2].Seq != 3 {
			t.Errorf("records numbered %d/%d, %d, %d; want attempt 1, seq 1, 2, 3", first.Attempt, first.Seq, second.Seq, res.Records[2].Seq)
		}
		if first.Message != "first" || first.Level != slog.LevelWarn || !first.Time.Equal(at) {
			t.Errorf("first record = %+v, want the message, level and time appended", first)
		}
		wantJSON(t, "first record's attrs", first.Attrs, `{"n":1,"g":{"k":"v"}}`)
		if second.Level != slog.LevelDebug-2 || second.Attrs != nil {
			t.Errorf("second record = %+v, want level DEBUG-2 and no attrs", second)
		}
		within(t, "a record without a time", second.Time, before.Add(-slack), time.Now().Add(slack))
		if len(res.Attempts) != 1 || res.Attempts[0] != (store.LogAttempt{Attempt: 1, Records: 3, Bytes: first.Size() + second.Size() + res.Records[2].Size()}) {
			t.Errorf("Attempts = %+v, want attempt 1 with 3 records and their size", res.Attempts)
		}

		// The next attempt logs apart; the latest is the default.
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Fail, Error: "again"})
		if _, errs, err := s.Update(t.Context(), []store.UpdateParams{{ID: j.ID, RunAt: time.Now().Add(-time.Second)}}); err != nil || errs[0] != nil {
			t.Fatal(errs, err)
		}
		run := accept(t, s, store.AcceptParams{Types: []string{"log"}}).Jobs
		if len(run) != 1 || run[0].Attempt != 2 {
			t.Fatalf("accept after the failure = %+v, want attempt 2", run)
		}
		appendLogs(t, lg, lease(run[0]), 0, rec("retry"))
		res = readLogs(t, lg, store.LogsParams{ID: j.ID})
		if res.Attempt != 2 || messages(res.Records) != "retry" || len(res.Attempts) != 2 {
			t.Errorf("Logs = attempt %d %q, attempts %+v; want attempt 2's record and both attempts", res.Attempt, messages(res.Records), res.Attempts)
		}
		res = readLogs(t, lg, store.LogsParams{ID: j.ID, Attempt: 1})
		if res.Attempt != 1 || messages(res.Records) != "first,second,third" {
			t.Errorf("Logs(attempt 1) = attempt %d %q, want the first attempt's records", res.Attempt, messages(res.Records))
		}
		if res := readLogs(t, lg, store.LogsParams{ID: j.ID, Attempt: 3}); len(res.Records) != 0 || res.Attempt != 3 {
			t.Errorf("Logs(attempt 3) = %+v, want no records", res)
		}

		// Pages.
		p1 := readLogs(t, lg, store.LogsParams{ID: j.ID, Attempt: 1, Limit: 2})
		if messages(p1.Records) != "first,second" || p1.Next != 2 {
			t.Fatalf("first page = %q next %d, want first,second and next 2", messages(p1.Records), p1.Next)
		}
		p2 := readLogs(t, lg, store.LogsParams{ID: j.ID, Attempt: 1, Limit: 2, After: p1.Next})
		if messages(p2.Records) != "third" || p2.Next != 0 {
			t.Errorf("second page = %q next %d, want third and no next", messages(p2.Records), p2.Next)
		}

		// A job that logged nothing, and one that does not exist.
		quiet := addOne(t, s, store.AddParams{Type: "quiet"})
		if res := readLogs(t, lg, store.LogsParams{ID: quiet.ID}); res.Attempt != 0 || len(res.Records) != 0 || len(res.Attempts) != 0 {
			t.Errorf("Logs of a job that logged nothing = %+v, want nothing", res)
		}
		_, err := lg.Logs(t.Context(), store.LogsParams{ID: quiet.ID + 1000})
		wantErr(t, "Logs of a missing job", err, store.ErrNotFound)
	})

	t.Run("Bound", func(t *testing.T) {
		s := open(t)
		lg := logsOf(t, s)
		j := start(t, s, store.AddParams{Type: "log"})
		// Records of 1 KiB each: 63 fit in 64 KiB with their overhead.
		body := strings.Repeat("x", 1024-store.LogRecordOverhead)
		var recs []store.LogRecord
		for i := range 100 {
			recs = append(recs, rec(fmt.Sprintf("%03d%s", i, body[3:])))
		}
		fit := store.MaxLogBytes / 1024
		r := appendLogs(t, lg, lease(j), 0, recs[:70]...)
		if r.Err != nil || r.Kept != fit || r.Dropped != 70-fit {
			t.Fatalf("AppendLogs(70 records of 1 KiB) = %+v, want %d kept and %d dropped", r, fit, 70-fit)
		}
		// Once the bound is reached every later record is dropped, even
		// one that would fit, so that the log kept has no gaps.
		if r := appendLogs(t, lg, lease(j), 5, rec("small")); r.Err != nil || r.Kept != 0 || r.Dropped != 1 {
			t.Errorf("AppendLogs(a small record) past the bound = %+v, want it dropped", r)
		}
		res := readLogs(t, lg, store.LogsParams{ID: j.ID})
		want := store.LogAttempt{Attempt: 1, Records: fit, Bytes: fit * 1024, Dropped: 70 - fit + 1 + 5}
		if len(res.Attempts) != 1 || res.Attempts[0] != want {
			t.Errorf("Attempts = %+v, want %+v (the worker's own drops counted too)", res.Attempts, want)
		}
		if len(res.Records) != fit || !strings.HasPrefix(res.Records[fit-1].Message, fmt.Sprintf("%03d", fit-1)) {
			t.Errorf("Logs kept %d records, want the first %d", len(res.Records), fit)
		}
		// A record larger than the bound is dropped whole.
		k := start(t, s, store.AddParams{Type: "log2"})
		if r := appendLogs(t, lg, lease(k), 0, rec(strings.Repeat("y", store.MaxLogBytes))); r.Kept != 0 || r.Dropped != 1 {
			t.Errorf("AppendLogs(one record over the bound) = %+v, want it dropped", r)
		}
	})

	t.Run("Fencing", func(t *testing.T) {
		s := open(t)
		lg := logsOf(t, s)
		j := start(t, s, store.AddParams{Type: "log"})
		stale := lease(j)
		stale.Token = strings.Repeat("0", len(j.Token))
		wantErr(t, "AppendLogs with another token", appendLogs(t, lg, stale, 0, rec("stale")).Err, store.ErrWorkerConflict)
		pending := addOne(t, s, store.AddParams{Type: "other"})
		wantErr(t, "AppendLogs to a pending job", appendLogs(t, lg, store.Lease{ID: pending.ID, Token: j.Token}, 0, rec("x")).Err, store.ErrWorkerConflict)
		wantErr(t, "AppendLogs to a missing job", appendLogs(t, lg, store.Lease{ID: pending.ID + 100, Token: j.Token}, 0, rec("x")).Err, store.ErrCanceled)
		// A batch: the good item is kept, the stale one is not.
		res, err := lg.AppendLogs(t.Context(), []store.AppendLogsParams{{Lease: stale, Records: []store.LogRecord{rec("bad")}}, {Lease: lease(j), Records: []store.LogRecord{rec("good")}}})
		if err != nil || len(res) != 2 || !errors.Is(res[0].Err, store.ErrWorkerConflict) || res[1].Err != nil || res[1].Kept != 1 {
			t.Fatalf("AppendLogs(stale, good) = %+v, %v; want the stale item refused and the good one kept", res, err)
		}
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
		// The finished run's token appends no more.
		wantErr(t, "AppendLogs after the finish", appendLogs(t, lg, lease(j), 0, rec("late")).Err, store.ErrWorkerConflict)
		if got := messages(readLogs(t, lg, store.LogsParams{ID: j.ID}).Records); got != "good" {
			t.Errorf("Logs = %q, want only the record of the current lease", got)
		}
		c := start(t, s, store.AddParams{Type: "cancelled"})
		mustCancel(t, s, c.ID)
		wantErr(t, "AppendLogs to a cancelled job", appendLogs(t, lg, lease(c), 0, rec("x")).Err, store.ErrCanceled)
	})

	t.Run("BadInput", func(t *testing.T) {
		s := open(t)
		lg := logsOf(t, s)
		j := start(t, s, store.AddParams{Type: "log"})
		for name, r := range map[string]store.LogRecord{
			"attrs not an object": {Message: "m", Attrs: raw(`[1]`)},
			"attrs not JSON":      {Message: "m", Attrs: raw(`{`)},
			"NUL in the message":  {Message: "a\x00b"},
			"not UTF-8":           {Message: "\xff"},
		} {
			_, err := lg.AppendLogs(t.Context(), []store.AppendLogsParams{{Lease: lease(j), Records: []store.LogRecord{rec("ok"), r}}})
			wantErr(t, "AppendLogs with "+name, err, store.ErrInvalid)
		}
		_, err := lg.AppendLogs(t.Context(), []store.AppendLogsParams{{Lease: store.Lease{ID: j.ID}, Records: []store.LogRecord{rec("x")}}})
		wantErr(t, "AppendLogs without a token", err, store.ErrInvalid)
		_, err = lg.AppendLogs(t.Context(), []store.AppendLogsParams{{Lease: lease(j), Dropped: -1}})
		wantErr(t, "AppendLogs with a negative drop count", err, store.ErrInvalid)
		for _, p := range []store.LogsParams{{ID: 0}, {ID: j.ID, Attempt: -1}, {ID: j.ID, Limit: store.MaxLogPage + 1}, {ID: j.ID, After: -1}} {
			_, err := lg.Logs(t.Context(), p)
			wantErr(t, fmt.Sprintf("Logs(%+v)", p), err, store.ErrInvalid)
		}
		if res := readLogs(t, lg, store.LogsParams{ID: j.ID}); len(res.Records) != 0 {
			t.Errorf("Logs after refused appends = %q, want nothing kept", messages(res.Records))
		}
	})

	t.Run("RunAgain", func(t *testing.T) {
		// A run that reuses its attempt number (a snooze gives the attempt
		// back) starts the attempt's log afresh: an attempt's log is its
		// latest run's.
		s := open(t)
		lg := logsOf(t, s)
		j := start(t, s, store.AddParams{Type: "log"})
		appendLogs(t, lg, lease(j), 0, rec("before"))
		mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Snooze, RunAt: time.Now().Add(-time.Second)})
		run := accept(t, s, store.AcceptParams{Types: []string{"log"}}).Jobs
		if len(run) != 1 || run[0].Attempt != 1 {
			t.Fatalf("accept after the snooze = %+v, want attempt 1 again", run)
		}
		if got := messages(readLogs(t, lg, store.LogsParams{ID: j.ID}).Records); got != "before" {
			t.Errorf("Logs before the new run logs = %q, want the earlier run's", got)
		}
		appendLogs(t, lg, lease(run[0]), 0, rec("after"))
		res := readLogs(t, lg, store.LogsParams{ID: j.ID})
		if messages(res.Records) != "after" || res.Records[0].Seq != 1 || len(res.Attempts) != 1 || res.Attempts[0].Records != 1 {
			t.Errorf("Logs = %q (%+v), want only the new run's record, numbered from 1", messages(res.Records), res.Attempts)
		}
	})

	t.Run("Reach", func(t *testing.T) {
		s := open(t)
		lg := logsOf(t, s)
		mine := start(t, s, store.AddParams{Type: "log", Group: "acme-1"})
		appendLogs(t, lg, lease(mine), 0, rec("acme"))
		theirs := start(t, s, store.AddParams{Type: "log", Group: "globex"})
		appendLogs(t, lg, lease(theirs), 0, rec("globex"))
		acme := store.WithReach(t.Context(), reachOf(t, []string{"acme-*"}, nil))
		res, err := lg.Logs(acme, store.LogsParams{ID: mine.ID})
		if err != nil || messages(res.Records) != "acme" {
			t.Errorf("Logs of a job in reach = %q, %v; want its record", messages(res.Records), err)
		}
		res, err = lg.Logs(acme, store.LogsParams{ID: theirs.ID})
		wantErr(t, "Logs of another tenant's job", err, store.ErrNotFound)
		if len(res.Records) != 0 {
			t.Errorf("Logs of another tenant's job gave %q", messages(res.Records))
		}
	})
}

// LogsRemoved checks that a job's logs go with the job on every path that
// deletes jobs (Remove, a parent's drop of its ended children, retention),
// counting the rows of a store's log tables with rows, which the store's
// own test supplies (the contract has no way to see logs of a job that is
// gone).
func LogsRemoved(t *testing.T, s store.Store, rows func() int) {
	lg := logsOf(t, s)
	logged := func(p store.AddParams) store.Job {
		t.Helper()
		j := start(t, s, p)
		appendLogs(t, lg, lease(j), 0, rec("a"), rec("b"))
		return j
	}
	base := rows()
	// Remove.
	j := logged(store.AddParams{Type: "removed"})
	if got := rows() - base; got == 0 {
		t.Fatalf("the log tables hold no more rows after an append")
	}
	if errs, err := s.Remove(t.Context(), []int64{j.ID}); err != nil || errs[0] != nil {
		t.Fatalf("Remove: %v %v", errs, err)
	}
	if got := rows(); got != base {
		t.Errorf("after Remove the log tables hold %d rows, want %d", got, base)
	}
	// Remove of an ended job (PostgreSQL keeps it in another table).
	j = logged(store.AddParams{Type: "removed"})
	mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
	if errs, err := s.Remove(t.Context(), []int64{j.ID}); err != nil || errs[0] != nil {
		t.Fatalf("Remove: %v %v", errs, err)
	}
	if got := rows(); got != base {
		t.Errorf("after Remove of an ended job the log tables hold %d rows, want %d", got, base)
	}
	// A parent's completed run drops its ended children.
	// A child waits for its parent's run to end; the parent waits for
	// the child, and its next completed run deletes it.
	parent := start(t, s, store.AddParams{Type: "parent"})
	addOne(t, s, store.AddParams{Type: "kid", Parent: parent.ID})
	mustFinish(t, s, store.FinishParams{Lease: lease(parent), As: store.Complete})
	kid := accept(t, s, store.AcceptParams{Types: []string{"kid"}}).Jobs
	if len(kid) != 1 {
		t.Fatalf("accept(kid) = %v, want the child", kid)
	}
	appendLogs(t, lg, lease(kid[0]), 0, rec("kid"))
	mustFinish(t, s, store.FinishParams{Lease: lease(kid[0]), As: store.Complete})
	again := accept(t, s, store.AcceptParams{Types: []string{"parent"}}).Jobs
	if len(again) != 1 {
		t.Fatalf("accept(parent) = %v, want the parent, woken by its child's end", again)
	}
	mustFinish(t, s, store.FinishParams{Lease: lease(again[0]), As: store.Complete})
	gone(t, s, kid[0].ID)
	if got := rows(); got != base {
		t.Errorf("after the parent dropped its ended children the log tables hold %d rows, want %d", got, base)
	}
	// Retention.
	r, ok := s.(store.Retirer)
	if !ok {
		return
	}
	j = logged(store.AddParams{Type: "retired"})
	mustFinish(t, s, store.FinishParams{Lease: lease(j), As: store.Complete})
	if _, err := r.Retire(t.Context(), time.Now().Add(store.DefaultRetention+time.Hour), 100); err != nil {
		t.Fatal(err)
	}
	gone(t, s, j.ID)
	if got := rows(); got != base {
		t.Errorf("after retention the log tables hold %d rows, want %d", got, base)
	}
}
