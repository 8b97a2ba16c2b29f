package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/store"
)

const jobColumns = `id, type, key, grp, priority, state, run_at, data, attempt, max_attempts,
	backoff_base, backoff_max, token, worker, lease_until, cancel_requested, resubmit,
	progress, last_error, errors, result, created_at, started_at, finished_at, updated_at, meta,
	coalesce(repeat, ''), missed, slot, coalesce(retry_after, 0), coalesce(parent_id, 0), has_children, coalesce(bedrock_id, 0),
	prev_started_at, coalesce(run_timeout, 0), expires_at, expired, coalesce(unique_for, 0), coalesce(debounce, 0),
	has_deps, dep_policy, coalesce(batch_id, 0)`

type scanner interface{ Scan(dest ...any) error }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromNullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

func micros(t time.Time) int64 { return t.UnixMicro() }

// jobColumnNames names jobColumns, for columns' errors.
var jobColumnNames = []string{"id", "type", "key", "grp", "priority", "state", "run_at", "data", "attempt", "max_attempts",
	"backoff_base", "backoff_max", "token", "worker", "lease_until", "cancel_requested", "resubmit",
	"progress", "last_error", "errors", "result", "created_at", "started_at", "finished_at", "updated_at", "meta",
	"repeat", "missed", "slot", "retry_after", "parent_id", "has_children", "bedrock_id", "prev_started_at", "run_timeout", "expires_at", "expired", "unique_for", "debounce",
	"has_deps", "dep_policy", "batch_id"}

// scanJob reads a row of jobColumns, through columns as the claim does.
func scanJob(sc scanner) (store.Job, error) {
	c := newColumns(jobColumnNames...)
	if err := c.scan(sc); err != nil {
		return store.Job{}, err
	}
	return jobFromColumns(c)
}

// jobFromColumns reads a job from the first columns of c, those of
// jobColumns.
func jobFromColumns(c *columns) (store.Job, error) {
	var j store.Job
	j.ID, j.Type, j.Key, j.Group = c.int64(0), c.str(1), c.nullStr(2), c.str(3)
	j.Priority, j.State, j.RunAt = c.int(4), store.State(c.int(5)), c.time(6)
	j.Data = c.bytes(7)
	j.Attempt, j.MaxAttempts = c.int(8), c.int(9)
	j.BackoffBase, j.BackoffMax = time.Duration(c.int64(10))*time.Microsecond, time.Duration(c.int64(11))*time.Microsecond
	j.Token, j.Worker, j.LeaseUntil = c.nullStr(12), c.nullStr(13), c.nullTime(14)
	j.CancelRequested, j.Resubmit = c.bool(15), c.bool(16)
	j.Progress, j.LastError = c.float(17), c.nullStr(18)
	errs := c.bytes(19)
	if result := c.bytes(20); len(result) > 0 {
		j.Result = result
	}
	j.CreatedAt, j.StartedAt, j.FinishedAt, j.UpdatedAt = c.time(21), c.nullTime(22), c.nullTime(23), c.time(24)
	meta := c.bytes(25)
	j.Schedule, j.Missed, j.Slot = c.str(26), store.Missed(c.uint8(27)), c.nullTime(28)
	j.RetryAfter = time.Duration(c.int64(29)) * time.Microsecond
	j.Timeout = time.Duration(c.int64(34)) * time.Microsecond
	j.ExpiresAt, j.Expired = c.nullTime(35), c.bool(36)
	j.UniqueFor, j.Debounce = time.Duration(c.int64(37))*time.Microsecond, time.Duration(c.int64(38))*time.Microsecond
	j.Batch = c.int64(41)
	j.Parent, j.HasChildren, j.BedrockID = c.int64(30), c.bool(31), c.int64(32)
	j.PrevStartedAt = c.nullTime(33)
	j.HasDeps, j.DepPolicy = c.bool(39), store.DepPolicy(c.uint8(40))
	if c.err != nil {
		return j, c.err
	}
	return j, decodeJSONColumns(&j, meta, errs)
}

