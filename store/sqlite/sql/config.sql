-- The settings of types and groups (config.go). The store keeps them in
-- memory, read at open and written through.

-- name: type_configs
-- Every type's settings.
SELECT name, lease_timeout, bands_high, bands_low, group_max_running, paused, retention, failed_retention, max_running, run_timeout,
	rate_n, rate_per, burst FROM rota_types;

-- name: group_configs
-- Every group setting.
SELECT grp, type, max_running, weight, paused, rate_n, rate_per, burst FROM rota_group_config;

-- name: group_running
-- How many jobs of a group run across all types, for a bound that applies
-- to all types.
-- ? group.
SELECT coalesce(sum(running), 0) FROM rota_groups WHERE grp = ? AND running > 0;

-- name: type_running
-- How many jobs of a type run, all groups together, for the type's bound
-- (only read when the type has one).
-- ? type.
SELECT coalesce(sum(running), 0) FROM rota_groups WHERE type = ? AND running > 0;

-- name: set_type_config
-- Stores a type's settings, replacing its previous ones.
-- ? type, ? lease timeout (µs), ? high bands, ? low bands, ? the bound of
-- running jobs per group, ? paused, ? retention (µs), ? failed jobs'
-- retention (µs), ? updated_at, ? the bound of the type's running jobs,
-- ? the default run timeout (µs, 0: none), ? rate (jobs), ? its period
-- (µs), ? burst. The bucket's tokens stay: a refill caps them at the new
-- burst.
INSERT INTO rota_types (name, lease_timeout, bands_high, bands_low, group_max_running, paused, retention,
			failed_retention, updated_at, max_running, run_timeout, rate_n, rate_per, burst) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET lease_timeout = excluded.lease_timeout, bands_high = excluded.bands_high,
			bands_low = excluded.bands_low, group_max_running = excluded.group_max_running, paused = excluded.paused,
			retention = excluded.retention, failed_retention = excluded.failed_retention, updated_at = excluded.updated_at,
			max_running = excluded.max_running, run_timeout = excluded.run_timeout, rate_n = excluded.rate_n, rate_per = excluded.rate_per,
			burst = excluded.burst;

-- name: delete_group_config
-- Removes a group's setting for a type ('' for all types).
-- ? group, ? type.
DELETE FROM rota_group_config WHERE grp = ? AND type = ?;

-- name: set_group_config
-- Stores a group's weight, bound, pause and rate for a type ('' for all
-- types).
-- ? group, ? type, ? max running, ? weight, ? paused, ? rate (jobs), ? its
-- period (µs), ? burst.
INSERT INTO rota_group_config (grp, type, max_running, weight, paused, rate_n, rate_per, burst) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (grp, type) DO UPDATE SET max_running = excluded.max_running, weight = excluded.weight,
			paused = excluded.paused, rate_n = excluded.rate_n, rate_per = excluded.rate_per, burst = excluded.burst;

-- name: type_tokens
-- A type's token bucket, for an accept under its rate.
-- ? type.
SELECT tokens, refilled_at FROM rota_types WHERE name = ?;

-- name: group_tokens
-- A group's token bucket for a type ('' for all types), for an accept
-- under its rate.
-- ? group, ? type.
SELECT tokens, refilled_at FROM rota_group_config WHERE grp = ? AND type = ?;

-- name: save_type_tokens
-- What an accept left of a type's tokens.
-- ? tokens, ? refilled_at (µs), ? type.
UPDATE rota_types SET tokens = ?, refilled_at = ? WHERE name = ?;

-- name: save_group_tokens
-- What an accept left of a group's tokens for a type ('' for all types).
-- ? tokens, ? refilled_at (µs), ? group, ? type.
UPDATE rota_group_config SET tokens = ?, refilled_at = ? WHERE grp = ? AND type = ?;
