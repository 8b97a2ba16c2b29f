package httpapi

import (
	"net/http"
	"strconv"

	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// Batches (store.Batch): POST /v1/batches adds one with its first jobs,
// GET reads one or a page, POST /v1/batches/{id}/jobs adds jobs to one
// that is not done, POST /v1/batches/{id}/close closes an open one.

func batchID(r *http.Request) (int64, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, check.Invalidf("batch id %q is not a positive integer", raw)
	}
	return id, nil
}

func (s *Server) batchAdd(r *http.Request, _ int64, req *wire.BatchRequest) (answer, error) {
	if len(req.Jobs) > store.MaxAddBatch {
		return answer{}, check.TooLarge("a batch of %d jobs is more than %d in one request: add it open, then add jobs to it, then close it", len(req.Jobs), store.MaxAddBatch)
	}
	nb := req.Params()
	adds := append([]store.AddParams(nil), nb.Jobs...)
	for _, cb := range []*store.AddParams{nb.OnComplete, nb.OnSuccess} {
		if cb != nil {
			adds = append(adds, *cb)
		}
	}
	if err := mayAdd(accessOf(r), adds); err != nil {
		return answer{}, err
	}
	b, res, err := s.c.AddBatch(r.Context(), nb)
	if err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusCreated, body: s.batchAnswer(b, res)}, nil
}

func (s *Server) batchAnswer(b store.Batch, res []store.AddResult) wire.BatchResponse {
	out := wire.BatchResponse{Batch: wire.NewBatch(b)}
	for _, x := range res {
		out.Results = append(out.Results, wire.AddResponse{Job: hideToken(x.Job), Outcome: x.Outcome})
		s.metrics.added.WithLabelValues(s.metrics.types.of(x.Job.Type)).Inc()
	}
	return out
}

func (s *Server) batchGet(r *http.Request, _ int64, _ *none) (answer, error) {
	id, err := batchID(r)
	if err != nil {
		return answer{}, err
	}
	b, err := s.c.GetBatch(r.Context(), id)
	if err != nil {
		return answer{}, err
	}
	return ok(wire.BatchResponse{Batch: wire.NewBatch(b)}), nil
}

func (s *Server) batchList(r *http.Request, _ int64, _ *none) (answer, error) {
	q := r.URL.Query()
	var p store.BatchListParams
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return answer{}, check.Invalidf("before %q is not a batch id", v)
		}
		p.Before = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return answer{}, check.Invalidf("limit %q is not a positive integer", v)
		}
		p.Limit = n
	}
	bs, err := s.c.ListBatches(r.Context(), p)
	if err != nil {
		return answer{}, err
	}
	out := wire.BatchesResponse{Batches: make([]wire.Batch, len(bs))}
	for i, b := range bs {
		out.Batches[i] = wire.NewBatch(b)
	}
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	if len(bs) == limit {
		// A cursor only when a batch in the caller's reach follows, so
		// that a scoped token's last page says it is the last.
		last := bs[len(bs)-1].ID
		next, err := s.c.ListBatches(r.Context(), store.BatchListParams{Before: last, Limit: 1})
		if err != nil {
			return answer{}, err
		}
		if len(next) > 0 {
			out.NextCursor = strconv.FormatInt(last, 10)
		}
	}
	return ok(out), nil
}

func (s *Server) batchJobs(r *http.Request, _ int64, req *wire.AddBatchRequest) (answer, error) {
	id, err := batchID(r)
	if err != nil {
		return answer{}, err
	}
	if len(req.Jobs) == 0 {
		return answer{}, check.Invalidf("\"jobs\" is empty")
	}
	if len(req.Jobs) > store.MaxAddBatch {
		return answer{}, check.TooLarge("an add of %d jobs is more than %d", len(req.Jobs), store.MaxAddBatch)
	}
	ps := make([]store.AddParams, len(req.Jobs))
	for i, j := range req.Jobs {
		if j.Batch != 0 && j.Batch != id {
			return answer{}, check.Invalidf("job %d of %d names batch %d, not %d", i+1, len(req.Jobs), j.Batch, id)
		}
		ps[i] = j.Params()
		ps[i].Batch = id
	}
	if err := mayAdd(accessOf(r), ps); err != nil {
		return answer{}, err
	}
	res, err := s.c.AddMany(r.Context(), ps)
	if err != nil {
		return answer{}, err
	}
	b, err := s.c.GetBatch(r.Context(), id)
	if err != nil {
		return answer{}, err
	}
	return ok(s.batchAnswer(b, res)), nil
}

func (s *Server) batchClose(r *http.Request, _ int64, _ *none) (answer, error) {
	id, err := batchID(r)
	if err != nil {
		return answer{}, err
	}
	b, err := s.c.CloseBatch(r.Context(), id)
	if err != nil {
		return answer{}, err
	}
	return ok(wire.BatchResponse{Batch: wire.NewBatch(b)}), nil
}
