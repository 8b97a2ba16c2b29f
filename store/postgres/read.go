package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// jobColumns is what a Job is read from. Every column has a type that both
// pgx and database/sql scan into plain Go values.
const jobColumns = `id, type, key, grp, priority, state, run_at, data, attempt, max_attempts,
	backoff_base, backoff_max, token, worker, lease_until, cancel_requested, resubmit,
	progress, last_error, errors::text, result, created_at, started_at, finished_at, updated_at, meta,
	repeat, missed, slot, retry_after, parent_id, has_children, bedrock_id, prev_started_at, run_timeout, expires_at, expired,
	unique_for, debounce,
	has_deps, dep_policy, batch_id`

func prefixed(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

type scanner interface{ Scan(dest ...any) error }

func utc(t time.Time) time.Time { return t.UTC() }

// pgTime is nullTime for pgx's type.
func pgTime(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func nullTime(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// jobScan reads rows of jobColumns (and, after them, extra destinations)
// into jobs, reusing its temporaries and its destination list from row to
// row: Scan's destinations escape to the heap, so scanning into fresh
// locals allocated about 1.7 KB per job, which a drain pays for every job it
// claims. Nullable columns scan into pgx's own types, not database/sql's,
// which go through its Scanner interface, a conversion per column.
type jobScan struct {
	id                                  int64
	typ, group                          string
	key, token, worker, lastErr, errs   pgtype.Text
	meta, repeat                        pgtype.Text
	leaseUntil, started, finished       pgtype.Timestamptz
	slot, prev, expiresAt               pgtype.Timestamptz
	retryAfter, parent, bedrockID       pgtype.Int8
	timeout, uniqueFor, debounce, batch pgtype.Int8
	runAt, created, updated             time.Time
	base, maxB, prio, attempt, maxAtt   int64
	state, missed                       int16
	cancelRequested, resubmit, kids     bool
	expired                             bool
	hasDeps                             bool
	depPolicy                           int16
	progress                            float64
	data, result                        []byte
	dest                                []any
}

func newJobScan(extra ...any) *jobScan {
	s := &jobScan{}
	s.dest = append([]any{&s.id, &s.typ, &s.key, &s.group, &s.prio, &s.state, &s.runAt, &s.data, &s.attempt, &s.maxAtt,
		&s.base, &s.maxB, &s.token, &s.worker, &s.leaseUntil, &s.cancelRequested, &s.resubmit,
		&s.progress, &s.lastErr, &s.errs, &s.result, &s.created, &s.started, &s.finished, &s.updated, &s.meta,
		&s.repeat, &s.missed, &s.slot, &s.retryAfter, &s.parent, &s.kids, &s.bedrockID, &s.prev, &s.timeout, &s.expiresAt, &s.expired,
		&s.uniqueFor, &s.debounce, &s.hasDeps, &s.depPolicy, &s.batch}, extra...)
	return s
}

// scan reads sc's current row into j (the whole of it).
func (s *jobScan) scan(sc scanner, j *store.Job) error {
	s.data, s.result = nil, nil // pgx reuses a non-nil slice's memory
	if err := sc.Scan(s.dest...); err != nil {
		return err
	}
	*j = store.Job{ID: s.id, Type: s.typ, Group: s.group, CancelRequested: s.cancelRequested, Resubmit: s.resubmit,
		Progress: s.progress, HasChildren: s.kids}
	j.Schedule, j.Missed, j.Slot = s.repeat.String, store.Missed(s.missed), pgTime(s.slot)
	j.RetryAfter = time.Duration(s.retryAfter.Int64) * time.Microsecond
	j.Timeout = time.Duration(s.timeout.Int64) * time.Microsecond
	j.ExpiresAt, j.Expired = pgTime(s.expiresAt), s.expired
	j.UniqueFor = time.Duration(s.uniqueFor.Int64) * time.Microsecond
	j.Debounce = time.Duration(s.debounce.Int64) * time.Microsecond
	j.Batch = s.batch.Int64
	j.Parent, j.BedrockID = s.parent.Int64, s.bedrockID.Int64
	j.PrevStartedAt = pgTime(s.prev)
	j.HasDeps, j.DepPolicy = s.hasDeps, store.DepPolicy(s.depPolicy)
	if s.meta.Valid {
		var err error
		if j.Meta, err = backend.ParseMetaJSON([]byte(s.meta.String)); err != nil {
			return fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	j.Key, j.Token, j.Worker, j.LastError = s.key.String, s.token.String, s.worker.String, s.lastErr.String
	j.Priority, j.Attempt, j.MaxAttempts = int(s.prio), int(s.attempt), int(s.maxAtt)
	j.State = store.State(s.state)
	j.RunAt = utc(s.runAt)
	j.Data = s.data
	j.BackoffBase, j.BackoffMax = time.Duration(s.base)*time.Microsecond, time.Duration(s.maxB)*time.Microsecond
	j.LeaseUntil = pgTime(s.leaseUntil)
	if len(s.result) > 0 {
		j.Result = s.result
	}
	if s.errs.Valid && s.errs.String != "" {
		if err := json.Unmarshal([]byte(s.errs.String), &j.Errors); err != nil {
			return fmt.Errorf("job %d: decode errors: %w", j.ID, err)
		}
	}
	j.CreatedAt, j.UpdatedAt = utc(s.created), utc(s.updated)
	j.StartedAt, j.FinishedAt = pgTime(s.started), pgTime(s.finished)
	return nil
}

// scanJobs reads every row of r as a job.
func scanJobs(r rows, err error) ([]store.Job, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []store.Job
	js := newJobScan()
	for r.Next() {
		out = append(out, store.Job{})
		if err := js.scan(r, &out[len(out)-1]); err != nil {
			return nil, err
		}
	}
	return out, r.Err()
}

// bothTables is one of accept.go's inline queries over the hot and the
// ended table: %s stands for the table, and the two parts are combined
// with UNION ALL. A job is in exactly one of them in any snapshot.
func bothTables(part string) string {
	return fmt.Sprintf(part, "rota.jobs") + " UNION ALL " + fmt.Sprintf(part, "rota.jobs_ended")
}

// Get returns jobs by id, in order; missing ids give zero Jobs.
func (s *Store) Get(ctx context.Context, ids []int64) ([]store.Job, error) {
	if s.closed.Load() {
		return nil, s.wrap("get", store.ErrClosed)
	}
	out := make([]store.Job, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var jobs []store.Job
	err := s.read(ctx, "get", func(t *txn) error {
		var err error
		jobs, err = scanJobs(t.rows("jobs_by_id", ids))
		return err
	})
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]store.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for i, id := range ids {
		out[i] = byID[id]
	}
	return backend.JobsInReach(out, store.ReachOf(ctx)), nil
}

// GetByKey returns the job with this type, group and key.
func (s *Store) GetByKey(ctx context.Context, typ, group, key string) (store.Job, error) {
	if s.closed.Load() {
		return store.Job{}, s.wrap("get by key", store.ErrClosed)
	}
	if typ == "" || key == "" {
		return store.Job{}, check.Invalidf("type and key are both required")
	}
	notFound := fmt.Errorf("type %q group %q key %q: %w", typ, group, key, store.ErrNotFound)
	if !pgText(typ) || !pgText(group) || !pgText(key) { // no job can have them
		return store.Job{}, notFound
	}
	var jobs []store.Job
	err := s.read(ctx, "get by key", func(t *txn) error {
		var err error
		jobs, err = scanJobs(t.rows("job_by_key", typ, group, key))
		return err
	})
	if err != nil {
		return store.Job{}, err
	}
	if len(jobs) == 0 || !store.ReachOf(ctx).Has(typ, group) {
		return store.Job{}, notFound
	}
	return jobs[0], nil
}

// List returns a page of jobs in id order: of the jobs in the reach ctx
// carries (backend.ListInReach), when it carries one.
func (s *Store) List(ctx context.Context, p store.ListParams) (store.ListResult, error) {
	if s.closed.Load() {
		return store.ListResult{}, s.wrap("list", store.ErrClosed)
	}
	if err := check.List(&p); err != nil {
		return store.ListResult{}, err
	}
	return backend.ListInReach(p, store.ReachOf(ctx), func(p store.ListParams) ([]store.Job, error) { return s.list(ctx, p) })
}

// list reads up to p.Limit+1 jobs in id order.
func (s *Store) list(ctx context.Context, p store.ListParams) ([]store.Job, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// Names that cannot be text match no job (and would fail the query).
	valid := func(names []string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(s string) bool { return !pgText(s) })
	}
	if len(p.Types) > 0 {
		where = append(where, "type = ANY("+arg(valid(p.Types))+")")
	}
	if len(p.States) > 0 {
		states := make([]int16, len(p.States))
		for i, st := range p.States {
			states[i] = int16(st)
		}
		where = append(where, "state = ANY("+arg(states)+")")
	}
	if len(p.Groups) > 0 {
		where = append(where, "grp = ANY("+arg(valid(p.Groups))+")")
	}
	if rs := backend.GroupRanges(store.ReachOf(ctx)); rs != nil {
		// Only the groups a caller's reach may hold (backend.ListInReach
		// keeps exactly those in reach): a tenant's listing does not read
		// every other tenant's jobs. grp is COLLATE "C": byte order.
		var or []string
		for _, rg := range rs {
			c := "grp >= " + arg(rg[0])
			if rg[1] != "" {
				c += " AND grp < " + arg(rg[1])
			}
			or = append(or, c)
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	if p.Parent != 0 {
		where = append(where, "parent_id = "+arg(p.Parent))
	}
	if p.Recurring {
		where = append(where, "repeat IS NOT NULL AND repeat <> ''")
	}
	if !p.UpdatedSince.IsZero() {
		where = append(where, "updated_at >= "+arg(p.UpdatedSince))
	}
	order := "ASC"
	if p.Descending {
		order = "DESC"
		if p.After > 0 {
			where = append(where, "id < "+arg(p.After))
		}
	} else if p.After > 0 {
		where = append(where, "id > "+arg(p.After))
	}
	limit := arg(p.Limit + 1)
	// The one statement assembled in Go: a listing's filters are each
	// optional, and a filter left out must leave no condition behind,
	// or the planner, which plans once for any values, could not use the
	// index each filter has. Values are parameters; only the conditions
	// and the schema's tables (fixed at open) are put in the text.
	part := `(SELECT ` + jobColumns + ` FROM %s`
	if len(where) > 0 {
		part += " WHERE " + strings.Join(where, " AND ")
	}
	part += " ORDER BY id " + order + " LIMIT " + limit + ")"
	q := fmt.Sprintf(part, s.schema+".jobs") + " UNION ALL " + fmt.Sprintf(part, s.schema+".jobs_ended") +
		" ORDER BY id " + order + " LIMIT " + limit
	var jobs []store.Job
	err := s.read(ctx, "list", func(t *txn) error {
		var err error
		jobs, err = scanJobs(t.db.query(t.ctx, q, args...))
		return err
	})
	return jobs, err
}

// Stats counts jobs by type, group and state in one snapshot, of the
// types and groups in the reach ctx carries. It reads every row, so it costs in proportion to both tables: fine for an
// operator's view, not for a hot path.
func (s *Store) Stats(ctx context.Context) ([]store.Count, error) {
	if s.closed.Load() {
		return nil, s.wrap("stats", store.ErrClosed)
	}
	var out []store.Count
	err := s.read(ctx, "stats", func(t *txn) error {
		out = out[:0]
		r, err := t.rows("stats", us(store.DefaultRetention))
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var c store.Count
			var state int16
			if err := r.Scan(&c.Type, &c.Group, &state, &c.Jobs, &c.Expired); err != nil {
				return err
			}
			c.State = store.State(state)
			out = append(out, c)
		}
		return r.Err()
	})
	if err != nil {
		return nil, err
	}
	return backend.CountsInReach(out, store.ReachOf(ctx)), nil
}

// TypeConfigs lists the known types, as every node sees them.
func (s *Store) TypeConfigs(ctx context.Context) ([]store.TypeConfig, error) {
	if s.closed.Load() {
		return nil, s.wrap("type configs", store.ErrClosed)
	}
	var out []store.TypeConfig
	err := s.read(ctx, "type configs", func(t *txn) error {
		out = out[:0]
		var err error
		out, err = scanTypeConfigs(t.rows("type_configs"))
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.TypeConfig) int { return cmp.Compare(a.Type, b.Type) })
	return out, nil
}

// scanTypeConfigs reads the rows of type_configs.
func scanTypeConfigs(r rows, err error) ([]store.TypeConfig, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []store.TypeConfig
	for r.Next() {
		var c store.TypeConfig
		var us, high, low, gmax, ret, fret, tmax, timeout, rn, rper, burst int64
		if err := r.Scan(&c.Type, &us, &high, &low, &gmax, &c.Paused, &ret, &fret, &tmax, &timeout, &rn, &rper, &burst); err != nil {
			return nil, err
		}
		c.Rate = store.Rate{N: int(rn), Per: time.Duration(rper) * time.Microsecond}
		c.Burst = int(burst)
		c.Bands = store.Bands{High: int(high), Low: int(low)}
		c.GroupMaxRunning = int(gmax)
		c.MaxRunning = int(tmax)
		c.Timeout = time.Duration(timeout) * time.Microsecond
		c.LeaseTimeout = time.Duration(us) * time.Microsecond
		c.Retention = cmp.Or(time.Duration(ret)*time.Microsecond, store.DefaultRetention)
		c.FailedRetention = time.Duration(fret) * time.Microsecond
		if c.LeaseTimeout == 0 {
			c.LeaseTimeout = store.DefaultLeaseTimeout
		}
		out = append(out, c)
	}
	return out, r.Err()
}

// ---- known types ----

// reloadTypes replaces the known types with the types table.
func (s *Store) reloadTypes(ctx context.Context) error {
	var names []string
	err := s.read(ctx, "load types", func(t *txn) error {
		names = names[:0]
		r, err := t.rows("type_names")
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var n string
			if err := r.Scan(&n); err != nil {
				return err
			}
			names = append(names, n)
		}
		return r.Err()
	})
	if err != nil {
		return err
	}
	s.typesMu.Lock()
	for _, n := range names {
		s.types[n] = struct{}{}
	}
	s.typesMu.Unlock()
	return nil
}

// resolve turns type names and patterns into the known type names they
// match. Literal names are kept even when unknown.
func (s *Store) resolve(pats []glob.Pattern) []string {
	s.typesMu.RLock()
	defer s.typesMu.RUnlock()
	return glob.MatchTypes(pats, maps.Keys(s.types))
}

func (s *Store) knownTypes() int {
	s.typesMu.RLock()
	defer s.typesMu.RUnlock()
	return len(s.types)
}

// unknownTypes returns the names among jobs' types that are not known to
// be in the types table.
func (s *Store) unknownTypes(jobs []store.AddParams) []string {
	var out []string
	s.typesMu.RLock()
	for _, j := range jobs {
		if _, ok := s.types[j.Type]; !ok {
			out = append(out, j.Type)
		}
	}
	s.typesMu.RUnlock()
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *Store) addTypes(names []string) {
	if len(names) == 0 {
		return
	}
	s.typesMu.Lock()
	for _, n := range names {
		s.types[n] = struct{}{}
	}
	s.typesMu.Unlock()
}

// BedrockIDs returns the jobs' Bedrock ids, giving one to those that have
// none (store.BedrockIDs). A new id is checked against both tables, so
// that a job moving between them keeps a unique one.
func (s *Store) BedrockIDs(ctx context.Context, ids []int64) (map[int64]int64, error) {
	if err := check.IDs(ids); err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	err := s.inTx(ctx, "bedrock ids", func(t *txn) error {
		clear(out)
		return t.bedrockIDs(ids, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bedrockIDs puts the jobs' Bedrock ids in out, giving one to those that
// have none.
func (t *txn) bedrockIDs(ids []int64, out map[int64]int64) error {
	rs, err := t.Lock(ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if rs[id] == nil {
			continue
		}
		var bid *int64
		if _, err := t.row("bedrock_id", []any{id}, &bid); err != nil {
			return err
		}
		for tries := 0; bid == nil; tries++ {
			if tries == 4 {
				return fmt.Errorf("give job %d a bedrock id: four random ids were taken", id)
			}
			v := backend.NewBedrockID()
			n, err := t.run("set_bedrock_id_hot", id, v)
			if err != nil {
				return err
			}
			k, err := t.run("set_bedrock_id_ended", id, v)
			if err != nil {
				return err
			}
			n += k
			if n == 1 {
				bid = &v
			}
		}
		out[id] = *bid
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
	err := s.read(ctx, "by bedrock id", func(t *txn) error {
		clear(out)
		r, err := t.rows("ids_by_bedrock_id", bids)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var bid, id int64
			if err := r.Scan(&bid, &id); err != nil {
				return err
			}
			out[bid] = id
		}
		return r.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Deps returns job id's dependencies with their outcomes and up to limit
// of its dependants (store.DepsReader).
func (s *Store) Deps(ctx context.Context, id int64, limit int) ([]store.Dep, []int64, error) {
	deps, err := s.depsOf(ctx, []int64{id})
	if err != nil {
		return nil, nil, err
	}
	var after []int64
	err = s.read(ctx, "read dependants", func(t *txn) error {
		after = after[:0]
		r, err := t.rows("dependants_of", id, max(limit, 1))
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var d int64
			if err := r.Scan(&d); err != nil {
				return err
			}
			after = append(after, d)
		}
		return r.Err()
	})
	if err != nil {
		return nil, nil, err
	}
	return deps[id], after, nil
}

// depsOf reads the dependencies of jobs ids with their outcomes, by
// dependant, in the order each named them.
func (s *Store) depsOf(ctx context.Context, ids []int64) (map[int64][]store.Dep, error) {
	out := map[int64][]store.Dep{}
	err := s.read(ctx, "read dependencies", func(t *txn) error {
		clear(out)
		r, err := t.rows("deps_of", ids)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var of int64
			var d store.Dep
			var state int16
			var key, lastErr pgtype.Text
			var result []byte
			if err := r.Scan(&of, &d.ID, &d.Removed, &d.Type, &key, &d.Group, &state, &result, &lastErr); err != nil {
				return err
			}
			d.State, d.Key = store.State(state), key.String
			if len(result) > 0 {
				d.Result = result
			}
			if d.State != store.Completed {
				d.Error = lastErr.String
			}
			out[of] = append(out[of], d)
		}
		return r.Err()
	})
	return out, err
}
