-- The audit trail (audit.go, store.Auditor).

-- name: audit
-- Writes an operation's audit records (engine.Record), in one statement.
-- $1 times, $2 actors, $3 actions, $4 what each is of (smallint[]), $5 job ids
-- (0: none), $6 types, $7 groups, $8 details (text[] unless said).
INSERT INTO {{schema}}.audit (at, actor, action, of, job_id, type, grp, detail)
	SELECT u.at, u.actor, u.action, u.of, nullif(u.job_id, 0), u.type, u.grp, u.detail
	FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::smallint[], $5::bigint[], $6::text[], $7::text[], $8::text[])
		AS u(at, actor, action, of, job_id, type, grp, detail);

-- name: job_audit
-- A job's records, the newest first.
-- $1 job id, $2 at most this many.
SELECT at, actor, action, of, coalesce(job_id, 0), type, grp, detail FROM {{schema}}.audit WHERE job_id = $1 ORDER BY id DESC LIMIT $2;

-- name: setting_audit
-- The records of a type's settings and of a group's (for the type or for
-- every type) made within a time range, the newest first.
-- $1 type, $2 group, $3 from, $4 to, $5 at most this many.
SELECT at, actor, action, of, 0::bigint, type, grp, detail FROM {{schema}}.audit
	WHERE job_id IS NULL AND at >= $3 AND at <= $4 AND ((of = 1 AND type = $1) OR (of = 2 AND grp = $2 AND type IN ($1, '')))
	ORDER BY id DESC LIMIT $5;

-- name: retire_audit
-- Deletes audit records older than the trail's retention (store.AuditRetention).
-- $1 how far the caller's now is ahead of this node's clock (µs), $2 the retention (µs),
-- $3 at most this many.
DELETE FROM {{schema}}.audit WHERE id IN (SELECT id FROM {{schema}}.audit
	WHERE at < now() + ($1::bigint - $2::bigint) * interval '1 microsecond' ORDER BY at LIMIT $3);

-- name: lock_type_config
-- Holds a type's settings row until the transaction ends, so that
-- concurrent changes of them are recorded one after the other.
-- $1 type.
SELECT name FROM {{schema}}.types WHERE name = $1 FOR UPDATE;

-- name: lock_group_config
-- Holds a group's settings row for a type until the transaction ends.
-- $1 group, $2 type.
SELECT grp FROM {{schema}}.group_config WHERE grp = $1 AND type = $2 FOR UPDATE;
