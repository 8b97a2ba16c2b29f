package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/store"
)

// Audit writes an operation's audit records in its transaction
// (engine.Tx), so that they commit or roll back with the change.
func (w *txn) Audit(recs []engine.Record) error {
	list := make([][]any, len(recs))
	for i, r := range recs {
		list[i] = []any{micros(r.At), r.Actor, r.Action, r.Of, r.Job, r.Type, r.Group, r.Detail}
	}
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	_, err = w.run("audit", string(b))
	return err
}

// History returns a job's history (store.Auditor).
func (s *Store) History(ctx context.Context, id int64) ([]store.HistoryEntry, error) {
	jobs, err := s.Get(store.WithReach(ctx, nil), []int64{id})
	if err != nil {
		return nil, err
	}
	return engine.History(auditReader{ctx, s}, jobs[0], id, store.ReachOf(ctx), s.cfg.Clock().UTC())
}

type auditReader struct {
	ctx context.Context
	s   *Store
}

func (a auditReader) JobRecords(id int64, limit int) ([]engine.Record, error) {
	return a.records(a.s.reader.QueryContext(a.ctx, stmt("job_audit"), id, limit))
}

func (a auditReader) SettingRecords(typ, grp string, from, to time.Time, limit int) ([]engine.Record, error) {
	return a.records(a.s.reader.QueryContext(a.ctx, stmt("setting_audit"), typ, grp, micros(from), micros(to), limit))
}

// records scans records read newest first, and returns them oldest first.
func (a auditReader) records(rows *sql.Rows, err error) ([]engine.Record, error) {
	if err != nil {
		return nil, a.s.readErr(err)
	}
	defer rows.Close()
	var out []engine.Record
	for rows.Next() {
		var r engine.Record
		var at int64
		if err := rows.Scan(&at, &r.Actor, &r.Action, &r.Of, &r.Job, &r.Type, &r.Group, &r.Detail); err != nil {
			return nil, fmt.Errorf("sqlite: history: %w", err)
		}
		r.At = fromMicros(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, a.s.readErr(err)
	}
	slices.Reverse(out)
	return out, nil
}