// decodeJSONColumns reads a job's JSON columns, meta and errors, into j.
func decodeJSONColumns(j *store.Job, meta, errs []byte) error {
	var err error
	if j.Meta, err = backend.ParseMetaJSON(meta); err != nil {
		return fmt.Errorf("job %d: %w", j.ID, err)
	}
	if len(errs) > 0 {
		if err := json.Unmarshal(errs, &j.Errors); err != nil {
			return fmt.Errorf("job %d: decode errors: %w", j.ID, err)
		}
	}
	return nil
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
	// The ids travel as one JSON array (json_each), so that the
	// statement is one text for any number of them.
	list := make([]byte, 0, 12*len(ids))
	list = append(list, '[')
	for i, id := range ids {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, id, 10)
	}
	list = append(list, ']')
	rows, err := s.reader.QueryContext(ctx, stmt("jobs_by_id"), string(list))
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
	return backend.JobsInReach(out, store.ReachOf(ctx)), nil
}

// GetByKey returns the job with this type, group and key.
func (s *Store) GetByKey(ctx context.Context, typ, group, key string) (store.Job, error) {
	if typ == "" || key == "" {
		return store.Job{}, check.Invalidf("type and key are both required")
	}
	j, err := scanJob(s.reader.QueryRowContext(ctx, stmt("job_by_key"), typ, group, key))
	if errors.Is(err, sql.ErrNoRows) || err == nil && !store.ReachOf(ctx).Has(typ, group) {
		return store.Job{}, fmt.Errorf("type %q group %q key %q: %w", typ, group, key, store.ErrNotFound)
	}
	if err != nil {
		return store.Job{}, s.readErr(err)
	}
	return j, nil
}

// List returns a page of jobs in id order: of the jobs in the reach ctx
// carries (backend.ListInReach), when it carries one.
func (s *Store) List(ctx context.Context, p store.ListParams) (store.ListResult, error) {
	if err := check.List(&p); err != nil {
		return store.ListResult{}, err
	}
	return backend.ListInReach(p, store.ReachOf(ctx), func(p store.ListParams) ([]store.Job, error) { return s.list(ctx, p) })
}

