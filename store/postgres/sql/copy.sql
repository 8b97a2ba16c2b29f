-- Export and load of a whole schema (copy.go, store.Copier). The columns
-- each carries are copyColumns, which TestCopyCoversSchema checks against
-- the schema.

-- name: export_jobs
-- A page of jobs of both tables in id order, merged from their primary
-- keys (jobCopyColumns, errors as text).
-- $1 the last id of the previous page (0 first), $2 the page's size.
SELECT {{exportJobColumns}} FROM (
		(SELECT {{copyColumns "jobs"}} FROM {{schema}}.jobs WHERE id > $1 ORDER BY id LIMIT $2)
		UNION ALL (SELECT {{copyColumns "jobs"}} FROM {{schema}}.jobs_ended WHERE id > $1 ORDER BY id LIMIT $2)) j ORDER BY id LIMIT $2;

-- name: export_types
SELECT {{copyColumns "types"}} FROM {{schema}}.types ORDER BY name;

-- name: export_groups
SELECT type, grp, turn, band_count FROM {{schema}}.groups ORDER BY type, grp;

-- name: export_group_config
SELECT grp, type, max_running, weight, paused, rate_n, rate_per, burst FROM {{schema}}.group_config ORDER BY grp, type;

-- name: export_tokens
SELECT name, hash, groups, types, read_only, created_at FROM {{schema}}.tokens ORDER BY name;

-- name: export_next_id
-- The identity's next value, past the ids of removed jobs, and how many
-- jobs there are.
-- $1 the jobs table's qualified name.
SELECT greatest(
		coalesce(pg_sequence_last_value(pg_get_serial_sequence($1, 'id')::regclass), 0),
		coalesce((SELECT max(id) FROM {{schema}}.jobs), 0), coalesce((SELECT max(id) FROM {{schema}}.jobs_ended), 0)) + 1,
		(SELECT count(*) FROM {{schema}}.jobs) + (SELECT count(*) FROM {{schema}}.jobs_ended);

-- name: load_counts
-- What the destination holds: jobs, types, group settings, tokens.
SELECT (SELECT count(*) FROM {{schema}}.jobs) + (SELECT count(*) FROM {{schema}}.jobs_ended),
		(SELECT count(*) FROM {{schema}}.types), (SELECT count(*) FROM {{schema}}.group_config), (SELECT count(*) FROM {{schema}}.tokens);

-- name: load_empty
-- Empties the destination, for a load that replaces what it holds.
TRUNCATE {{schema}}.jobs, {{schema}}.jobs_ended, {{schema}}.types, {{schema}}.groups, {{schema}}.pending_changes, {{schema}}.group_config, {{schema}}.tokens,
	{{schema}}.job_logs, {{schema}}.job_log_attempts;

-- name: load_type
-- $1… the columns of copyColumns["types"], in order.
INSERT INTO {{schema}}.types ({{copyColumns "types"}}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);

-- name: load_group
-- $1 type, $2 group, $3 turn, $4 band count.
INSERT INTO {{schema}}.groups (type, grp, turn, band_count) VALUES ($1, $2, $3, $4);

-- name: load_group_config
-- $1 group, $2 type, $3 max running, $4 weight, $5 paused, $6 rate (jobs),
-- $7 its period (µs), $8 burst.
INSERT INTO {{schema}}.group_config (grp, type, max_running, weight, paused, rate_n, rate_per, burst) VALUES ($1, $2, $3, $4, $5, $6, $7, $8);

-- name: load_token
-- $1 name, $2 hash, $3 groups, $4 types, $5 read-only, $6 created_at.
INSERT INTO {{schema}}.tokens (name, hash, groups, types, read_only, created_at) VALUES ($1, $2, $3, $4, $5, $6);

-- name: load_count_groups
-- Counts the groups' pending jobs from the jobs loaded.
INSERT INTO {{schema}}.groups (type, grp, pending)
		SELECT type, grp, count(*) FROM {{schema}}.jobs WHERE state = 0 GROUP BY type, grp
		ON CONFLICT (type, grp) DO UPDATE SET pending = excluded.pending;

-- name: load_next_id
-- $1 the jobs table's qualified name, $2 the last id given.
SELECT setval(pg_get_serial_sequence($1, 'id'), $2);

-- name: load_analyze
-- What the planner knows of the tables is of an empty store.
ANALYZE {{schema}}.jobs, {{schema}}.jobs_ended, {{schema}}.groups;
