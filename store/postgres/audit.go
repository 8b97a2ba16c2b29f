package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rotajobs/rota/internal/engine"
	"github.com/rotajobs/rota/store"
)

// Audit writes an operation's audit records in its transaction
// (engine.Tx), so that they commit or roll back with the change.
func (t *txn) Audit(recs []engine.Record) error {
	n := len(recs)
	at, of, jobs := make([]time.Time, n), make([]int16, n), make([]int64, n)
	actor, action, typ, grp, detail := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, r := range recs {
		at[i], of[i], jobs[i] = r.At, int16(r.Of), r.Job
		actor[i], action[i], typ[i], grp[i], detail[i] = cleanText(r.Actor), r.Action, r.Type, r.Group, cleanText(r.Detail)
	}
	_, err := t.run("audit", at, actor, action, of, jobs, typ, grp, detail)
	return err
}

// History returns a job's history (store.Auditor), from one snapshot.
func (s *Store) History(ctx context.Context, id int64) ([]store.HistoryEntry, error) {
	if s.closed.Load() {
		return nil, s.wrap("history", store.ErrClosed)
	}
	var out []store.HistoryEntry
	err := s.read(ctx, "history", func(t *txn) error {
		jobs, err := scanJobs(t.rows("jobs_by_id", []int64{id}))
		if err != nil {
			return err
		}
		var job store.Job
		if len(jobs) == 1 {
			job = jobs[0]
		}
		now, err := t.Now()
		if err != nil {
			return err
		}
		out, err = engine.History(auditReader{t}, job, id, store.ReachOf(ctx), now)
		return err
	})
	return out, err
}

type auditReader struct{ t *txn }

func (a auditReader) JobRecords(id int64, limit int) ([]engine.Record, error) {
	return records(a.t.rows("job_audit", id, limit))
}

func (a auditReader) SettingRecords(typ, grp string, from, to time.Time, limit int) ([]engine.Record, error) {
	return records(a.t.rows("setting_audit", typ, grp, from, to, limit))
}

// records scans records read newest first, and returns them oldest first.
func records(r rows, err error) ([]engine.Record, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []engine.Record
	for r.Next() {
		var rec engine.Record
		var of int16
		if err := r.Scan(&rec.At, &rec.Actor, &rec.Action, &of, &rec.Job, &rec.Type, &rec.Group, &rec.Detail); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		rec.At = rec.At.UTC()
		rec.Of = engine.Setting(of)
		out = append(out, rec)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}
