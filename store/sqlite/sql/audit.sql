-- The audit trail (audit.go, store.Auditor).

-- name: audit
-- Writes an operation's audit records (engine.Record), in one statement.
-- ? a JSON array of [at (µs), actor, action, of, job id (0: none), type, group, detail].
INSERT INTO rota_audit (at, actor, action, of, job_id, type, grp, detail)
	SELECT j.value->>0, j.value->>1, j.value->>2, j.value->>3, nullif(j.value->>4, 0), j.value->>5, j.value->>6, j.value->>7
	FROM json_each(?) AS j;

-- name: job_audit
-- A job's records, the newest first.
-- ? job id, ? at most this many.
SELECT at, actor, action, of, coalesce(job_id, 0), type, grp, detail FROM rota_audit WHERE job_id = ? ORDER BY id DESC LIMIT ?;

-- name: setting_audit
-- The records of a type's settings and of a group's (for the type or for
-- every type) made within a time range, the newest first.
-- ?1 type, ?2 group, ?3 from (µs), ?4 to (µs), ?5 at most this many.
SELECT at, actor, action, of, 0, type, grp, detail FROM rota_audit
	WHERE job_id IS NULL AND at >= ?3 AND at <= ?4 AND ((of = 1 AND type = ?1) OR (of = 2 AND grp = ?2 AND type IN (?1, '')))
	ORDER BY id DESC LIMIT ?5;

-- name: retire_audit
-- Deletes audit records older than the trail's retention (store.AuditRetention).
-- ? the oldest time kept (µs), ? at most this many.
DELETE FROM rota_audit WHERE id IN (SELECT id FROM rota_audit WHERE at < ? ORDER BY at LIMIT ?);
