package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/store"
)

var _ store.Copier = (*Store)(nil)

// copyColumns are the columns of each table that a copy carries, in the
// order its statements name them. TestCopyCoversSchema checks them
// against the schema, so a column or table added by a migration must be
// named here (or in notCopied) before the copy can be trusted with it.
var copyColumns = map[string][]string{
	"rota_jobs": append(append([]string(nil), jobColumnNames...), "lease_timeout", "resubmit_at", "next_data"),
	"rota_types": {"name", "lease_timeout", "updated_at", "bands_high", "bands_low", "group_max_running", "vclock",
		"paused", "retention", "failed_retention", "max_running", "run_timeout", "rate_n", "rate_per", "burst"},
	"rota_groups":       {"type", "grp", "turn", "band_count"},
	"rota_group_config": {"grp", "type", "max_running", "weight", "paused", "rate_n", "rate_per", "burst"},
	"rota_tokens":       {"name", "hash", "groups", "types", "read_only", "created_at"},
}

// notCopied are the tables and columns a copy leaves out, and why.
var notCopied = map[string]string{
	"rota_audit":            "the audit trail stays with the deployment that recorded it: a copy starts a trail of its own (docs/concepts.md)",
	"rota_jobs.bulk":        "unused since migration 0014",
	"rota_groups.pending":   "counted from the jobs loaded",
	"rota_groups.running":   "counted from the jobs loaded",
	"rota_migrations":       "the destination's schema is its own, migrated when it opens",
	"rota_batches":          "batches are not carried yet: a copied member keeps its batch id, and its ending counts nowhere",
	"sqlite_sequence":       "carried as CopyBatch.NextID",
	"rota_job_logs":         "per-job logs are diagnostics of runs on the source; a copy starts without them",
	"rota_job_log_attempts": "per-job logs are diagnostics of runs on the source; a copy starts without them",
	"rota_jobs.run_limit":   "the last attempt's timeout, set by its claim; a copied run is held to the job's own",
	// rota copy does not carry dependencies yet (docs/cli.md says so):
	// copy a deployment whose workflows have ended.
	"rota_deps":                     "dependencies are not copied yet",
	"rota_jobs.deps_waiting":        "dependencies are not copied yet",
	"rota_jobs.has_dependants":      "dependencies are not copied yet",
	"rota_types.tokens":             "a rate's bucket starts full in the destination",
	"rota_types.refilled_at":        "a rate's bucket starts full in the destination",
	"rota_group_config.tokens":      "a rate's bucket starts full in the destination",
	"rota_group_config.refilled_at": "a rate's bucket starts full in the destination",
}

// Export calls fn with everything the database holds, from one read
// transaction (store.Copier).
func (s *Store) Export(ctx context.Context, size int, fn func(*store.CopyBatch) error) error {
	conn, err := s.reader.Conn(ctx)
	if err != nil {
		return s.readErr(err)
	}
	defer conn.Close()
	// A deferred transaction: its snapshot begins with its first read.
	// (database/sql's BeginTx would begin IMMEDIATE, the DSN's _txlock,
	// which a read-only connection may not.)
	if _, err := conn.ExecContext(ctx, `BEGIN DEFERRED`); err != nil {
		return s.readErr(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	tx := conn
	first := &store.CopyBatch{}
	if err := exportSettings(ctx, tx, first); err != nil {
		return fmt.Errorf("sqlite: export: %w", err)
	}
	if err := fn(first); err != nil {
		return err
	}
	b := &store.CopyBatch{}
	var after int64
	for {
		b.Jobs = b.Jobs[:0]
		rows, err := tx.QueryContext(ctx, stmt("export_jobs"), after, size)
		if err != nil {
			return fmt.Errorf("sqlite: export jobs: %w", err)
		}
		names := copyColumns["rota_jobs"]
		for rows.Next() {
			c := newColumns(names...)
			if err := c.scan(rows); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: export jobs: %w", err)
			}
			j, err := jobFromColumns(c)
			if err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: export jobs: %w", err)
			}
			n := len(jobColumnNames)
			cj := store.CopyJob{Job: j, ResubmitAt: c.nullTime(n + 1), NextData: c.bytes(n + 2)}
			if c.v[n] != nil {
				cj.LeaseTimeout = time.Duration(c.int64(n)) * time.Microsecond
			}
			if c.err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: export job %d: %w", j.ID, c.err)
			}
			b.Jobs = append(b.Jobs, cj)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("sqlite: export jobs: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: export jobs: %w", err)
		}
		if len(b.Jobs) == 0 {
			return nil
		}
		after = b.Jobs[len(b.Jobs)-1].ID
		if err := fn(b); err != nil {
			return err
		}
	}
}

