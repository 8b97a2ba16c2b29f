package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// acceptTx is an accept's transaction on a connection of its own, begun in
// the round trip of its first statement rather than one of its own: an
// accept of a type with a rate or a bound on its running jobs starts its
// transaction to take the type's lock, so BEGIN (with hotPlanSQL's
// settings) goes in one pipeline with the lock (docs/benchmarks.md,
// "What a rate costs when it does not bind").
type acceptTx struct {
	conn  *pgxpool.Conn
	begun bool
	// fold queues, ahead of BEGIN, the fold of the accept's types' pending
	// changes (Store.queueFold); nil: none.
	fold func(*pgx.Batch) int
}

// beginAccept reserves a connection for an accept's transaction.
func beginAccept(ctx context.Context, pool *pgxpool.Pool) (*acceptTx, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &acceptTx{conn: c}, nil
}

// batch sends b, after BEGIN when the transaction has not begun.
func (t *acceptTx) batch(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if t.begun {
		return t.conn.SendBatch(ctx, b), nil
	}
	full := &pgx.Batch{}
	folds := 0
	if t.fold != nil {
		folds, t.fold = t.fold(full), nil
	}
	full.Queue("BEGIN")
	full.Queue(hotPlanSQL)
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	t.begun = true
	br := t.conn.SendBatch(ctx, full)
	if err := readFold(br, folds); err != nil {
		br.Close()
		return nil, err
	}
	for range 2 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	return br, nil
}

func (t *acceptTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.begun {
		return t.conn.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := t.batch(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	return tag, errors.Join(err, br.Close())
}

func (t *acceptTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.begun {
		return t.conn.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := t.batch(ctx, b)
	if err != nil {
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: r, br: br}, nil
}

// commitWith sends b and then COMMIT, in one round trip; the caller reads
// the results (COMMIT's last) and then calls Rollback, which only gives
// the connection back once the transaction is over.
func (t *acceptTx) commitWith(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	b.Queue("COMMIT")
	return t.batch(ctx, b)
}

// Rollback rolls back what is not committed and gives the connection back
// (a connection left in a transaction is closed by the pool).
func (t *acceptTx) Rollback(ctx context.Context) {
	defer t.conn.Release()
	if t.begun && t.conn.Conn().PgConn().TxStatus() != 'I' {
		t.conn.Exec(ctx, "ROLLBACK")
	}
}

// batchRows are the rows of a batch's one query; closing them ends the
// batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}
