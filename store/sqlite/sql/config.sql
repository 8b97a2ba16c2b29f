-- The settings of types and groups (config.go). The store keeps them in
-- memory, read at open and written through.

-- name: type_configs
-- Every type's settings.
SELECT name, lease_timeout, bands_high, bands_low, group_max_running, paused, retention, failed_retention, max_running, run_timeout FROM rota_types;

-- name: group_configs
-- Every group setting.
SELECT grp, type, max_running, weight, paused FROM rota_group_config;

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
-- ? the default run timeout (µs, 0: none).
INSERT INTO rota_types (name, lease_timeout, bands_high, bands_low, group_max_running, paused, retention,
			failed_retention, updated_at, max_running, run_timeout) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET lease_timeout = excluded.lease_timeout, bands_high = excluded.bands_high,
			bands_low = excluded.bands_low, group_max_running = excluded.group_max_running, paused = excluded.paused,
			retention = excluded.retention, failed_retention = excluded.failed_retention, updated_at = excluded.updated_at,
			max_running = excluded.max_running, run_timeout = excluded.run_timeout;

-- name: delete_group_config
-- Removes a group's setting for a type ('' for all types).
-- ? group, ? type.
DELETE FROM rota_group_config WHERE grp = ? AND type = ?;

-- name: set_group_config
-- Stores a group's weight, bound and pause for a type ('' for all types).
-- ? group, ? type, ? max running, ? weight, ? paused.
INSERT INTO rota_group_config (grp, type, max_running, weight, paused) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (grp, type) DO UPDATE SET max_running = excluded.max_running, weight = excluded.weight,
			paused = excluded.paused;
