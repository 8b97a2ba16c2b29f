package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/store"
)

var _ store.Copier = (*Store)(nil)

// jobCopyColumns are the job columns a copy carries, in the order its
// statements name them: jobColumns, then the columns reads leave out.
var jobCopyColumns = append(strings.Split(strings.NewReplacer("\n", "", "\t", "", " ", "", "::text", "").Replace(jobColumns), ","),
	"lease_timeout", "resubmit_at", "next_data")

// copyColumns are the columns of each table that a copy carries.
// TestCopyCoversSchema checks them against the schema, so a column or
// table added by a migration must be named here (or in notCopied) before
// the copy can be trusted with it.
var copyColumns = map[string][]string{
	"jobs":       jobCopyColumns,
	"jobs_ended": jobCopyColumns,
	"types": {"name", "lease_timeout", "updated_at", "bands_high", "bands_low", "group_max_running", "vclock",
		"paused", "retention", "failed_retention", "max_running", "run_timeout", "rate_n", "rate_per", "burst"},
	"groups":       {"type", "grp", "turn", "band_count"},
	"group_config": {"grp", "type", "max_running", "weight", "paused", "rate_n", "rate_per", "burst"},
	"tokens":       {"name", "hash", "groups", "types", "read_only", "created_at"},
}

// notCopied are the tables and columns a copy leaves out, and why.
var notCopied = map[string]string{
	"audit":                "the audit trail stays with the deployment that recorded it: a copy starts a trail of its own (docs/concepts.md)",
	"groups.pending":       "counted from the jobs loaded",
	"pending_changes":      "changes of groups.pending not folded yet: the loaded counts are counted from the jobs loaded",
	"schema_migrations":    "the destination's schema is its own, migrated when it opens",
	"job_logs":             "per-job logs are diagnostics of runs on the source; a copy starts without them",
	"job_log_attempts":     "per-job logs are diagnostics of runs on the source; a copy starts without them",
	"jobs.run_limit":       "the running attempt's timeout, set by its claim; a copied run is held to the job's own",
	"jobs_ended.run_limit": "the last attempt's timeout, set by its claim; an ended job has no run",
	// rota copy does not carry dependencies yet (docs/cli.md says so):
	// copy a deployment whose workflows have ended.
	"deps":                      "dependencies are not copied yet",
	"jobs.deps_waiting":         "dependencies are not copied yet",
	"jobs.has_dependants":       "dependencies are not copied yet",
	"jobs_ended.deps_waiting":   "dependencies are not copied yet",
	"jobs_ended.has_dependants": "dependencies are not copied yet",
	"types.tokens":              "a rate's bucket starts full in the destination",
	"types.refilled_at":         "a rate's bucket starts full in the destination",
	"group_config.tokens":       "a rate's bucket starts full in the destination",
	"group_config.refilled_at":  "a rate's bucket starts full in the destination",
	"batches":                   "batches are not carried yet: a copied member keeps its batch id, and its ending counts nowhere",
}

