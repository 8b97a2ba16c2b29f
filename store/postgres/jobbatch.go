package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// This file is PostgreSQL's side of batches: the rows of batches, which
// internal/engine keeps (engine.BatchTx) under each row's lock, so that
// members ending on several nodes at once count one after the other and
// exactly one of them adds the callbacks.

var _ store.Batches = (*Store)(nil)

const batchColumns = `id, description, total, remaining, completed, failed, cancelled, removed, open,
	on_complete, on_success, coalesce(complete_job, 0), coalesce(success_job, 0), created_at, done_at, groups, types, wide`

type batchScan struct {
	b                     store.Batch
	onComplete, onSuccess pgtype.Text
	created               time.Time
	done                  pgtype.Timestamptz
	groups, types         string
}

func (x *batchScan) dest() []any {
	b := &x.b
	return []any{&b.ID, &b.Description, &b.Counts.Total, &b.Counts.Remaining, &b.Counts.Completed, &b.Counts.Failed,
		&b.Counts.Cancelled, &b.Counts.Removed, &b.Open, &x.onComplete, &x.onSuccess, &b.CompleteJob, &b.SuccessJob,
		&x.created, &x.done, &x.groups, &x.types, &b.Wide}
}

func (x *batchScan) batch() (*store.Batch, error) {
	b := x.b
	b.CreatedAt = x.created.UTC()
	b.Done, b.DoneAt = x.done.Valid, pgTime(x.done)
	var err error
	if b.Groups, err = backend.ParseBatchNames(x.groups); err != nil {
		return nil, err
	}
	if b.Types, err = backend.ParseBatchNames(x.types); err != nil {
		return nil, err
	}
	if b.OnComplete, err = backend.Callback([]byte(x.onComplete.String)); err != nil {
		return nil, err
	}
	if b.OnSuccess, err = backend.Callback([]byte(x.onSuccess.String)); err != nil {
		return nil, err
	}
	return &b, nil
}

// readBatch reads the one batch row of a statement's answer; nil when it
// has none.
func readBatch(r rows, err error) (*store.Batch, error) {
	var x batchScan
	found, err := readOne(r, err, x.dest()...)
	if err != nil || !found {
		return nil, err
	}
	return x.batch()
}

func optText(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// CreateBatch inserts a batch (engine.BatchTx).
func (t *txn) CreateBatch(b *store.NewBatch, r store.Batch) (int64, error) {
	onComplete, err := backend.CallbackJSON(b.OnComplete)
	if err != nil {
		return 0, err
	}
	onSuccess, err := backend.CallbackJSON(b.OnSuccess)
	if err != nil {
		return 0, err
	}
	var id int64
	if _, err := t.row("batch_insert", []any{b.Description, b.Open, optText(onComplete), optText(onSuccess),
		backend.BatchNames(r.Groups), backend.BatchNames(r.Types), r.Wide}, &id); err != nil {
		return 0, fmt.Errorf("add batch: %w", err)
	}
	return id, nil
}

// LockBatch reads and locks a batch (engine.BatchTx).
func (t *txn) LockBatch(id int64) (*store.Batch, error) {
	b, err := readBatch(t.rows("batch_lock", id))
	if err != nil {
		return nil, fmt.Errorf("batch %d: %w", id, err)
	}
	return b, nil
}

// MoveBatch adds to a batch's counts under its lock (engine.BatchTx).
func (t *txn) MoveBatch(id int64, d store.BatchCounts, close bool) (*store.Batch, error) {
	b, err := readBatch(t.rows("batch_move", d.Total, d.Remaining, d.Completed, d.Failed, d.Cancelled, d.Removed, id, close))
	if err != nil {
		return nil, fmt.Errorf("batch %d: %w", id, err)
	}
	return b, nil
}

// EndBatch marks a batch done (engine.BatchTx).
func (t *txn) EndBatch(id int64, completeJob, successJob int64) error {
	if _, err := t.run("batch_end", optInt(completeJob), optInt(successJob), id); err != nil {
		return fmt.Errorf("batch %d: %w", id, err)
	}
	return nil
}

// WidenBatch writes a batch's groups and types (engine.BatchTx).
func (t *txn) WidenBatch(id int64, groups, types []string, wide bool) error {
	if _, err := t.run("batch_widen", backend.BatchNames(groups), backend.BatchNames(types), wide, id); err != nil {
		return fmt.Errorf("batch %d: %w", id, err)
	}
	return nil
}

// AddJobs adds a batch's callbacks (engine.BatchTx).
func (t *txn) AddJobs(jobs []store.AddParams, datas [][]byte) ([]store.AddResult, error) {
	return t.add(jobs, datas, t.s.unknownTypes(jobs))
}

// AddBatch adds a batch and its first jobs in one transaction
// (store.Batches).
func (s *Store) AddBatch(ctx context.Context, nb store.NewBatch) (store.Batch, []store.AddResult, error) {
	nb, datas, err := check.Batch(nb)
	if err != nil {
		return store.Batch{}, nil, err
	}
	newTypes := s.unknownTypes(nb.Jobs)
	var b *store.Batch
	var out []store.AddResult
	err = s.inTx(ctx, "add batch", func(t *txn) error {
		id, err := engine.CreateBatch(t, &nb, store.ReachOf(ctx))
		if err != nil {
			return err
		}
		jobs := make([]store.AddParams, len(nb.Jobs))
		for i := range nb.Jobs {
			jobs[i] = nb.Jobs[i]
			jobs[i].Batch = id
		}
		out = nil
		if len(jobs) > 0 {
			if out, err = t.add(jobs, datas, newTypes); err != nil {
				return err
			}
		}
		if err := engine.SettleBatch(t, id, false); err != nil {
			return err
		}
		b, err = readBatch(t.rows("batch", id))
		return err
	})
	if err != nil {
		return store.Batch{}, nil, err
	}
	return *b, out, nil
}

// GetBatch reads a batch (store.Batches).
func (s *Store) GetBatch(ctx context.Context, id int64) (store.Batch, error) {
	var b *store.Batch
	err := s.read(ctx, "get batch", func(t *txn) error {
		var err error
		b, err = readBatch(t.rows("batch", id))
		return err
	})
	if err != nil {
		return store.Batch{}, err
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
	var out []store.Batch
	err := s.read(ctx, "list batches", func(t *txn) error {
		var err error
		out, err = backend.BatchesInReach(store.ReachOf(ctx), before, limit, func(before int64, n int) ([]store.Batch, error) {
			r, err := t.rows("batches", before, n)
			if err != nil {
				return nil, err
			}
			defer r.Close()
			page := []store.Batch{}
			for r.Next() {
				var x batchScan
				if err := r.Scan(x.dest()...); err != nil {
					return nil, err
				}
				b, err := x.batch()
				if err != nil {
					return nil, err
				}
				page = append(page, *b)
			}
			return page, r.Err()
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CloseBatch closes a batch (store.Batches).
func (s *Store) CloseBatch(ctx context.Context, id int64) (store.Batch, error) {
	var b *store.Batch
	err := s.inTx(ctx, "close batch", func(t *txn) error {
		var err error
		if b, err = t.LockBatch(id); err != nil || b == nil {
			return err
		}
		if !store.ReachOf(ctx).HasBatch(b) {
			b = nil // out of reach: as missing
			return nil
		}
		if err := engine.SettleBatch(t, id, true); err != nil {
			return err
		}
		b, err = readBatch(t.rows("batch", id))
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
