-- The record of applied migrations (sqlite.go); the migrations themselves
-- are migrations/*.sql.

-- name: migrations_table
CREATE TABLE IF NOT EXISTS rota_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);

-- name: migrations_applied
SELECT coalesce(max(version), 0) FROM rota_migrations;

-- name: migration_record
-- ? version, ? name, ? applied_at.
INSERT INTO rota_migrations (version, name, applied_at) VALUES (?, ?, ?);

-- name: migrations_exist
-- Whether the file has a record of migrations.
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'rota_migrations';