// Export calls fn with everything the schema holds, from one snapshot (a
// repeatable-read transaction) (store.Copier).
func (s *Store) Export(ctx context.Context, size int, fn func(*store.CopyBatch) error) error {
	// The groups' pending counts are appended (pending_changes) until a
	// claim or the sweep folds them: a group whose jobs were added since
	// has no row yet. Folded first, the snapshot's groups are whole.
	if _, err := s.pool.Exec(ctx, s.stmt("fold_all")); err != nil {
		return s.wrap("export: fold the groups' pending counts", err)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s.wrap("export", err)
	}
	defer tx.Rollback(context.Background())
	first := &store.CopyBatch{}
	if err := s.exportSettings(ctx, tx, first); err != nil {
		return s.wrap("export", err)
	}
	if err := fn(first); err != nil {
		return err
	}
	var leaseTimeout pgtype.Int8
	var resubmitAt pgtype.Timestamptz
	var nextData []byte
	sc := newJobScan(&leaseTimeout, &resubmitAt, &nextData)
	b := &store.CopyBatch{}
	var after int64
	for {
		b.Jobs = b.Jobs[:0]
		rows, err := tx.Query(ctx, s.stmt("export_jobs"), after, size)
		if err != nil {
			return s.wrap("export jobs", err)
		}
		for rows.Next() {
			nextData = nil
			var cj store.CopyJob
			if err := sc.scan(rows, &cj.Job); err != nil {
				rows.Close()
				return s.wrap("export jobs", err)
			}
			cj.LeaseTimeout = time.Duration(leaseTimeout.Int64) * time.Microsecond
			cj.ResubmitAt = pgTime(resubmitAt)
			cj.NextData = nextData
			b.Jobs = append(b.Jobs, cj)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.wrap("export jobs", err)
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

func (s *Store) exportSettings(ctx context.Context, tx pgx.Tx, b *store.CopyBatch) error {
	rows, err := tx.Query(ctx, s.stmt("export_types"))
	if err != nil {
		return err
	}
	for rows.Next() {
		var t store.CopyType
		var lease, retention, failed, timeout, per int64
		if err := rows.Scan(&t.Name, &lease, &t.UpdatedAt, &t.BandsHigh, &t.BandsLow, &t.GroupMaxRunning, &t.VClock,
			&t.Paused, &retention, &failed, &t.MaxRunning, &timeout, &t.RateN, &per, &t.Burst); err != nil {
			rows.Close()
			return err
		}
		t.UpdatedAt = t.UpdatedAt.UTC()
		t.LeaseTimeout, t.Retention = time.Duration(lease)*time.Microsecond, time.Duration(retention)*time.Microsecond
		t.FailedRetention = time.Duration(failed) * time.Microsecond
		t.Timeout = time.Duration(timeout) * time.Microsecond
		t.RatePer = time.Duration(per) * time.Microsecond
		b.Types = append(b.Types, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = tx.Query(ctx, s.stmt("export_groups"))
	if err != nil {
		return err
	}
	for rows.Next() {
		var g store.CopyGroup
		if err := rows.Scan(&g.Type, &g.Group, &g.Turn, &g.BandCount); err != nil {
			rows.Close()
			return err
		}
		b.Groups = append(b.Groups, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = tx.Query(ctx, s.stmt("export_group_config"))
	if err != nil {
		return err
	}
	for rows.Next() {
		var g store.CopyGroupConfig
		var per int64
		if err := rows.Scan(&g.Group, &g.Type, &g.MaxRunning, &g.Weight, &g.Paused, &g.RateN, &per, &g.Burst); err != nil {
			rows.Close()
			return err
		}
		g.RatePer = time.Duration(per) * time.Microsecond
		b.GroupConfig = append(b.GroupConfig, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = tx.Query(ctx, s.stmt("export_tokens"))
	if err != nil {
		return err
	}
	for rows.Next() {
		var t store.CopyToken
		if err := rows.Scan(&t.Name, &t.Hash, &t.Groups, &t.Types, &t.ReadOnly, &t.CreatedAt); err != nil {
			rows.Close()
			return err
		}
		t.CreatedAt = t.CreatedAt.UTC()
		b.Tokens = append(b.Tokens, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return tx.QueryRow(ctx, s.stmt("export_next_id"), s.schema+".jobs").Scan(&b.NextID, &b.TotalJobs)
}

// loader is a load in one transaction.
type loader struct {
	s    *Store
	tx   pgx.Tx
	next int64
	hot  [][]any // rows for jobs and jobs_ended, reused from batch to batch
	end  [][]any
}

// BeginLoad starts a load (store.Copier).
func (s *Store) BeginLoad(ctx context.Context, replace bool) (store.Loader, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, s.wrap("load", err)
	}
	fail := func(err error) (store.Loader, error) {
		tx.Rollback(context.Background())
		return nil, err
	}
	var jobs, types, configs, tokens int64
	if err := tx.QueryRow(ctx, s.stmt("load_counts")).
		Scan(&jobs, &types, &configs, &tokens); err != nil {
		return fail(s.wrap("load", err))
	}
	if jobs+types+configs+tokens > 0 {
		if !replace {
			return fail(fmt.Errorf("%w: schema %s holds %d jobs, %d types, %d group settings and %d tokens",
				store.ErrNotEmpty, s.cfg.Schema, jobs, types, configs, tokens))
		}
		if _, err := tx.Exec(ctx, s.stmt("load_empty")); err != nil {
			return fail(s.wrap("load: empty the schema", err))
		}
	}
	return &loader{s: s, tx: tx}, nil
}

// Write inserts a batch (store.Loader): settings with INSERT, jobs with
// COPY into the table of their state.
func (l *loader) Write(ctx context.Context, b *store.CopyBatch) error {
	s, tx := l.s, l.tx
	if b.NextID != 0 {
		l.next = b.NextID
	}
	for _, t := range b.Types {
		if _, err := tx.Exec(ctx, s.stmt("load_type"),
			t.Name, t.LeaseTimeout.Microseconds(), t.UpdatedAt, t.BandsHigh, t.BandsLow, t.GroupMaxRunning, t.VClock,
			t.Paused, t.Retention.Microseconds(), t.FailedRetention.Microseconds(), t.MaxRunning, t.Timeout.Microseconds(),
			t.RateN, t.RatePer.Microseconds(), t.Burst); err != nil {
			return s.wrap(fmt.Sprintf("load type %q", t.Name), err)
		}
	}
	for _, g := range b.Groups {
		if _, err := tx.Exec(ctx, s.stmt("load_group"),
			g.Type, g.Group, g.Turn, g.BandCount); err != nil {
			return s.wrap(fmt.Sprintf("load group %q of type %q", g.Group, g.Type), err)
		}
	}
	for _, g := range b.GroupConfig {
		if _, err := tx.Exec(ctx, s.stmt("load_group_config"),
			g.Group, g.Type, g.MaxRunning, g.Weight, g.Paused, g.RateN, g.RatePer.Microseconds(), g.Burst); err != nil {
			return s.wrap(fmt.Sprintf("load settings of group %q", g.Group), err)
		}
	}
	for _, t := range b.Tokens {
		if _, err := tx.Exec(ctx, s.stmt("load_token"),
			t.Name, t.Hash, nonNil(t.Groups), nonNil(t.Types), t.ReadOnly, t.CreatedAt); err != nil {
			return s.wrap(fmt.Sprintf("load token %q", t.Name), err)
		}
	}
	l.hot, l.end = l.hot[:0], l.end[:0]
	for i := range b.Jobs {
		j := &b.Jobs[i]
		var errs, result, meta any
		if len(j.Errors) > 0 {
			e, err := json.Marshal(j.Errors)
			if err != nil {
				return fmt.Errorf("postgres: load job %d: %w", j.ID, err)
			}
			errs = string(e)
		}
		if len(j.Result) > 0 {
			result = []byte(j.Result)
		}
		if len(j.Meta) > 0 {
			meta = string(backend.MetaJSON(j.Meta))
		}
		// In the order of jobCopyColumns.
		row := []any{j.ID, j.Type, optString(j.Key), j.Group, int64(j.Priority), int16(j.State), j.RunAt, []byte(j.Data),
			int64(j.Attempt), int64(j.MaxAttempts), j.BackoffBase.Microseconds(), j.BackoffMax.Microseconds(),
			optString(j.Token), optString(j.Worker), optTime(j.LeaseUntil), j.CancelRequested, j.Resubmit,
			j.Progress, optString(j.LastError), errs, result, j.CreatedAt, optTime(j.StartedAt), optTime(j.FinishedAt),
			j.UpdatedAt, meta, optString(j.Schedule), int16(j.Missed), optTime(j.Slot), optInt(j.RetryAfter.Microseconds()),
			optInt(j.Parent), j.HasChildren, optInt(j.BedrockID), optTime(j.PrevStartedAt), optInt(j.Timeout.Microseconds()),
			optTime(j.ExpiresAt), j.Expired, optInt(j.UniqueFor.Microseconds()), optInt(j.Debounce.Microseconds()),
			j.HasDeps, int16(j.DepPolicy), optInt(j.Batch),
			optInt(j.LeaseTimeout.Microseconds()), optTime(j.ResubmitAt), optBytes(j.NextData)}
		if j.State.Terminal() {
			l.end = append(l.end, row)
		} else {
			l.hot = append(l.hot, row)
		}
	}
	for _, part := range []struct {
		table string
		rows  [][]any
	}{{"jobs", l.hot}, {"jobs_ended", l.end}} {
		if len(part.rows) == 0 {
			continue
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{s.cfg.Schema, part.table}, jobCopyColumns, pgx.CopyFromRows(part.rows)); err != nil {
			return s.wrap("load jobs into "+part.table, err)
		}
	}
	return nil
}

// Commit counts the groups' pending jobs, sets the next id and commits
// (store.Loader).
func (l *loader) Commit(ctx context.Context) error {
	s, tx := l.s, l.tx
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, s.stmt("load_count_groups")); err != nil {
		return s.wrap("load: count the groups", err)
	}
	if l.next > 1 {
		if _, err := tx.Exec(ctx, s.stmt("load_next_id"), s.schema+".jobs", l.next-1); err != nil {
			return s.wrap("load: set the next id", err)
		}
	}
	if _, err := tx.Exec(ctx, s.stmt("load_analyze")); err != nil {
		return s.wrap("load: analyze", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.wrap("load: commit", err)
	}
	return nil
}

// Rollback leaves the schema as it was (store.Loader).
func (l *loader) Rollback() error {
	err := l.tx.Rollback(context.Background())
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return err
}

func optBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return b
}

// Served reports whether a node serves the schema: whether another
// session holds the schema's sweep leadership, which every group of
// running nodes has one of them take within Config.LeaderRetry.
func (s *Store) Served(ctx context.Context) (bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, s.wrap("served", err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, s.leader.key()).Scan(&got); err != nil {
		return false, s.wrap("served", err)
	}
	if got {
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, s.leader.key()); err != nil {
			conn.Conn().Close(ctx) // the lock goes with the session
			return false, s.wrap("served", err)
		}
	}
	return !got, nil
}
