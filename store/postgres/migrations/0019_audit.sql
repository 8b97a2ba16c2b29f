-- The audit trail (store.Auditor): who changed which job or setting, when,
-- how. of: 0 a job (job_id, and the job's type and grp), 1 a type's
-- settings (type; grp ''), 2 a group's settings (grp, type; '' for every
-- type). A removed job's records stay until store.AuditRetention passes.
CREATE TABLE audit (
	id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at     timestamptz NOT NULL,
	actor  text NOT NULL,
	action text NOT NULL,
	of     smallint NOT NULL,
	job_id bigint,
	type   text NOT NULL,
	grp    text NOT NULL,
	detail text NOT NULL
);
-- A job's history; the settings changed during a job's life; the sweep.
CREATE INDEX audit_job ON audit (job_id, id) WHERE job_id IS NOT NULL;
CREATE INDEX audit_setting ON audit (type, at) WHERE job_id IS NULL;
CREATE INDEX audit_at ON audit (at);
-- Nodes of version 18 keep working beside it (TestChaosUpgrade): they
-- neither read nor write the table, and record nothing.
-- rota:compatible
