-- The settings of types and groups (config.go).

-- name: set_type_config
-- Stores a type's settings, replacing its previous ones.
-- $1 type, $2 lease timeout (µs), $3 high bands, $4 low bands,
-- $5 the bound of running jobs per group, $6 paused, $7 retention (µs),
-- $8 failed jobs' retention (µs), $9 the bound of the type's running jobs,
-- $10 the default run timeout (µs, 0: none), $11 rate (jobs), $12 its
-- period (µs), $13 burst. The bucket's tokens stay: a refill caps them at
-- the new burst.
INSERT INTO {{schema}}.types (name, lease_timeout, bands_high, bands_low, group_max_running, paused, retention, failed_retention, updated_at, max_running,
			run_timeout, rate_n, rate_per, burst)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), $9, $10, $11, $12, $13)
			ON CONFLICT (name) DO UPDATE SET lease_timeout = excluded.lease_timeout, bands_high = excluded.bands_high,
			bands_low = excluded.bands_low, group_max_running = excluded.group_max_running, paused = excluded.paused,
			retention = excluded.retention, failed_retention = excluded.failed_retention, updated_at = excluded.updated_at,
			max_running = excluded.max_running, run_timeout = excluded.run_timeout, rate_n = excluded.rate_n, rate_per = excluded.rate_per,
			burst = excluded.burst;

-- name: delete_group_config
-- Removes a group's setting for a type ('' for all types).
-- $1 group, $2 type.
DELETE FROM {{schema}}.group_config WHERE grp = $1 AND type = $2;

-- name: set_group_config
-- Stores a group's weight, bound, pause and rate for a type ('' for all
-- types).
-- $1 group, $2 type, $3 max running, $4 weight, $5 paused, $6 rate (jobs),
-- $7 its period (µs), $8 burst.
INSERT INTO {{schema}}.group_config (grp, type, max_running, weight, paused, rate_n, rate_per, burst) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (grp, type) DO UPDATE SET max_running = excluded.max_running, weight = excluded.weight,
			paused = excluded.paused, rate_n = excluded.rate_n, rate_per = excluded.rate_per, burst = excluded.burst;

-- name: group_configs
-- Every group setting, by group, then type.
SELECT grp, type, max_running, weight, paused, rate_n, rate_per, burst FROM {{schema}}.group_config ORDER BY grp, type;
