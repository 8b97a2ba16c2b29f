-- The store's session-level statements: the database's encoding,
-- migrations, notifications and the sweep leader's lock (postgres.go,
-- notify.go, leader.go).

-- name: server_encoding
SHOW server_encoding;

-- name: migrate_lock
-- Serialises migrations of one schema across nodes, for the session: it
-- spans the migrations' transactions and the statements that run outside
-- any. (Nodes of releases that took the transaction-level lock of the same
-- key queue on it too.)
-- $1 the advisory lock's key (hash64 of "migrate", schema).
SELECT pg_advisory_lock($1);

-- name: migrate_unlock
-- $1 the advisory lock's key.
SELECT pg_advisory_unlock($1);

-- name: create_schema
CREATE SCHEMA IF NOT EXISTS {{schema}};

-- name: migrations_table
-- The record of applied migrations.
CREATE TABLE IF NOT EXISTS {{schema}}.schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());

-- name: migrations_have_compatible
-- Whether the record has the column that says which migrations older
-- nodes may run beside.
-- $1 the schema's name.
SELECT EXISTS (SELECT FROM information_schema.columns
			WHERE table_schema = $1 AND table_name = 'schema_migrations' AND column_name = 'compatible');

-- name: migrations_add_compatible
-- Whether older nodes may run beside a migration; false for those
-- recorded before the column.
ALTER TABLE {{schema}}.schema_migrations ADD COLUMN IF NOT EXISTS compatible boolean NOT NULL DEFAULT false;

-- name: migrations_applied
-- The migrations applied, and whether each lets older nodes run beside it.
SELECT version, compatible FROM {{schema}}.schema_migrations;

-- name: migration_record
-- $1 version, $2 name, $3 whether older nodes may run beside it.
INSERT INTO {{schema}}.schema_migrations (version, name, compatible) VALUES ($1, $2, $3);

-- name: use_schema
-- The migrations name their tables without a schema: for the transaction.
SET LOCAL search_path TO {{schema}};

-- name: migration_lock_timeout
-- How long a migration's statement waits for a lock on rota's tables,
-- for the transaction (migrationLockTimeout).
SET LOCAL lock_timeout = '{{migrationLockTimeout}}';

-- name: use_schema_session
-- use_schema for the session, for a migration run one statement at a
-- time; reset_session undoes it and the lock timeout.
SET search_path TO {{schema}};

-- name: migration_lock_timeout_session
SET lock_timeout = '{{migrationLockTimeout}}';

-- name: reset_session
RESET search_path; RESET lock_timeout;

-- name: invalid_indexes
-- The indexes of the schema that a CREATE INDEX CONCURRENTLY left invalid
-- when it failed, as qualified names.
-- $1 the schema's name.
SELECT format('%I.%I', n.nspname, c.relname) FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE NOT i.indisvalid AND n.nspname = $1;

-- name: schema_exists
-- Whether the schema has a record of migrations.
-- $1 the record's qualified name.
SELECT to_regclass($1) IS NOT NULL;

-- name: schema_version
SELECT coalesce(max(version), 0) FROM {{schema}}.schema_migrations;

-- name: notify_in_tx
-- Sends changes inside a caller's transaction: every node (this one too)
-- learns of them when, and only if, it commits.
-- $1 channel, $2 payloads (text[]).
SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p;

-- name: notify
-- Sends changes after the writes committed, in a statement of its own: the
-- NOTIFY lock is never held across a writing transaction. It need not
-- wait for the WAL flush: a notification lost in a crash only delays a
-- wake-up.
-- $1 channel, $2 payloads (text[]).
SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p
		WHERE (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL;

-- name: leader_lock
-- Makes this session the sweep leader, if no other session is.
-- $1 the advisory lock's key.
SELECT pg_try_advisory_lock($1);

-- name: listen
-- Hears the changes other nodes send on the schema's channel.
LISTEN {{channel}};

-- name: in_recovery
-- Whether the LISTEN connection's server is a standby: nodes notify on
-- the primary, so a listener on a standby hears nothing.
SELECT pg_is_in_recovery();
