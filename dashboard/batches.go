package dashboard

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/rotajobs/rota"
)

// The Batches page and a batch's page: each batch's progress (its members
// by outcome), whether it is open or done, and the jobs its callbacks
// added. Batches span types and groups, so only a token that reaches every
// job sees them (the admin token, or a named one without patterns).

type batchesData struct {
	Batches []batchView
	Next    string
	Hidden  bool // the token does not reach every job
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

// seesBatches reports whether the signed-in token reaches every job.
func seesBatches(r *http.Request) bool {
	a := userOf(r).Access
	return a.Admin() || a.Reach() == nil
}

func (s *Server) batches(w http.ResponseWriter, r *http.Request) {
	var d batchesData
	if !seesBatches(r) {
		d.Hidden = true
		s.render(w, r, http.StatusOK, "batches", view{Title: "Batches", Nav: "batches", Data: d})
		return
	}
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
		d.Next = fmt.Sprintf("/batches?before=%d", bs[len(bs)-1].ID)
	}
	s.render(w, r, http.StatusOK, "batches", view{Title: "Batches", Nav: "batches", Data: d})
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.render(w, r, http.StatusBadRequest, "error", view{Title: "Batch", Error: fmt.Sprintf("%q is not a batch id: ids are positive integers.", r.PathValue("id"))})
		return
	}
	if !seesBatches(r) {
		s.render(w, r, http.StatusOK, "batches", view{Title: "Batches", Nav: "batches", Data: batchesData{Hidden: true}})
		return
	}
	b, err := s.c.GetBatch(r.Context(), id)
	if err != nil {
		s.fail(w, r, fmt.Sprintf("Batch %d", id), err)
		return
	}
	s.render(w, r, http.StatusOK, "batch", view{Title: fmt.Sprintf("Batch %d", id), Nav: "batches", Data: newBatchView(b)})
}
