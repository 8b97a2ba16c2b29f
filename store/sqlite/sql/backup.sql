-- A consistent copy of a live database (backup.go).

-- name: backup_tables
-- How many of rota's tables a file has (2 for a rota database).
SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('rota_jobs', 'rota_types');

-- name: backup_into
-- Writes a copy of the database, as of its read transaction, to a new file.
-- ? the file's path.
VACUUM INTO ?;