func exportSettings(ctx context.Context, tx rowQuerier, b *store.CopyBatch) error {
	err := queryEach(ctx, tx, stmt("export_types"), func(c *columns) {
		b.Types = append(b.Types, store.CopyType{Name: c.str(0), LeaseTimeout: time.Duration(c.int64(1)) * time.Microsecond,
			UpdatedAt: c.time(2), BandsHigh: c.int64(3), BandsLow: c.int64(4), GroupMaxRunning: c.int64(5), VClock: c.float(6),
			Paused: c.bool(7), Retention: time.Duration(c.int64(8)) * time.Microsecond,
			FailedRetention: time.Duration(c.int64(9)) * time.Microsecond, MaxRunning: c.int64(10),
			Timeout: time.Duration(c.int64(11)) * time.Microsecond,
			RateN:   c.int64(12), RatePer: time.Duration(c.int64(13)) * time.Microsecond, Burst: c.int64(14)})
	}, copyColumns["rota_types"])
	if err != nil {
		return err
	}
	err = queryEach(ctx, tx, stmt("export_groups"), func(c *columns) {
		b.Groups = append(b.Groups, store.CopyGroup{Type: c.str(0), Group: c.str(1), Turn: c.float(2), BandCount: c.int64(3)})
	}, copyColumns["rota_groups"])
	if err != nil {
		return err
	}
	err = queryEach(ctx, tx, stmt("export_group_config"), func(c *columns) {
		b.GroupConfig = append(b.GroupConfig, store.CopyGroupConfig{Group: c.str(0), Type: c.str(1), MaxRunning: c.int64(2),
			Weight: c.float(3), Paused: c.bool(4), RateN: c.int64(5), RatePer: time.Duration(c.int64(6)) * time.Microsecond, Burst: c.int64(7)})
	}, copyColumns["rota_group_config"])
	if err != nil {
		return err
	}
	var jsonErr error
	err = queryEach(ctx, tx, stmt("export_tokens"), func(c *columns) {
		t := store.CopyToken{Name: c.str(0), Hash: c.bytes(1), ReadOnly: c.bool(4), CreatedAt: c.time(5)}
		if err := json.Unmarshal(c.bytes(2), &t.Groups); err != nil && jsonErr == nil {
			jsonErr = fmt.Errorf("token %q: groups: %w", t.Name, err)
		}
		if err := json.Unmarshal(c.bytes(3), &t.Types); err != nil && jsonErr == nil {
			jsonErr = fmt.Errorf("token %q: types: %w", t.Name, err)
		}
		b.Tokens = append(b.Tokens, t)
	}, copyColumns["rota_tokens"])
	if err != nil {
		return err
	}
	if jsonErr != nil {
		return jsonErr
	}
	var seq, maxID sql.NullInt64
	if err := tx.QueryRowContext(ctx, stmt("export_next_id")).Scan(&seq, &maxID); err != nil {
		return err
	}
	b.NextID = max(seq.Int64, maxID.Int64) + 1
	return tx.QueryRowContext(ctx, stmt("count_jobs")).Scan(&b.TotalJobs)
}

// rowQuerier is a connection or a transaction.
type rowQuerier interface {
	querier
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// queryEach runs q and calls row with each row's columns.
func queryEach(ctx context.Context, tx rowQuerier, q string, row func(*columns), names []string) error {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		c := newColumns(names...)
		if err := c.scan(rows); err != nil {
			return err
		}
		row(c)
		if c.err != nil {
			return c.err
		}
	}
	return rows.Err()
}

// loader is a load in one transaction on a connection of its own (the
// store's writer is idle: nothing else uses a store being loaded).
type loader struct {
	s    *Store
	conn *sql.Conn
	tx   *sql.Tx
	job  *sql.Stmt
	next int64
}

// BeginLoad starts a load (store.Copier).
func (s *Store) BeginLoad(ctx context.Context, replace bool) (store.Loader, error) {
	db, err := s.DB()
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: load: %w", err)
	}
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the DSN's _txlock)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("sqlite: load: %w", err)
	}
	l := &loader{s: s, conn: conn, tx: tx}
	fail := func(err error) (store.Loader, error) {
		l.Rollback()
		return nil, err
	}
	var jobs, types, configs, tokens int
	if err := tx.QueryRowContext(ctx, stmt("load_counts")).Scan(&jobs, &types, &configs, &tokens); err != nil {
		return fail(fmt.Errorf("sqlite: load: %w", err))
	}
	if jobs+types+configs+tokens > 0 {
		if !replace {
			return fail(fmt.Errorf("%w: %s holds %d jobs, %d types, %d group settings and %d tokens",
				store.ErrNotEmpty, s.path, jobs, types, configs, tokens))
		}
		if _, err := tx.ExecContext(ctx, stmt("load_empty")); err != nil {
			return fail(fmt.Errorf("sqlite: load: empty the database: %w", err))
		}
	}
	if l.job, err = tx.PrepareContext(ctx, stmt("load_job")); err != nil {
		return fail(fmt.Errorf("sqlite: load: %w", err))
	}
	return l, nil
}

