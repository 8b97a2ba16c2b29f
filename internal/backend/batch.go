package backend

import (
	"encoding/json"
	"fmt"

	"github.com/rotajobs/rota/store"
)

// CallbackJSON is how both stores keep a batch's callback (an add,
// normalized): JSON of store.AddParams, nil for none.
func CallbackJSON(p *store.AddParams) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("batch callback: %w", err)
	}
	return b, nil
}

// BatchNames is how both stores keep a batch's groups or types
// (store.Batch): a JSON array.
func BatchNames(names []string) string {
	if len(names) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(names) // strings always marshal
	return string(b)
}

// ParseBatchNames reads what BatchNames wrote.
func ParseBatchNames(s string) ([]string, error) {
	var names []string
	if err := json.Unmarshal([]byte(s), &names); err != nil {
		return nil, fmt.Errorf("batch groups or types: %w", err)
	}
	return names, nil
}

// Callback reads a callback that CallbackJSON wrote (nil: none).
func Callback(b []byte) (*store.AddParams, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var p store.AddParams
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("batch callback: %w", err)
	}
	return &p, nil
}

// BatchesInReach pages over batches newest first, before id before, and
// returns the first limit in reach (store.Reach.HasBatch), so that a
// scoped caller's pages hold its batches only and its cursor (the last id
// returned) goes on where the page stopped. page reads up to n batches
// with an id below before, newest first; an unscoped caller takes one
// page, a scoped one reads on until it has limit or there are no more.
func BatchesInReach(reach *store.Reach, before int64, limit int, page func(before int64, n int) ([]store.Batch, error)) ([]store.Batch, error) {
	if !reach.Scoped() {
		return page(before, limit)
	}
	out := []store.Batch{}
	n := max(limit, 100)
	for {
		bs, err := page(before, n)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if reach.HasBatch(&b) {
				out = append(out, b)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(bs) < n {
			return out, nil
		}
		before = bs[len(bs)-1].ID
	}
}
