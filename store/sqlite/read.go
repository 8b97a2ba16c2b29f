package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rotajobs/rota/store"
)

const jobColumns = `id, type, key, grp, priority, state, run_at, data, attempt, max_attempts,
	backoff_base, backoff_max, token, worker, lease_until, cancel_requested, resubmit,
	progress, last_error, errors, result, created_at, started_at, finished_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromNullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func scanJob(sc scanner) (store.Job, error) {
	var (
		j                                   store.Job
		key, token, worker, lastErr, errs   sql.NullString
		leaseUntil, started, finished       sql.NullInt64
		runAt, created, updated, base, maxB int64
		state                               int
		cancelReq, resubmit                 bool
		data, result                        []byte
	)
	err := sc.Scan(&j.ID, &j.Type, &key, &j.Group, &j.Priority, &state, &runAt, &data, &j.Attempt, &j.MaxAttempts,
		&base, &maxB, &token, &worker, &leaseUntil, &cancelReq, &resubmit,
		&j.Progress, &lastErr, &errs, &result, &created, &started, &finished, &updated)
	if err != nil {
		return j, err
	}
	j.Key, j.Token, j.Worker, j.LastError = key.String, token.String, worker.String, lastErr.String
	j.State = store.State(state)
	j.RunAt = fromMicros(runAt)
	j.Data = data
	j.BackoffBase, j.BackoffMax = time.Duration(base)*time.Microsecond, time.Duration(maxB)*time.Microsecond
	j.LeaseUntil = fromNullMicros(leaseUntil)
	j.CancelRequested, j.Resubmit = cancelReq, resubmit
	if len(result) > 0 {
		j.Result = result
	}
	if errs.Valid && errs.String != "" {
		if err := json.Unmarshal([]byte(errs.String), &j.Errors); err != nil {
			return j, fmt.Errorf("job %d: decode errors: %w", j.ID, err)
		}
	}
	j.CreatedAt, j.UpdatedAt = fromMicros(created), fromMicros(updated)
	j.StartedAt, j.FinishedAt = fromNullMicros(started), fromNullMicros(finished)
	return j, nil
}

// Get returns jobs by id, in order; missing ids give zero Jobs.
func (s *Store) Get(ctx context.Context, ids []int64) ([]store.Job, error) {
	out := make([]store.Job, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	pos := make(map[int64][]int, len(ids))
	for i, id := range ids {
		pos[id] = append(pos[id], i)
	}
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.reader.QueryContext(ctx, `SELECT `+jobColumns+` FROM rota_jobs WHERE id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, s.readErr(err)
		}
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: get: %w", err)
			}
			for _, i := range pos[j.ID] {
				out[i] = j
			}
		}
		if err := rows.Close(); err != nil {
			return nil, s.readErr(err)
		}
		if err := rows.Err(); err != nil {
			return nil, s.readErr(err)
		}
	}
	return out, nil
}

// GetByKey returns the job with this type and key.
func (s *Store) GetByKey(ctx context.Context, typ, key string) (store.Job, error) {
	if typ == "" || key == "" {
		return store.Job{}, store.Invalidf("type and key are both required")
	}
	j, err := scanJob(s.reader.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM rota_jobs WHERE type = ? AND key = ?`, typ, key))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Job{}, fmt.Errorf("type %q key %q: %w", typ, key, store.ErrNotFound)
	}
	if err != nil {
		return store.Job{}, s.readErr(err)
	}
	return j, nil
}

// List returns a page of jobs in id order.
func (s *Store) List(ctx context.Context, p store.ListParams) (store.ListResult, error) {
	if err := store.CheckList(&p); err != nil {
		return store.ListResult{}, err
	}
	var where []string
	var args []any
	in := func(col string, n int) string { return col + " IN (" + placeholders(n) + ")" }
	if len(p.Types) > 0 {
		where = append(where, in("type", len(p.Types)))
		for _, t := range p.Types {
			args = append(args, t)
		}
	}
	if len(p.States) > 0 {
		where = append(where, in("state", len(p.States)))
		for _, st := range p.States {
			args = append(args, int(st))
		}
	}
	if len(p.Groups) > 0 {
		where = append(where, in("grp", len(p.Groups)))
		for _, g := range p.Groups {
			args = append(args, g)
		}
	}
	order := "ASC"
	if p.Descending {
		order = "DESC"
		if p.After > 0 {
			where = append(where, "id < ?")
			args = append(args, p.After)
		}
	} else if p.After > 0 {
		where = append(where, "id > ?")
		args = append(args, p.After)
	}
	q := `SELECT ` + jobColumns + ` FROM rota_jobs`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id " + order + " LIMIT ?"
	args = append(args, p.Limit+1)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return store.ListResult{}, s.readErr(err)
	}
	defer rows.Close()
	var res store.ListResult
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return store.ListResult{}, fmt.Errorf("sqlite: list: %w", err)
		}
		res.Jobs = append(res.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return store.ListResult{}, s.readErr(err)
	}
	if len(res.Jobs) > p.Limit {
		res.Jobs = res.Jobs[:p.Limit]
		res.Next = res.Jobs[p.Limit-1].ID
	}
	return res, nil
}

// Stats counts jobs by type, group and state. It reads every row, so it
// costs in proportion to the table: fine for an operator's view, not for a
// hot path.
func (s *Store) Stats(ctx context.Context) ([]store.Count, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT type, grp, state, count(*) FROM rota_jobs GROUP BY type, grp, state ORDER BY type, grp, state`)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []store.Count
	for rows.Next() {
		var c store.Count
		var state int
		if err := rows.Scan(&c.Type, &c.Group, &state, &c.Jobs); err != nil {
			return nil, fmt.Errorf("sqlite: stats: %w", err)
		}
		c.State = store.State(state)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

func (s *Store) readErr(err error) error {
	select {
	case <-s.closing:
		return store.ErrClosed
	default:
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("sqlite: read: %w", err)
}

func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}
