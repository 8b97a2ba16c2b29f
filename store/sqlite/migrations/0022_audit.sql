-- The audit trail (store.Auditor): who changed which job or setting, when
-- (µs), how. of: 0 a job (job_id, and the job's type and grp), 1 a type's
-- settings (type; grp ''), 2 a group's settings (grp, type; '' for every
-- type). A removed job's records stay until store.AuditRetention passes.
CREATE TABLE rota_audit (
	id     INTEGER PRIMARY KEY,
	at     INTEGER NOT NULL,
	actor  TEXT NOT NULL,
	action TEXT NOT NULL,
	of     INTEGER NOT NULL,
	job_id INTEGER,
	type   TEXT NOT NULL,
	grp    TEXT NOT NULL,
	detail TEXT NOT NULL
);
-- A job's history; the settings changed during a job's life; the sweep.
CREATE INDEX rota_audit_job ON rota_audit (job_id, id) WHERE job_id IS NOT NULL;
CREATE INDEX rota_audit_setting ON rota_audit (type, at) WHERE job_id IS NULL;
CREATE INDEX rota_audit_at ON rota_audit (at);
