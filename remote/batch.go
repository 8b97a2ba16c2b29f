package remote

import (
	"context"
	"net/url"
	"strconv"

	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// The batches of the server's store (store.Batches), over /v1/batches.

var _ store.Batches = (*Store)(nil)

// AddBatch adds a batch and its first jobs: POST /v1/batches.
func (s *Store) AddBatch(ctx context.Context, b store.NewBatch) (store.Batch, []store.AddResult, error) {
	for _, p := range b.Jobs {
		if p.BedrockID {
			return store.Batch{}, nil, notCarried("an add's Bedrock id (AddParams.BedrockID)")
		}
	}
	var resp wire.BatchResponse
	if err := s.do(ctx, "POST", "/v1/batches", nil, wire.NewBatchRequest(b), &resp); err != nil {
		return store.Batch{}, nil, err
	}
	return resp.Batch.Store(), results(resp.Results), nil
}

func results(rs []wire.AddResponse) []store.AddResult {
	out := make([]store.AddResult, len(rs))
	for i, r := range rs {
		out[i] = store.AddResult{Job: r.Job, Outcome: r.Outcome}
	}
	return out
}

func batchPath(id int64, action string) string {
	p := "/v1/batches/" + strconv.FormatInt(id, 10)
	if action != "" {
		p += "/" + action
	}
	return p
}

// GetBatch reads a batch: GET /v1/batches/{id}.
func (s *Store) GetBatch(ctx context.Context, id int64) (store.Batch, error) {
	var resp wire.BatchResponse
	if err := s.do(ctx, "GET", batchPath(id, ""), nil, nil, &resp); err != nil {
		return store.Batch{}, err
	}
	return resp.Batch.Store(), nil
}

// ListBatches lists batches, newest first: GET /v1/batches.
func (s *Store) ListBatches(ctx context.Context, p store.BatchListParams) ([]store.Batch, error) {
	q := url.Values{}
	if p.Before > 0 {
		q.Set("before", strconv.FormatInt(p.Before, 10))
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	var resp wire.BatchesResponse
	if err := s.do(ctx, "GET", "/v1/batches", q, nil, &resp); err != nil {
		return nil, err
	}
	out := make([]store.Batch, len(resp.Batches))
	for i, b := range resp.Batches {
		out[i] = b.Store()
	}
	return out, nil
}

// CloseBatch closes a batch: POST /v1/batches/{id}/close.
func (s *Store) CloseBatch(ctx context.Context, id int64) (store.Batch, error) {
	var resp wire.BatchResponse
	if err := s.do(ctx, "POST", batchPath(id, "close"), nil, nil, &resp); err != nil {
		return store.Batch{}, err
	}
	return resp.Batch.Store(), nil
}
