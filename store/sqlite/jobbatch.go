package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// This file is SQLite's side of batches: the rows of rota_batches, which
// internal/engine keeps (engine.BatchTx) in the writer's transaction.

var _ store.Batches = (*Store)(nil)

const batchColumns = `id, description, total, remaining, completed, failed, cancelled, removed, open,
	on_complete, on_success, coalesce(complete_job, 0), coalesce(success_job, 0), created_at, done_at, groups, types, wide`

func scanBatch(sc scanner) (*store.Batch, error) {
	var b store.Batch
	var onComplete, onSuccess []byte
	var created int64
	var done sql.NullInt64
	var groups, types string
	err := sc.Scan(&b.ID, &b.Description, &b.Counts.Total, &b.Counts.Remaining, &b.Counts.Completed, &b.Counts.Failed,
		&b.Counts.Cancelled, &b.Counts.Removed, &b.Open, &onComplete, &onSuccess, &b.CompleteJob, &b.SuccessJob, &created, &done,
		&groups, &types, &b.Wide)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b.CreatedAt, b.DoneAt, b.Done = fromMicros(created), fromNullMicros(done), done.Valid
	if b.Groups, err = backend.ParseBatchNames(groups); err != nil {
		return nil, err
	}
	if b.Types, err = backend.ParseBatchNames(types); err != nil {
		return nil, err
	}
	if b.OnComplete, err = backend.Callback(onComplete); err != nil {
		return nil, err
	}
	if b.OnSuccess, err = backend.Callback(onSuccess); err != nil {
		return nil, err
	}
	return &b, nil
}

// CreateBatch inserts a batch (engine.BatchTx).
func (w *txn) CreateBatch(b *store.NewBatch, r store.Batch) (int64, error) {
	onComplete, err := backend.CallbackJSON(b.OnComplete)
	if err != nil {
		return 0, err
	}
	onSuccess, err := backend.CallbackJSON(b.OnSuccess)
	if err != nil {
		return 0, err
	}
	res, err := w.run("batch_insert", b.Description, b.Open, nullText(onComplete), nullText(onSuccess), micros(w.now),
		backend.BatchNames(r.Groups), backend.BatchNames(r.Types), r.Wide)
	if err != nil {
		return 0, fmt.Errorf("sqlite: add batch: %w", err)
	}
	return res.LastInsertId()
}

func nullText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// LockBatch reads a batch (engine.BatchTx): the writer holds the database.
func (w *txn) LockBatch(id int64) (*store.Batch, error) {
	b, err := scanBatch(w.row("batch", id))
	if err != nil {
		return nil, fmt.Errorf("sqlite: batch %d: %w", id, err)
	}
	return b, nil
}

// MoveBatch adds to a batch's counts (engine.BatchTx).
func (w *txn) MoveBatch(id int64, d store.BatchCounts, close bool) (*store.Batch, error) {
	b, err := scanBatch(w.row("batch_move", d.Total, d.Remaining, d.Completed, d.Failed, d.Cancelled, d.Removed, close, id))
	if err != nil {
		return nil, fmt.Errorf("sqlite: batch %d: %w", id, err)
	}
	return b, nil
}

// EndBatch marks a batch done (engine.BatchTx).
func (w *txn) EndBatch(id int64, completeJob, successJob int64) error {
	if _, err := w.run("batch_end", micros(w.now), nonZero(completeJob), nonZero(successJob), id); err != nil {
		return fmt.Errorf("sqlite: batch %d: %w", id, err)
	}
	return nil
}

// WidenBatch writes a batch's groups and types (engine.BatchTx).
func (w *txn) WidenBatch(id int64, groups, types []string, wide bool) error {
	if _, err := w.run("batch_widen", backend.BatchNames(groups), backend.BatchNames(types), wide, id); err != nil {
		return fmt.Errorf("sqlite: batch %d: %w", id, err)
	}
	return nil
}

// AddJobs adds a batch's callbacks (engine.BatchTx).
func (w *txn) AddJobs(jobs []store.AddParams, datas [][]byte) ([]store.AddResult, error) {
	return w.add(jobs, datas, nil)
}

// AddBatch adds a batch and its first jobs in one transaction
// (store.Batches).
func (s *Store) AddBatch(ctx context.Context, nb store.NewBatch) (store.Batch, []store.AddResult, error) {
	nb, datas, err := check.Batch(nb)
	if err != nil {
		return store.Batch{}, nil, err
	}
	var b *store.Batch
	var out []store.AddResult
	err = s.write(ctx, true, func(w *txn) error {
		id, err := engine.CreateBatch(w, &nb, store.ReachOf(ctx))
		if err != nil {
			return err
		}
		jobs := make([]store.AddParams, len(nb.Jobs))
		for i := range nb.Jobs {
			jobs[i] = nb.Jobs[i]
			jobs[i].Batch = id
		}
		if len(jobs) > 0 {
			if out, err = w.add(jobs, datas, store.ReachOf(ctx)); err != nil {
				return err
			}
		}
		if err := engine.SettleBatch(w, id, false); err != nil {
			return err
		}
		b, err = w.LockBatch(id)
		return err
	})
	if err != nil {
		return store.Batch{}, nil, err
	}
	return *b, out, nil
}

// GetBatch reads a batch (store.Batches).
func (s *Store) GetBatch(ctx context.Context, id int64) (store.Batch, error) {
	b, err := scanBatch(s.reader.QueryRowContext(ctx, stmt("batch"), id))
	if err != nil {
		return store.Batch{}, s.readErr(err)
	}
	if b == nil || !store.ReachOf(ctx).HasBatch(b) {
		return store.Batch{}, fmt.Errorf("batch %d does not exist: %w", id, store.ErrNotFound)
	}
	return *b, nil
}

// ListBatches lists batches, newest first (store.Batches).
func (s *Store) ListBatches(ctx context.Context, p store.BatchListParams) ([]store.Batch, error) {
	limit := p.Limit
	if limit > store.MaxListLimit {
		return nil, check.Invalidf("limit %d is more than %d", limit, store.MaxListLimit)
	}
	if limit <= 0 {
		limit = 100
	}
	before := p.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	return backend.BatchesInReach(store.ReachOf(ctx), before, limit, func(before int64, n int) ([]store.Batch, error) {
		rows, err := s.reader.QueryContext(ctx, stmt("batches"), before, n)
		if err != nil {
			return nil, s.readErr(err)
		}
		defer rows.Close()
		out := []store.Batch{}
		for rows.Next() {
			b, err := scanBatch(rows)
			if err != nil {
				return nil, fmt.Errorf("sqlite: batches: %w", err)
			}
			out = append(out, *b)
		}
		if err := rows.Err(); err != nil {
			return nil, s.readErr(err)
		}
		return out, nil
	})
}

// CloseBatch closes a batch (store.Batches).
func (s *Store) CloseBatch(ctx context.Context, id int64) (store.Batch, error) {
	var b *store.Batch
	err := s.write(ctx, true, func(w *txn) error {
		var err error
		if b, err = w.LockBatch(id); err != nil || b == nil {
			return err
		}
		if !store.ReachOf(ctx).HasBatch(b) {
			b = nil // out of reach: as missing
			return nil
		}
		if err := engine.SettleBatch(w, id, true); err != nil {
			return err
		}
		b, err = w.LockBatch(id)
		return err
	})
	if err != nil {
		return store.Batch{}, err
	}
	if b == nil {
		return store.Batch{}, fmt.Errorf("batch %d does not exist: %w", id, store.ErrNotFound)
	}
	return *b, nil
}
