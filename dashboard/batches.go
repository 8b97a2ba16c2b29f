package dashboard

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/rotajobs/rota"
)

// The Batches page and a batch's page: each batch's progress (its members
// by outcome), whether it is open or done, and the jobs its callbacks
// added. A session sees the batches in its token's reach: those whose
// members and callbacks it reaches all (store.Reach.HasBatch); another
// tenant's batch is a missing one.

type batchesData struct {
	Batches []batchView
	Next    string
}

type batchView struct {
	rota.Batch
	Ended   int64 // members that ended, however
	Percent int   // of the members that ended
	State   string
}

func newBatchView(b rota.Batch) batchView {
	v := batchView{Batch: b, Ended: b.Counts.Total - b.Counts.Remaining, State: "running"}
	if b.Counts.Total > 0 {
		v.Percent = int(100 * v.Ended / b.Counts.Total)
	}
	switch {
	case b.Done:
		v.State, v.Percent = "done", 100
	case b.Open:
		v.State = "open"
	}
	return v
}

func (s *Server) batches(w http.ResponseWriter, r *http.Request) {
	var d batchesData
	before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	const limit = 100
	bs, err := s.c.ListBatches(r.Context(), rota.BatchListParams{Before: before, Limit: limit})
	if err != nil {
		s.fail(w, r, "Batches", err)
		return
	}
	for _, b := range bs {
		d.Batches = append(d.Batches, newBatchView(b))
	}
	if len(bs) == limit {
		// A next page only when a batch in the session's reach follows.
		last := bs[len(bs)-1].ID
		next, err := s.c.ListBatches(r.Context(), rota.BatchListParams{Before: last, Limit: 1})
		if err != nil {
			s.fail(w, r, "Batches", err)
			return
		}
		if len(next) > 0 {
			d.Next = fmt.Sprintf("/batches?before=%d", last)
		}
	}
	s.render(w, r, http.StatusOK, "batches", view{Title: "Batches", Nav: "batches", Data: d})
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.render(w, r, http.StatusBadRequest, "error", view{Title: "Batch", Error: fmt.Sprintf("%q is not a batch id: ids are positive integers.", r.PathValue("id"))})
		return
	}
	b, err := s.c.GetBatch(r.Context(), id)
	if err != nil {
		s.fail(w, r, fmt.Sprintf("Batch %d", id), err)
		return
	}
	s.render(w, r, http.StatusOK, "batch", view{Title: fmt.Sprintf("Batch %d", id), Nav: "batches", Data: newBatchView(b)})
}
