package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// AppendLogs appends records to the logs of attempts that workers hold
// (store.Logs), fenced as heartbeats are, in one writer transaction.
func (s *Store) AppendLogs(ctx context.Context, ps []store.AppendLogsParams) ([]store.AppendLogsResult, error) {
	ps, err := check.AppendLogs(ps)
	if err != nil {
		return nil, err
	}
	out := make([]store.AppendLogsResult, len(ps))
	// Not durable, as heartbeats are not: a crash may lose the records
	// of the last moments, as it loses the runs themselves.
	err = s.write(ctx, false, func(w *txn) error {
		return engine.AppendLogs(w, ps, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LogAttempt reads the summary of a job's log of an attempt (engine.LogTx).
func (w *txn) LogAttempt(id int64, attempt int) (store.LogAttempt, string, bool, error) {
	sum := store.LogAttempt{Attempt: attempt}
	var tag string
	err := w.row("log_attempt", id, attempt).Scan(&tag, &sum.Records, &sum.Bytes, &sum.Dropped)
	if errors.Is(err, sql.ErrNoRows) {
		return sum, "", false, nil
	}
	if err != nil {
		return sum, "", false, fmt.Errorf("sqlite: read the log of job %d: %w", id, err)
	}
	return sum, tag, true, nil
}

// StartLog deletes a job's logs of an attempt and later ones (engine.LogTx).
func (w *txn) StartLog(id int64, attempt int) error {
	if _, err := w.run("log_start", id, attempt); err != nil {
		return fmt.Errorf("sqlite: start the log of job %d: %w", id, err)
	}
	if _, err := w.run("log_start_attempts", id, attempt); err != nil {
		return fmt.Errorf("sqlite: start the log of job %d: %w", id, err)
	}
	return nil
}

// WriteLog inserts records and writes their attempt's summary (engine.LogTx).
func (w *txn) WriteLog(id int64, tag string, sum store.LogAttempt, recs []store.LogRecord) error {
	if len(recs) > 0 {
		rows := make([][]any, len(recs))
		for i, r := range recs {
			var attrs any
			if r.Attrs != nil {
				attrs = string(r.Attrs)
			}
			rows[i] = []any{r.Attempt, r.Seq, micros(r.Time), int(r.Level), r.Message, attrs}
		}
		b, err := json.Marshal(rows)
		if err != nil {
			return fmt.Errorf("sqlite: log of job %d: %w", id, err)
		}
		if _, err := w.run("log_insert", id, string(b)); err != nil {
			return fmt.Errorf("sqlite: log of job %d: %w", id, err)
		}
	}
	if _, err := w.run("log_summary", id, sum.Attempt, tag, sum.Records, sum.Bytes, sum.Dropped); err != nil {
		return fmt.Errorf("sqlite: log of job %d: %w", id, err)
	}
	return nil
}

// removeLogs deletes the logs of jobs ids, which the caller deletes in the
// same transaction.
func (w *txn) removeLogs(ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	list := idList(ids)
	if _, err := w.run("logs_remove", list); err != nil {
		return fmt.Errorf("sqlite: remove logs: %w", err)
	}
	if _, err := w.run("logs_remove_attempts", list); err != nil {
		return fmt.Errorf("sqlite: remove logs: %w", err)
	}
	return nil
}

// idList is ids as one JSON array (json_each).
func idList(ids []int64) string {
	b := make([]byte, 0, 12*len(ids))
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// Logs reads a page of a job's log (store.Logs); a job out of the caller's
// reach is a missing one.
func (s *Store) Logs(ctx context.Context, p store.LogsParams) (store.LogsResult, error) {
	if err := check.Logs(&p); err != nil {
		return store.LogsResult{}, err
	}
	jobs, err := s.Get(ctx, []int64{p.ID})
	if err != nil {
		return store.LogsResult{}, err
	}
	if jobs[0].ID == 0 {
		return store.LogsResult{}, check.NotFound(p.ID)
	}
	// One read transaction, so that the summaries and the page agree: a
	// deferred one, whose snapshot begins with its first read (BeginTx
	// would begin IMMEDIATE, which a read-only connection may not).
	tx, err := s.reader.Conn(ctx)
	if err != nil {
		return store.LogsResult{}, s.readErr(err)
	}
	defer tx.Close()
	if _, err := tx.ExecContext(ctx, `BEGIN DEFERRED`); err != nil {
		return store.LogsResult{}, s.readErr(err)
	}
	defer tx.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
	var res store.LogsResult
	rows, err := tx.QueryContext(ctx, stmt("log_attempts"), p.ID)
	if err != nil {
		return store.LogsResult{}, s.readErr(err)
	}
	for rows.Next() {
		var a store.LogAttempt
		if err := rows.Scan(&a.Attempt, &a.Records, &a.Bytes, &a.Dropped); err != nil {
			rows.Close()
			return store.LogsResult{}, fmt.Errorf("sqlite: logs of job %d: %w", p.ID, err)
		}
		res.Attempts = append(res.Attempts, a)
	}
	if err := rows.Close(); err != nil {
		return store.LogsResult{}, s.readErr(err)
	}
	res.Attempt = p.Attempt
	if res.Attempt == 0 && len(res.Attempts) > 0 {
		res.Attempt = res.Attempts[len(res.Attempts)-1].Attempt
	}
	if res.Attempt == 0 {
		return res, nil
	}
	rows, err = tx.QueryContext(ctx, stmt("log_page"), p.ID, res.Attempt, p.After, p.Limit+1)
	if err != nil {
		return store.LogsResult{}, s.readErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r store.LogRecord
		var at int64
		var level int
		var attrs sql.NullString
		if err := rows.Scan(&r.Attempt, &r.Seq, &at, &level, &r.Message, &attrs); err != nil {
			return store.LogsResult{}, fmt.Errorf("sqlite: logs of job %d: %w", p.ID, err)
		}
		r.Time, r.Level = fromMicros(at), slog.Level(level)
		if attrs.Valid {
			r.Attrs = json.RawMessage(attrs.String)
		}
		res.Records = append(res.Records, r)
	}
	if err := rows.Err(); err != nil {
		return store.LogsResult{}, s.readErr(err)
	}
	if len(res.Records) > p.Limit {
		res.Records = res.Records[:p.Limit]
		res.Next = res.Records[p.Limit-1].Seq
	}
	return res, nil
}
