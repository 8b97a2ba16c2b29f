package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// strictFinish decodes a batch finish as the server does without the fast
// path (decodeStrict): unknown fields refused, one value.
func strictFinish(body []byte) (FinishBatchRequest, error) {
	var req FinishBatchRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, err
	}
	if _, err := dec.Token(); err != io.EOF { // as the server: anything after the value
		return req, fmt.Errorf("more than one value")
	}
	return req, nil
}

func randomFinishItems(r *rand.Rand, n int) []FinishItem {
	items := make([]FinishItem, n)
	for i := range items {
		it := FinishItem{ID: r.Int64N(1 << 40), Token: fmt.Sprintf("%032x", r.Uint64()), As: []string{"complete", "fail", "snooze", "release", "cancel"}[r.IntN(5)]}
		if r.IntN(3) == 0 {
			it.Result = json.RawMessage([]string{`{"ok":true}`, `[1,2,{"a":"b"}]`, `"done"`, `12.5e3`, `"<tag> & é"`}[r.IntN(5)])
		}
		if r.IntN(4) == 0 {
			it.Error = []string{"boom", "a \"quoted\" error", "line\nbreak", "ünïcode"}[r.IntN(4)]
			it.Permanent = r.IntN(2) == 0
		}
		if r.IntN(4) == 0 {
			t := time.Date(2026, 11, 26, 12, 0, 0, r.IntN(1e9), time.UTC).Add(time.Duration(r.IntN(1e6)) * time.Second)
			if r.IntN(2) == 0 {
				t = t.In(time.FixedZone("", 3600))
			}
			it.RunAt = &t
		}
		if r.IntN(8) == 0 {
			it.Rename = "renamed.type"
		}
		items[i] = it
	}
	return items
}

// TestParseFinishBatch: on what json.Marshal writes, the fast path reads
// what the strict decoding does, or leaves the body to it.
func TestParseFinishBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for round := range 500 {
		req := FinishBatchRequest{Items: randomFinishItems(r, round%7)}
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := strictFinish(body)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ParseFinishBatch(body)
		if !ok {
			continue // escapes in a string: encoding/json reads it
		}
		fast++
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\nfast path %+v\nstrict     %+v", body, got, want)
		}
	}
	if fast < 250 {
		t.Errorf("the fast path read %d of 500 batches, want most", fast)
	}
	for _, body := range []string{
		`{"items":[{"ID":1,"token":"t","as":"complete"}]}`,           // encoding/json ignores case
		`{"items":[{"id":1,"id":2,"token":"t","as":"complete"}]}`,    // a repeat overwrites
		`{"items":[{"id":1,"token":"t","as":"complete","x":1}]}`,     // unknown: refused
		`{"items":[{"id":1,"token":null,"as":"complete"}]}`,          // null
		`{"items": [{"id":1,"token":"t","as":"complete"}]}`,          // whitespace
		`{"items":[{"id":1.5,"token":"t","as":"complete"}]}`,         // not an integer
		`{"items":[{"id":1,"token":"t","as":"complete"}]}{}`,         // two values
		`{"items":[{"id":1,"token":"t","as":"complete","result":}]}`, // no value
	} {
		if req, ok := ParseFinishBatch([]byte(body)); ok {
			t.Errorf("%s: the fast path read %+v; want it left to encoding/json", body, req)
		}
	}
}

func TestFinishResults(t *testing.T) {
	for _, n := range []int{0, 1, 3, 256} {
		body := AppendFinishResults(nil, n)
		want, err := json.Marshal(FinishBatchResponse{Results: make([]ItemResult, n)})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want) {
			t.Errorf("AppendFinishResults(%d) = %s, json.Marshal writes %s", n, body, want)
		}
		if got, ok := ParseFinishResults(append(body, '\n')); !ok || got != n {
			t.Errorf("ParseFinishResults(%s) = %d, %v; want %d", body, got, ok, n)
		}
	}
	withError, _ := json.Marshal(FinishBatchResponse{Results: []ItemResult{{}, {Error: &Error{Code: "conflict", Message: "m"}}}})
	if n, ok := ParseFinishResults(withError); ok {
		t.Errorf("ParseFinishResults(%s) = %d, true; want it left to encoding/json", withError, n)
	}
}

// FuzzParseFinishBatch: whatever the fast path reads, the strict decoding
// reads the same.
func FuzzParseFinishBatch(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 4 {
		body, _ := json.Marshal(FinishBatchRequest{Items: randomFinishItems(r, n)})
		f.Add(body)
	}
	f.Add([]byte(`{"items":[{"id":01,"token":"t","as":"x"}]}`))
	f.Add([]byte(`{"items":[{"run_at":"2026-01-02T15:04:05+01:00","permanent":true}]}`))
	f.Add([]byte(`{"items":[{"token":"\xff"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := ParseFinishBatch(body)
		if !ok {
			return
		}
		want, err := strictFinish(body)
		if err != nil {
			t.Fatalf("the fast path read %q, which the strict decoding refuses: %v", body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast path %+v, strict %+v", body, got, want)
		}
	})
}

// FuzzParseFinishResults: whatever the fast path reads is an answer of
// that many successes to encoding/json too.
func FuzzParseFinishResults(f *testing.F) {
	f.Add(AppendFinishResults(nil, 3))
	f.Add([]byte(`{"results":[{},{"error":{"code":"x"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, ok := ParseFinishResults(body)
		if !ok {
			return
		}
		var resp FinishBatchResponse
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatalf("the fast path read %q, which encoding/json refuses: %v", body, err)
		}
		if len(resp.Results) != n || slicesContainError(resp.Results) {
			t.Fatalf("%q: fast path %d successes, encoding/json %+v", body, n, resp)
		}
	})
}

func slicesContainError(rs []ItemResult) bool {
	for _, r := range rs {
		if r.Error != nil {
			return true
		}
	}
	return false
}
