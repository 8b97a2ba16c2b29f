package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// TestBatches drives a batch through the API: add it open with a member
// and callbacks, extend it, close it, run its members, and read the
// callbacks; bad input is refused with nothing added.
func TestBatches(t *testing.T) {
	s := newServer(t, httpapi.Config{})
	b := want[wire.BatchResponse](t, s, 201, "POST", "/v1/batches", map[string]any{
		"jobs":        []map[string]any{{"type": "page", "data": map[string]any{"n": 1}}},
		"on_complete": map[string]any{"type": "merge", "data": map[string]any{"report": "q3"}},
		"on_success":  map[string]any{"type": "mail"},
		"open":        true,
		"description": "q3 report",
	})
	if b.Batch.ID == 0 || !b.Batch.Open || b.Batch.Done || b.Batch.Counts != (store.BatchCounts{Total: 1, Remaining: 1}) ||
		len(b.Results) != 1 || b.Results[0].Job.Batch != b.Batch.ID || b.Batch.OnComplete == nil || b.Batch.OnComplete.Type != "merge" {
		t.Fatalf("POST /v1/batches: %+v", b)
	}
	id := b.Batch.ID
	bp := fmt.Sprintf("/v1/batches/%d", id)
	ext := want[wire.BatchResponse](t, s, 200, "POST", bp+"/jobs", map[string]any{"jobs": []map[string]any{{"type": "page"}, {"type": "page"}}})
	if ext.Batch.Counts.Total != 3 || len(ext.Results) != 2 {
		t.Fatalf("POST %s/jobs: %+v", bp, ext)
	}
	// A job joins by its own add too.
	if j := s.add(t, map[string]any{"type": "page", "batch": id}); j.Batch != id {
		t.Fatalf("POST /v1/jobs with batch: job batch %d", j.Batch)
	}
	closed := want[wire.BatchResponse](t, s, 200, "POST", bp+"/close", nil)
	if closed.Batch.Open || closed.Batch.Done {
		t.Fatalf("close: %+v", closed.Batch)
	}
	for _, j := range s.accept(t, 10, "page") {
		s.do(t, "POST", fmt.Sprintf("/v1/jobs/%d/finish", j.ID), map[string]any{"token": j.Token})
	}
	got := want[wire.BatchResponse](t, s, 200, "GET", bp, nil).Batch
	if !got.Done || got.DoneAt == nil || got.Counts != (store.BatchCounts{Total: 4, Completed: 4}) || got.CompleteJob == 0 || got.SuccessJob == 0 {
		t.Fatalf("GET %s after its members: %+v", bp, got)
	}
	merge := s.get(t, got.CompleteJob)
	jsonEq(t, "on_complete's data", merge.Data, fmt.Sprintf(`{"report":"q3","batch":{"id":%d,"counts":{"total":4,"remaining":0,"completed":4,"failed":0,"cancelled":0,"removed":0},"callback":"complete"}}`, id))
	list := want[wire.BatchesResponse](t, s, 200, "GET", "/v1/batches?limit=1", nil)
	if len(list.Batches) != 1 || list.Batches[0].ID != id || list.NextCursor != "" { // the only batch: the last page
		t.Errorf("GET /v1/batches: %+v", list)
	}

	// Refusals, each changing nothing.
	before := s.snapshot(t)
	wantError(t, s.do(t, "POST", bp+"/jobs", map[string]any{"jobs": []map[string]any{{"type": "page"}}}), 409, wire.CodeFinished, "is done")
	wantError(t, s.do(t, "POST", "/v1/batches", map[string]any{"jobs": []map[string]any{{"type": "page"}, {"type": ""}}}), 400, wire.CodeInvalid, "job 2 of 2")
	wantError(t, s.do(t, "POST", "/v1/batches", map[string]any{"on_complete": map[string]any{"type": "x", "data": map[string]any{"batch": 1}}}), 400, wire.CodeInvalid, `field "batch"`)
	wantError(t, s.do(t, "POST", "/v1/batches", map[string]any{"jobs": []map[string]any{{"type": "page"}}, "extra": 1}), 400, wire.CodeInvalid, "extra")
	wantError(t, s.do(t, "GET", "/v1/batches/999", nil), 404, wire.CodeNotFound, "batch 999")
	wantError(t, s.do(t, "POST", "/v1/batches/999/close", nil), 404, wire.CodeNotFound, "batch 999")
	wantError(t, s.do(t, "POST", "/v1/batches/999/jobs", map[string]any{"jobs": []map[string]any{{"type": "page"}}}), 404, wire.CodeNotFound, "batch 999")
	wantError(t, s.do(t, "GET", "/v1/batches/x", nil), 400, wire.CodeInvalid, "batch id")
	wantError(t, s.do(t, "GET", "/v1/batches?limit=0", nil), 400, wire.CodeInvalid, "limit")
	if after := s.snapshot(t); after != before {
		t.Errorf("refused requests changed the store:\n%s\nthen\n%s", before, after)
	}
}
