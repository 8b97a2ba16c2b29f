package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

// AppendLogs appends records to the logs of attempts that workers hold
// (store.Logs), fenced as heartbeats are, in one transaction: the job's
// row is locked (engine.Lock), so that an append and the run's finish do
// not interleave.
func (s *Store) AppendLogs(ctx context.Context, ps []store.AppendLogsParams) ([]store.AppendLogsResult, error) {
	ps, err := check.AppendLogs(ps)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		for _, r := range p.Records {
			if !pgText(r.Message) || !pgText(string(r.Attrs)) {
				return nil, check.Invalidf("job %d: a log record is not PostgreSQL text", p.ID)
			}
		}
	}
	out := make([]store.AppendLogsResult, len(ps))
	err = s.inTx(ctx, "append logs", func(t *txn) error {
		clear(out)
		return engine.AppendLogs(t, ps, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LogAttempt reads the summary of a job's log of an attempt (engine.LogTx).
func (t *txn) LogAttempt(id int64, attempt int) (store.LogAttempt, string, bool, error) {
	sum := store.LogAttempt{Attempt: attempt}
	var tag string
	ok, err := t.row("log_attempt", []any{id, attempt}, &tag, &sum.Records, &sum.Bytes, &sum.Dropped)
	if err != nil {
		return sum, "", false, fmt.Errorf("read the log of job %d: %w", id, err)
	}
	return sum, tag, ok, nil
}

// StartLog deletes a job's logs of an attempt and later ones (engine.LogTx).
func (t *txn) StartLog(id int64, attempt int) error {
	if _, err := t.run("log_start", id, attempt); err != nil {
		return fmt.Errorf("start the log of job %d: %w", id, err)
	}
	return nil
}

// WriteLog inserts records and writes their attempt's summary (engine.LogTx).
func (t *txn) WriteLog(id int64, tag string, sum store.LogAttempt, recs []store.LogRecord) error {
	if len(recs) > 0 {
		attempts, seqs, levels := make([]int32, len(recs)), make([]int32, len(recs)), make([]int32, len(recs))
		times, messages, attrs := make([]time.Time, len(recs)), make([]string, len(recs)), make([]*string, len(recs))
		for i, r := range recs {
			attempts[i], seqs[i], levels[i] = int32(r.Attempt), int32(r.Seq), int32(r.Level)
			times[i], messages[i] = r.Time, r.Message
			if r.Attrs != nil {
				a := string(r.Attrs)
				attrs[i] = &a
			}
		}
		if _, err := t.run("log_insert", id, attempts, seqs, times, levels, messages, attrs); err != nil {
			return fmt.Errorf("log of job %d: %w", id, err)
		}
	}
	if _, err := t.run("log_summary", id, sum.Attempt, tag, sum.Records, sum.Bytes, sum.Dropped); err != nil {
		return fmt.Errorf("log of job %d: %w", id, err)
	}
	return nil
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
	var res store.LogsResult
	err = s.read(ctx, "logs", func(t *txn) error {
		res = store.LogsResult{}
		rows, err := t.rows("log_attempts", p.ID)
		if err != nil {
			return err
		}
		for rows.Next() {
			var a store.LogAttempt
			if err := rows.Scan(&a.Attempt, &a.Records, &a.Bytes, &a.Dropped); err != nil {
				rows.Close()
				return err
			}
			res.Attempts = append(res.Attempts, a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		res.Attempt = p.Attempt
		if res.Attempt == 0 && len(res.Attempts) > 0 {
			res.Attempt = res.Attempts[len(res.Attempts)-1].Attempt
		}
		if res.Attempt == 0 {
			return nil
		}
		rows, err = t.rows("log_page", p.ID, res.Attempt, p.After, p.Limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r store.LogRecord
			var level int32
			var attrs *string
			if err := rows.Scan(&r.Attempt, &r.Seq, &r.Time, &level, &r.Message, &attrs); err != nil {
				return err
			}
			r.Time, r.Level = r.Time.UTC(), slog.Level(level)
			if attrs != nil {
				r.Attrs = json.RawMessage(*attrs)
			}
			res.Records = append(res.Records, r)
		}
		return rows.Err()
	})
	if err != nil {
		return store.LogsResult{}, err
	}
	if len(res.Records) > p.Limit {
		res.Records = res.Records[:p.Limit]
		res.Next = res.Records[p.Limit-1].Seq
	}
	return res, nil
}
