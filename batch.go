package rota

import (
	"context"
	"fmt"
	"slices"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// ErrNoBatches: the client's store keeps no batches (store.Batches).
var ErrNoBatches = fmt.Errorf("this store keeps no batches: %w", store.ErrInvalid)

func (c *Client) batches() (store.Batches, error) {
	b, ok := c.st.(store.Batches)
	if !ok {
		return nil, ErrNoBatches
	}
	return b, nil
}

// AddBatch adds a batch of jobs in one transaction, all or none, with
// callbacks: b.OnComplete is added once every member has ended (completed,
// failed for good, cancelled, or removed before it ended), b.OnSuccess
// once every member completed; each exactly once, in the transaction of
// the last member's ending, on any store. A callback's data carries the
// batch under "batch": {"id", "counts", "callback"}. Jobs join a batch
// that is not done with AddParams.Batch: a member's handler can add jobs
// to its own batch (Job.Batch), which cannot be done while it runs; from
// outside, keep the batch Open until CloseBatch. It returns the batch and
// the jobs' results, in order; the add hooks run on the jobs and the
// callbacks.
//
// A batch of more than store.MaxAddBatch jobs (one add's limit) is added
// open with the first of them, the rest in adds of that many, then closed
// (unless b.Open), so that its callbacks wait for the last; each add is
// atomic, and when one fails in the store (bad input is refused before
// anything is added) the batch stays open with the jobs added so far,
// which the error counts.
func (c *Client) AddBatch(ctx context.Context, b NewBatch) (Batch, []AddResult, error) {
	bs, err := c.batches()
	if err != nil {
		return Batch{}, nil, err
	}
	if len(b.Jobs) > 0 {
		if b.Jobs, err = c.hooks.beforeAdd(ctx, b.Jobs); err != nil {
			return Batch{}, nil, err
		}
	}
	for _, cb := range []**AddParams{&b.OnComplete, &b.OnSuccess} {
		if *cb == nil {
			continue
		}
		ps, err := c.hooks.beforeAdd(ctx, []AddParams{**cb})
		if err != nil {
			return Batch{}, nil, err
		}
		*cb = &ps[0]
	}
	if len(b.Jobs) <= store.MaxAddBatch {
		return bs.AddBatch(ctx, b)
	}
	// Bad input refuses the whole batch before anything is added.
	for i := range b.Jobs {
		p := b.Jobs[i]
		if p.Batch != 0 {
			return Batch{}, nil, check.Invalidf("job %d of %d names batch %d: the jobs of a new batch join it", i+1, len(b.Jobs), p.Batch)
		}
		if _, err := check.Add(&p); err != nil {
			return Batch{}, nil, fmt.Errorf("job %d of %d: %w", i+1, len(b.Jobs), err)
		}
	}
	rest, open := b.Jobs[store.MaxAddBatch:], b.Open
	b.Jobs, b.Open = b.Jobs[:store.MaxAddBatch], true
	nb, out, err := bs.AddBatch(ctx, b)
	if err != nil {
		return Batch{}, nil, err
	}
	for len(rest) > 0 {
		ps := slices.Clone(rest[:min(len(rest), store.MaxAddBatch)])
		for i := range ps {
			ps[i].Batch = nb.ID
		}
		// The hooks ran on every job above.
		res, err := c.st.Add(ctx, ps)
		if err != nil {
			return Batch{}, out, fmt.Errorf("batch %d is open with its first %d jobs: adding the next %d: %w", nb.ID, len(out), len(ps), err)
		}
		out, rest = append(out, res...), rest[len(ps):]
	}
	id := nb.ID
	if open {
		nb, err = bs.GetBatch(ctx, id)
	} else {
		nb, err = bs.CloseBatch(ctx, id)
	}
	if err != nil {
		return Batch{}, out, fmt.Errorf("batch %d: %w", id, err)
	}
	return nb, out, nil
}

// GetBatch returns a batch: its counts, whether it is done, and the jobs
// its callbacks added.
func (c *Client) GetBatch(ctx context.Context, id int64) (Batch, error) {
	bs, err := c.batches()
	if err != nil {
		return Batch{}, err
	}
	return read(ctx, c, func() (Batch, error) { return bs.GetBatch(ctx, id) })
}

// ListBatches lists batches, newest first.
func (c *Client) ListBatches(ctx context.Context, p BatchListParams) ([]Batch, error) {
	bs, err := c.batches()
	if err != nil {
		return nil, err
	}
	return read(ctx, c, func() ([]Batch, error) { return bs.ListBatches(ctx, p) })
}

// CloseBatch closes an open batch (NewBatch.Open): it is done once its
// members have ended, at once when they have. Closing a closed batch
// changes nothing.
func (c *Client) CloseBatch(ctx context.Context, id int64) (Batch, error) {
	bs, err := c.batches()
	if err != nil {
		return Batch{}, err
	}
	return bs.CloseBatch(ctx, id)
}
