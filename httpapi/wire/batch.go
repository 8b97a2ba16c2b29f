package wire

import (
	"time"

	"github.com/rotajobs/rota/store"
)

// BatchRequest adds a batch: POST /v1/batches (store.NewBatch).
type BatchRequest struct {
	Jobs        []AddRequest `json:"jobs,omitempty"`
	OnComplete  *AddRequest  `json:"on_complete,omitempty"`
	OnSuccess   *AddRequest  `json:"on_success,omitempty"`
	Open        bool         `json:"open,omitempty"`
	Description string       `json:"description,omitempty"`
}

// Params converts the request to store parameters.
func (b BatchRequest) Params() store.NewBatch {
	nb := store.NewBatch{Open: b.Open, Description: b.Description}
	if len(b.Jobs) > 0 {
		nb.Jobs = make([]store.AddParams, len(b.Jobs))
		for i, j := range b.Jobs {
			nb.Jobs[i] = j.Params()
		}
	}
	if b.OnComplete != nil {
		p := b.OnComplete.Params()
		nb.OnComplete = &p
	}
	if b.OnSuccess != nil {
		p := b.OnSuccess.Params()
		nb.OnSuccess = &p
	}
	return nb
}

// NewBatchRequest converts store parameters to a request.
func NewBatchRequest(nb store.NewBatch) BatchRequest {
	b := BatchRequest{Open: nb.Open, Description: nb.Description}
	for _, p := range nb.Jobs {
		b.Jobs = append(b.Jobs, NewAddRequest(p))
	}
	if nb.OnComplete != nil {
		a := NewAddRequest(*nb.OnComplete)
		b.OnComplete = &a
	}
	if nb.OnSuccess != nil {
		a := NewAddRequest(*nb.OnSuccess)
		b.OnSuccess = &a
	}
	return b
}

// Batch is a batch on the wire (store.Batch), its callbacks as adds.
type Batch struct {
	ID          int64             `json:"id"`
	Description string            `json:"description,omitempty"`
	Counts      store.BatchCounts `json:"counts"`
	Open        bool              `json:"open"`
	Done        bool              `json:"done"`
	DoneAt      *time.Time        `json:"done_at,omitempty"`
	OnComplete  *AddRequest       `json:"on_complete,omitempty"`
	OnSuccess   *AddRequest       `json:"on_success,omitempty"`
	CompleteJob int64             `json:"complete_job,omitempty"`
	SuccessJob  int64             `json:"success_job,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
}

// NewBatch converts a stored batch to its wire form.
func NewBatch(b store.Batch) Batch {
	w := Batch{ID: b.ID, Description: b.Description, Counts: b.Counts, Open: b.Open, Done: b.Done,
		CompleteJob: b.CompleteJob, SuccessJob: b.SuccessJob, CreatedAt: b.CreatedAt}
	if b.Done {
		t := b.DoneAt
		w.DoneAt = &t
	}
	if b.OnComplete != nil {
		a := NewAddRequest(*b.OnComplete)
		w.OnComplete = &a
	}
	if b.OnSuccess != nil {
		a := NewAddRequest(*b.OnSuccess)
		w.OnSuccess = &a
	}
	return w
}

// Store converts a wire batch back (the remote client's answer).
func (w Batch) Store() store.Batch {
	b := store.Batch{ID: w.ID, Description: w.Description, Counts: w.Counts, Open: w.Open, Done: w.Done,
		CompleteJob: w.CompleteJob, SuccessJob: w.SuccessJob, CreatedAt: w.CreatedAt}
	if w.DoneAt != nil {
		b.DoneAt = *w.DoneAt
	}
	if w.OnComplete != nil {
		p := w.OnComplete.Params()
		b.OnComplete = &p
	}
	if w.OnSuccess != nil {
		p := w.OnSuccess.Params()
		b.OnSuccess = &p
	}
	return b
}

// BatchResponse answers POST /v1/batches, GET /v1/batches/{id} and the
// close; Results, the jobs an add of the batch added, in request order.
type BatchResponse struct {
	Batch   Batch         `json:"batch"`
	Results []AddResponse `json:"results,omitempty"`
}

// BatchesResponse is a page of batches, newest first. NextCursor, when
// set, is passed as ?before= for the next page.
type BatchesResponse struct {
	Batches    []Batch `json:"batches"`
	NextCursor string  `json:"next_cursor,omitempty"`
}