// Write inserts a batch (store.Loader).
func (l *loader) Write(ctx context.Context, b *store.CopyBatch) error {
	tx := l.tx
	if b.NextID != 0 {
		l.next = b.NextID
	}
	for _, t := range b.Types {
		if _, err := tx.ExecContext(ctx, stmt("load_type"),
			t.Name, t.LeaseTimeout.Microseconds(), micros(t.UpdatedAt), t.BandsHigh, t.BandsLow, t.GroupMaxRunning, t.VClock,
			t.Paused, t.Retention.Microseconds(), t.FailedRetention.Microseconds(), t.MaxRunning, t.Timeout.Microseconds(),
			t.RateN, t.RatePer.Microseconds(), t.Burst); err != nil {
			return fmt.Errorf("sqlite: load type %q: %w", t.Name, err)
		}
	}
	for _, g := range b.Groups {
		if _, err := tx.ExecContext(ctx, stmt("load_group"),
			g.Type, g.Group, g.Turn, g.BandCount); err != nil {
			return fmt.Errorf("sqlite: load group %q of type %q: %w", g.Group, g.Type, err)
		}
	}
	for _, g := range b.GroupConfig {
		if _, err := tx.ExecContext(ctx, stmt("load_group_config"),
			g.Group, g.Type, g.MaxRunning, g.Weight, g.Paused, g.RateN, g.RatePer.Microseconds(), g.Burst); err != nil {
			return fmt.Errorf("sqlite: load settings of group %q: %w", g.Group, err)
		}
	}
	for _, t := range b.Tokens {
		groups, _ := json.Marshal(nonNil(t.Groups))
		types, _ := json.Marshal(nonNil(t.Types))
		if _, err := tx.ExecContext(ctx, stmt("load_token"),
			t.Name, t.Hash, string(groups), string(types), t.ReadOnly, micros(t.CreatedAt)); err != nil {
			return fmt.Errorf("sqlite: load token %q: %w", t.Name, err)
		}
	}
	for i := range b.Jobs {
		j := &b.Jobs[i]
		var errs, result, meta any
		if len(j.Errors) > 0 {
			e, err := json.Marshal(j.Errors)
			if err != nil {
				return fmt.Errorf("sqlite: load job %d: %w", j.ID, err)
			}
			errs = string(e)
		}
		if len(j.Result) > 0 {
			result = []byte(j.Result)
		}
		if len(j.Meta) > 0 {
			meta = backend.MetaJSON(j.Meta)
		}
		// In the order of copyColumns["rota_jobs"].
		if _, err := l.job.ExecContext(ctx, j.ID, j.Type, nullStr(j.Key), j.Group, j.Priority, int(j.State), micros(j.RunAt),
			[]byte(j.Data), j.Attempt, j.MaxAttempts, j.BackoffBase.Microseconds(), j.BackoffMax.Microseconds(),
			nullStr(j.Token), nullStr(j.Worker), nullMicros(j.LeaseUntil), j.CancelRequested, j.Resubmit,
			j.Progress, nullStr(j.LastError), errs, result, micros(j.CreatedAt), nullMicros(j.StartedAt),
			nullMicros(j.FinishedAt), micros(j.UpdatedAt), meta,
			nullStr(j.Schedule), int(j.Missed), nullMicros(j.Slot), nullInt(j.RetryAfter.Microseconds()), nullInt(j.Parent),
			j.HasChildren, nullInt(j.BedrockID), nullMicros(j.PrevStartedAt), nullInt(j.Timeout.Microseconds()),
			nullMicros(j.ExpiresAt), j.Expired, nullInt(j.UniqueFor.Microseconds()), nullInt(j.Debounce.Microseconds()),
			j.HasDeps, int(j.DepPolicy), nullInt(j.Batch),
			nullInt(j.LeaseTimeout.Microseconds()), nullMicros(j.ResubmitAt), nullBytes(j.NextData)); err != nil {
			return fmt.Errorf("sqlite: load job %d: %w", j.ID, err)
		}
	}
	return nil
}

// Commit counts the groups' jobs, sets the next id and commits
// (store.Loader).
func (l *loader) Commit(ctx context.Context) error {
	defer l.close()
	tx := l.tx
	if _, err := tx.ExecContext(ctx, stmt("load_count_groups")); err != nil {
		return fmt.Errorf("sqlite: load: count the groups: %w", err)
	}
	if l.next > 1 {
		if _, err := tx.ExecContext(ctx, stmt("load_forget_id")); err != nil {
			return fmt.Errorf("sqlite: load: %w", err)
		}
		if _, err := tx.ExecContext(ctx, stmt("load_next_id"), l.next-1); err != nil {
			return fmt.Errorf("sqlite: load: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: load: commit: %w", err)
	}
	return nil
}

// Rollback leaves the database as it was (store.Loader).
func (l *loader) Rollback() error {
	err := l.tx.Rollback()
	l.close()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

func (l *loader) close() {
	if l.job != nil {
		l.job.Close()
	}
	l.conn.Close()
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return micros(t)
}

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
