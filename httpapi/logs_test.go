package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
)

// TestJobLogs: a worker appends to its running job's log with its lease
// token, bounded by the server whatever the worker says; a stale token
// appends nothing; the log is read by attempt and in pages; bad input is
// refused, naming what is wrong.
func TestJobLogs(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	ctx := t.Context()
	_, err := s.c.Add(ctx, rota.AddParams{Type: "log"})
	if err != nil {
		t.Fatal(err)
	}
	acc := want[wire.AcceptResponse](t, s, 200, "POST", "/v1/accept", wire.AcceptRequest{Types: []string{"log"}, Worker: "w"})
	if len(acc.Jobs) != 1 {
		t.Fatalf("accept: %+v", acc)
	}
	j := acc.Jobs[0]
	path := fmt.Sprintf("/v1/jobs/%d/logs", j.ID)
	got := want[wire.AppendLogsResponse](t, s, 200, "POST", path, map[string]any{"token": j.Token, "records": []any{
		map[string]any{"level": "info", "message": "one", "attrs": map[string]any{"k": "v"}},
		map[string]any{"level": "WARN+1", "message": "two", "time": "2026-11-27T18:00:00Z"},
	}})
	if got.Kept != 2 || got.Dropped != 0 {
		t.Errorf("append = %+v, want 2 kept", got)
	}
	// A stale token, and bad records, append nothing.
	if r := s.do(t, "POST", path, map[string]any{"token": "stale", "records": []any{map[string]any{"level": "INFO", "message": "x"}}}); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "worker_conflict") {
		t.Errorf("append with a stale token: %s, want 409 worker_conflict", r)
	}
	for body, words := range map[string]string{
		`{"token":"` + j.Token + `","records":[{"level":"LOUD","message":"x"}]}`:             "level",
		`{"token":"` + j.Token + `","records":[{"level":"INFO","message":"x","attrs":[1]}]}`: "attrs",
		`{"token":"` + j.Token + `","records":[{"level":"INFO","message":"a\u0000b"}]}`:      "NUL",
		`{"token":"` + j.Token + `","records":[],"dropped":-1}`:                              "dropped",
		`{"records":[]}`: "token",
	} {
		r := s.do(t, "POST", path, body)
		if r.Status != 400 || !strings.Contains(string(r.Body), words) {
			t.Errorf("append %s: %s, want 400 naming %s", body, r, words)
		}
	}
	page := want[wire.LogsResponse](t, s, 200, "GET", path, nil)
	if page.Attempt != 1 || len(page.Records) != 2 || page.Records[0].Level != "INFO" || string(page.Records[0].Attrs) != `{"k":"v"}` ||
		page.Records[1].Level != "WARN+1" || page.Records[1].Time.Format("15:04") != "18:00" || page.Records[1].Seq != 2 {
		t.Errorf("GET %s = %+v", path, page)
	}
	if len(page.Attempts) != 1 || page.Attempts[0].Records != 2 {
		t.Errorf("attempts = %+v, want one of 2 records", page.Attempts)
	}
	first := want[wire.LogsResponse](t, s, 200, "GET", path+"?limit=1", nil)
	if len(first.Records) != 1 || first.Next != 1 {
		t.Fatalf("first page = %+v, want one record and next 1", first)
	}
	second := want[wire.LogsResponse](t, s, 200, "GET", fmt.Sprintf("%s?limit=1&after=%d&attempt=1", path, first.Next), nil)
	if len(second.Records) != 1 || second.Records[0].Message != "two" || second.Next != 0 {
		t.Errorf("second page = %+v, want the last record", second)
	}
	for _, q := range []string{"?attempt=x", "?limit=1001", "?after=-1", "?color=red", "?limit=1&limit=2"} {
		if r := s.do(t, "GET", path+q, nil); r.Status != 400 {
			t.Errorf("GET %s%s: %s, want 400", path, q, r)
		}
	}
	if r := s.do(t, "GET", "/v1/jobs/987654/logs", nil); r.Status != 404 {
		t.Errorf("GET the log of a missing job: %s, want 404", r)
	}

	// The server bounds the attempt's log: 64 KiB, the rest dropped.
	big := strings.Repeat("x", 1000)
	var recs []any
	for range 100 {
		recs = append(recs, map[string]any{"level": "INFO", "message": big})
	}
	got = want[wire.AppendLogsResponse](t, s, 200, "POST", path, map[string]any{"token": j.Token, "records": recs})
	kept := (rota.MaxLogBytes - 2*32 - len("one") - len(`{"k":"v"}`) - len("two")) / (1000 + 32)
	if got.Kept != kept || got.Dropped != 100-kept {
		t.Errorf("append of 100 KB = %+v, want %d kept and the rest dropped", got, kept)
	}
	page = want[wire.LogsResponse](t, s, 200, "GET", path+"?limit=1", nil)
	if page.Attempts[0].Dropped != 100-kept || page.Attempts[0].Records != 2+kept {
		t.Errorf("attempts = %+v, want %d dropped", page.Attempts, 100-kept)
	}
	// After the finish the token appends no more.
	want[struct{}](t, s, 204, "POST", fmt.Sprintf("/v1/jobs/%d/finish", j.ID), map[string]any{"token": j.Token})
	if r := s.do(t, "POST", path, map[string]any{"token": j.Token, "records": []any{}}); r.Status != http.StatusConflict {
		t.Errorf("append after the finish: %s, want 409", r)
	}
}
