package wire

import (
	"bytes"
	"encoding/json"
	"time"
)

// A remote worker ends every job it runs with a batch finish, so the
// batch's request and answer are on the hot path like the accept's answer:
// with encoding/json, the server spends about 1.6 µs per job decoding the
// request alone. ParseFinishBatch reads the request as json.Marshal writes
// it, and AppendFinishResults and ParseFinishResults the answer when every
// item succeeded; anything else is left to encoding/json (ok false), so
// that the result is always what encoding/json gives.

// ParseFinishBatch reads a batch finish as a strict decoding into
// FinishBatchRequest would (unknown keys refused), when the body is as
// json.Marshal writes one: no whitespace, keys in FinishItem's spelling,
// each at most once, no null, strings without escapes. ok is false for
// anything else, which the caller decodes with encoding/json.
func ParseFinishBatch(body []byte) (req FinishBatchRequest, ok bool) {
	p := &jsonScan{d: bytes.TrimRight(body, "\n")}
	req.Items = []FinishItem{}
	ok = p.lit(`{"items":`) && p.array(func() bool {
		req.Items = append(req.Items, FinishItem{})
		return p.finishItem(&req.Items[len(req.Items)-1])
	}) && p.lit("}") && len(p.d) == 0
	return req, ok
}

// finishItem reads one FinishItem object into f, refusing what job does.
func (p *jsonScan) finishItem(f *FinishItem) bool {
	var seen uint8
	return p.object(func(name []byte) bool {
		var bit uint8
		var ok bool
		switch string(name) {
		case "id":
			bit = 1
			f.ID, ok = p.int()
		case "token":
			bit = 2
			f.Token, ok = p.str()
		case "as":
			bit = 4
			f.As, ok = p.common()
		case "result":
			bit = 8
			var v []byte
			if v, ok = p.value(); ok {
				f.Result = append(json.RawMessage(nil), v...)
			}
		case "error":
			bit = 16
			f.Error, ok = p.str()
		case "permanent":
			bit = 32
			f.Permanent, ok = p.bool()
		case "run_at":
			bit = 64
			var t time.Time
			if t, ok = p.time(); ok {
				f.RunAt = &t
			}
		case "rename":
			bit = 128
			f.Rename, ok = p.str()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
}

// AppendFinishResults appends the answer to a batch finish of n items
// that all succeeded, as json.Marshal writes FinishBatchResponse.
func AppendFinishResults(buf []byte, n int) []byte {
	buf = append(buf, `{"results":[`...)
	for i := range n {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, "{}"...)
	}
	return append(buf, "]}"...)
}

// ParseFinishResults reads the answer to a batch finish when every item
// succeeded, as AppendFinishResults writes it, and returns how many items
// it answers; ok is false for anything else.
func ParseFinishResults(body []byte) (n int, ok bool) {
	p := &jsonScan{d: bytes.TrimRight(body, "\n")}
	ok = p.lit(`{"results":`) && p.array(func() bool {
		n++
		return p.lit("{}")
	}) && p.lit("}") && len(p.d) == 0
	return n, ok
}