// list reads up to p.Limit+1 jobs in id order.
func (s *Store) list(ctx context.Context, p store.ListParams) ([]store.Job, error) {
	var where []string
	var args []any
	in := func(col string, n int) string { return col + " IN (" + placeholders(n) + ")" }
	if len(p.Types) > 0 {
		where = append(where, in("type", len(p.Types)))
		for _, t := range p.Types {
			args = append(args, t)
		}
	}
	if len(p.Groups) > 0 {
		where = append(where, in("grp", len(p.Groups)))
		for _, g := range p.Groups {
			args = append(args, g)
		}
	}
	if rs := backend.GroupRanges(store.ReachOf(ctx)); rs != nil {
		// Only the groups a caller's reach may hold (backend.ListInReach
		// keeps exactly those in reach): a tenant's listing does not read
		// every other tenant's jobs.
		var or []string
		for _, rg := range rs {
			if rg[1] == "" {
				or, args = append(or, "grp >= ?"), append(args, rg[0])
			} else {
				or, args = append(or, "grp >= ? AND grp < ?"), append(args, rg[0], rg[1])
			}
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	if p.Parent != 0 {
		where = append(where, "parent_id = ?")
		args = append(args, p.Parent)
	}
	if p.Recurring {
		where = append(where, "repeat IS NOT NULL AND repeat != ''")
	}
	if !p.UpdatedSince.IsZero() {
		where = append(where, "updated_at >= ?")
		args = append(args, micros(p.UpdatedSince))
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
	var running bool
	var others []store.State
	for _, st := range p.States {
		if st == store.Running {
			running = true
		} else {
			others = append(others, st)
		}
	}
	var res store.ListResult
	var err error
	switch {
	case len(p.States) == 0:
		res.Jobs, err = s.listQuery(ctx, s.reader, "rota_jobs", where, args, order, p.Limit+1)
	case !running:
		res.Jobs, err = s.listQuery(ctx, s.reader, "rota_jobs", append(where, stateIn(others)), args, order, p.Limit+1)
	case len(others) == 0:
		// Running jobs are not in rota_jobs_state (migration 0004): they
		// come from the lease index.
		res.Jobs, err = s.listQuery(ctx, s.reader, "rota_jobs INDEXED BY rota_jobs_lease", append(slices.Clip(where), "state = 1"), args, order, p.Limit+1)
	default:
		// Running jobs from the lease index and the rest from the state
		// index, merged in id order; both read one snapshot, so that a job
		// changing state in between is neither listed twice nor missed.
		res.Jobs, err = s.listSnapshot(ctx, func(q querier) ([]store.Job, error) {
			jobs, err := s.listQuery(ctx, q, "rota_jobs INDEXED BY rota_jobs_lease", append(slices.Clip(where), "state = 1"), args, order, p.Limit+1)
			if err != nil {
				return nil, err
			}
			more, err := s.listQuery(ctx, q, "rota_jobs", append(slices.Clip(where), stateIn(others)), args, order, p.Limit+1)
			return append(jobs, more...), err
		})
		if err == nil {
			slices.SortFunc(res.Jobs, func(a, b store.Job) int {
				if p.Descending {
					return cmp.Compare(b.ID, a.ID)
				}
				return cmp.Compare(a.ID, b.ID)
			})
			// Past the first limit+1, one query's jobs may leave gaps
			// that the other's limit cut.
			res.Jobs = res.Jobs[:min(len(res.Jobs), p.Limit+1)]
		}
	}
	if err != nil {
		return nil, err
	}
	return res.Jobs, nil
}

// stateIn is the condition for states other than running; its "state !=
// 1" lets SQLite use the partial rota_jobs_state index.
func stateIn(states []store.State) string {
	var b strings.Builder
	b.WriteString("state IN (")
	for i, st := range states {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(st)))
	}
	b.WriteString(") AND state != 1")
	return b.String()
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// listSnapshot runs fn's queries in one read transaction on one reader
// connection. BEGIN is DEFERRED: the readers' default (_txlock=immediate)
// would take the write lock.
func (s *Store) listSnapshot(ctx context.Context, fn func(q querier) ([]store.Job, error)) ([]store.Job, error) {
	conn, err := s.reader.Conn(ctx)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return nil, s.readErr(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	return fn(conn)
}

// listQuery reads up to limit jobs from "from" in id order. Its
// statement is the one assembled in Go: a listing's filters are each
// optional, and the index hint and the IN lists depend on which are
// given; a filter left out leaves no condition behind, so that SQLite
// picks the index the given ones have. Values are parameters.
func (s *Store) listQuery(ctx context.Context, q querier, from string, where []string, args []any, order string, limit int) ([]store.Job, error) {
	query := `SELECT ` + jobColumns + ` FROM ` + from
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY id " + order + " LIMIT ?"
	rows, err := q.QueryContext(ctx, query, append(args[:len(args):len(args)], limit)...)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var jobs []store.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list: %w", err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return jobs, nil
}

// Stats counts jobs by type, group and state, of the types and groups in
// the reach ctx carries. It reads every row, so it costs in proportion to
// the table: fine for an operator's view, not for a hot path.
func (s *Store) Stats(ctx context.Context) ([]store.Count, error) {
	rows, err := s.reader.QueryContext(ctx, stmt("stats"), micros(s.cfg.Clock()), store.DefaultRetention.Microseconds())
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []store.Count
	for rows.Next() {
		var c store.Count
		var state int
		if err := rows.Scan(&c.Type, &c.Group, &state, &c.Jobs, &c.Expired); err != nil {
			return nil, fmt.Errorf("sqlite: stats: %w", err)
		}
		c.State = store.State(state)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return backend.CountsInReach(out, store.ReachOf(ctx)), nil
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

// BedrockIDs returns the jobs' Bedrock ids, giving one to those that have
// none (store.BedrockIDs).
func (s *Store) BedrockIDs(ctx context.Context, ids []int64) (map[int64]int64, error) {
	if err := check.IDs(ids); err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	err := s.write(ctx, true, func(w *txn) error {
		clear(out)
		return w.bedrockIDs(ids, out)
	})
	return out, err
}

// bedrockIDs puts the jobs' Bedrock ids in out, giving one to those that
// have none.
func (w *txn) bedrockIDs(ids []int64, out map[int64]int64) error {
	for _, id := range ids {
		var bid sql.NullInt64
		err := w.row("bedrock_id", id).Scan(&bid)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sqlite: bedrock id of job %d: %w", id, err)
		}
		for tries := 0; !bid.Valid; tries++ {
			v := backend.NewBedrockID()
			if _, err := w.run("set_bedrock_id", v, id); err == nil {
				bid = sql.NullInt64{Int64: v, Valid: true}
			} else if tries == 3 {
				return fmt.Errorf("sqlite: give job %d a bedrock id: %w", id, err)
			}
		}
		out[id] = bid.Int64
	}
	return nil
}

// withBedrockIDs gives the jobs added with AddParams.BedrockID their
// Bedrock ids (by assign, in the add's transaction), in their results.
func withBedrockIDs(ps []store.AddParams, out []store.AddResult, assign func([]int64, map[int64]int64) error) error {
	var ids []int64
	for i := range ps {
		if ps[i].BedrockID {
			ids = append(ids, out[i].Job.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	bids := make(map[int64]int64, len(ids))
	if err := assign(ids, bids); err != nil {
		return err
	}
	for i := range ps {
		if ps[i].BedrockID {
			out[i].Job.BedrockID = bids[out[i].Job.ID]
		}
	}
	return nil
}

// ByBedrockID returns the rota ids of jobs by their Bedrock ids.
func (s *Store) ByBedrockID(ctx context.Context, bids []int64) (map[int64]int64, error) {
	out := map[int64]int64{}
	for _, bid := range bids {
		var id int64
		err := s.reader.QueryRowContext(ctx, stmt("id_by_bedrock_id"), bid).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, s.readErr(err)
		}
		out[bid] = id
	}
	return out, nil
}

// Deps returns job id's dependencies with their outcomes and up to limit
// of its dependants (store.DepsReader).
func (s *Store) Deps(ctx context.Context, id int64, limit int) ([]store.Dep, []int64, error) {
	deps, err := s.depsOf(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.reader.QueryContext(ctx, stmt("dependants_of"), id, max(limit, 1))
	if err != nil {
		return nil, nil, s.readErr(err)
	}
	defer rows.Close()
	var after []int64
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			return nil, nil, s.readErr(err)
		}
		after = append(after, d)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.readErr(err)
	}
	return deps, after, nil
}

// depsOf reads job id's dependencies with their outcomes, in the order
// it named them.
func (s *Store) depsOf(ctx context.Context, id int64) ([]store.Dep, error) {
	rows, err := s.reader.QueryContext(ctx, stmt("deps_of"), id)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []store.Dep
	for rows.Next() {
		var d store.Dep
		var state int
		var key, lastErr sql.NullString
		var result []byte
		if err := rows.Scan(&d.ID, &d.Removed, &d.Type, &key, &d.Group, &state, &result, &lastErr); err != nil {
			return nil, s.readErr(err)
		}
		d.State, d.Key = store.State(state), key.String
		if len(result) > 0 {
			d.Result = result
		}
		if d.State != store.Completed {
			d.Error = lastErr.String
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}
