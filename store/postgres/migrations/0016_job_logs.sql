-- Per-job logs (store.Logs): the records each attempt of a job logged,
-- and one summary row per attempt (its records, bytes, the records
-- dropped past store.MaxLogBytes, and the lease tag that wrote it, since
-- a run that reuses an attempt number starts its log afresh). A job lives
-- in jobs or jobs_ended, so no foreign key can tie them: every statement
-- that deletes jobs deletes their logs too.
CREATE TABLE job_logs (
	job_id  bigint NOT NULL,
	attempt integer NOT NULL,
	seq     integer NOT NULL,
	at      timestamptz NOT NULL,
	level   integer NOT NULL,
	message text NOT NULL,
	attrs   text,
	PRIMARY KEY (job_id, attempt, seq)
);
CREATE TABLE job_log_attempts (
	job_id  bigint NOT NULL,
	attempt integer NOT NULL,
	lease   text NOT NULL,
	records integer NOT NULL,
	bytes   integer NOT NULL,
	dropped integer NOT NULL,
	PRIMARY KEY (job_id, attempt)
);
-- Nodes of version 15 keep working beside it (TestChaosUpgrade): they
-- neither read nor write the tables; a job they remove or retire leaves
-- its logs behind, which no job id reuses.
-- rota:compatible
