-- Export and load of a whole database (copy.go, store.Copier). The
-- columns each carries are copyColumns, which TestCopyCoversSchema checks
-- against the schema.

-- name: export_jobs
-- A page of jobs in id order, with every column (copyColumns["rota_jobs"]).
-- ? the last id of the previous page (0 first), ? the page's size.
SELECT {{jobColumns}}, lease_timeout, resubmit_at, next_data FROM rota_jobs WHERE id > ? ORDER BY id LIMIT ?;

-- name: export_types
SELECT {{copyColumns "rota_types"}} FROM rota_types ORDER BY name;

-- name: export_groups
SELECT {{copyColumns "rota_groups"}} FROM rota_groups ORDER BY type, grp;

-- name: export_group_config
SELECT {{copyColumns "rota_group_config"}} FROM rota_group_config ORDER BY grp, type;

-- name: export_tokens
SELECT {{copyColumns "rota_tokens"}} FROM rota_tokens ORDER BY name;

-- name: export_next_id
-- The last id given (NULL: none yet), and the largest id held.
SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'rota_jobs'), (SELECT max(id) FROM rota_jobs);

-- name: load_counts
-- What the destination holds: jobs, types, group settings, tokens.
SELECT (SELECT count(*) FROM rota_jobs), (SELECT count(*) FROM rota_types),
		(SELECT count(*) FROM rota_group_config), (SELECT count(*) FROM rota_tokens);

-- name: load_empty
-- Empties the destination, for a load that replaces what it holds.
DELETE FROM rota_jobs; DELETE FROM rota_types; DELETE FROM rota_groups; DELETE FROM rota_group_config; DELETE FROM rota_tokens;
DELETE FROM rota_job_logs; DELETE FROM rota_job_log_attempts;
DELETE FROM sqlite_sequence WHERE name = 'rota_jobs';

-- name: load_job
-- ? each column of copyColumns["rota_jobs"], in order.
INSERT INTO rota_jobs ({{copyColumns "rota_jobs"}}) VALUES ({{copyParams "rota_jobs"}});

-- name: load_type
-- ? each column of copyColumns["rota_types"], in order.
INSERT INTO rota_types ({{copyColumns "rota_types"}}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: load_group
-- ? type, ? group, ? turn, ? band count.
INSERT INTO rota_groups (type, grp, turn, band_count) VALUES (?, ?, ?, ?);

-- name: load_group_config
-- ? group, ? type, ? max running, ? weight, ? paused, ? rate (jobs), ? its
-- period (µs), ? burst.
INSERT INTO rota_group_config (grp, type, max_running, weight, paused, rate_n, rate_per, burst) VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: load_token
-- ? name, ? hash, ? groups, ? types (JSON arrays), ? read-only, ? created_at.
INSERT INTO rota_tokens (name, hash, groups, types, read_only, created_at) VALUES (?, ?, ?, ?, ?, ?);

-- name: load_count_groups
-- Counts the groups' pending and running jobs from the jobs loaded.
INSERT INTO rota_groups (type, grp, pending, running)
		SELECT type, grp, sum(state = 0), sum(state = 1) FROM rota_jobs WHERE state IN (0, 1) GROUP BY type, grp
		ON CONFLICT (type, grp) DO UPDATE SET pending = excluded.pending, running = excluded.running;

-- name: load_forget_id
DELETE FROM sqlite_sequence WHERE name = 'rota_jobs';

-- name: load_next_id
-- ? the last id given.
INSERT INTO sqlite_sequence (name, seq) VALUES ('rota_jobs', ?);
