-- Per-job logs (store.Logs): the records each attempt of a job logged,
-- and one summary row per attempt (its records, bytes, the records
-- dropped past store.MaxLogBytes, and the lease tag that wrote it, since
-- a run that reuses an attempt number starts its log afresh). Both are
-- deleted with their job by every statement that deletes jobs.
CREATE TABLE rota_job_logs (
	job_id  INTEGER NOT NULL,
	attempt INTEGER NOT NULL,
	seq     INTEGER NOT NULL,
	at      INTEGER NOT NULL,
	level   INTEGER NOT NULL,
	message TEXT NOT NULL,
	attrs   TEXT,
	PRIMARY KEY (job_id, attempt, seq)
) WITHOUT ROWID;
CREATE TABLE rota_job_log_attempts (
	job_id  INTEGER NOT NULL,
	attempt INTEGER NOT NULL,
	lease   TEXT NOT NULL,
	records INTEGER NOT NULL,
	bytes   INTEGER NOT NULL,
	dropped INTEGER NOT NULL,
	PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;
