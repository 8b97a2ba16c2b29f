-- Per-job logs (store.Logs, logs.go): appends fenced by the engine
-- (engine.AppendLogs), reads, and their removal with the jobs.

-- name: log_attempt
-- The summary of a job's log of one attempt.
-- ? job id, ? attempt. Returns lease, records, bytes, dropped.
SELECT lease, records, bytes, dropped FROM rota_job_log_attempts WHERE job_id = ? AND attempt = ?;

-- name: log_start
-- Deletes a job's log records of an attempt and later ones (a run that
-- reuses an attempt number starts its log afresh).
-- ? job id, ? attempt.
DELETE FROM rota_job_logs WHERE job_id = ? AND attempt >= ?;

-- name: log_start_attempts
-- The summaries that go with log_start's records.
-- ? job id, ? attempt.
DELETE FROM rota_job_log_attempts WHERE job_id = ? AND attempt >= ?;

-- name: log_insert
-- Inserts an attempt's records, given as one JSON array of
-- [attempt, seq, at, level, message, attrs] arrays.
-- ? job id, ? records.
INSERT INTO rota_job_logs (job_id, attempt, seq, at, level, message, attrs)
SELECT ?1, r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4, r.value ->> 5
	FROM json_each(?2) AS r;

-- name: log_summary
-- Writes an attempt's summary.
-- ? job id, ? attempt, ? lease tag, ? records, ? bytes, ? dropped.
INSERT INTO rota_job_log_attempts (job_id, attempt, lease, records, bytes, dropped) VALUES (?, ?, ?, ?, ?, ?)
	ON CONFLICT (job_id, attempt) DO UPDATE SET lease = excluded.lease, records = excluded.records,
		bytes = excluded.bytes, dropped = excluded.dropped;

-- name: log_attempts
-- The summaries of a job's log, oldest attempt first.
-- ? job id.
SELECT attempt, records, bytes, dropped FROM rota_job_log_attempts WHERE job_id = ? ORDER BY attempt;

-- name: log_page
-- A page of an attempt's records.
-- ? job id, ? attempt, ? after seq, ? limit.
SELECT attempt, seq, at, level, message, attrs FROM rota_job_logs
	WHERE job_id = ? AND attempt = ? AND seq > ? ORDER BY seq LIMIT ?;

-- name: logs_remove
-- Deletes the log records of jobs, given as one JSON array of ids.
-- ? ids.
DELETE FROM rota_job_logs WHERE job_id IN (SELECT value FROM json_each(?));

-- name: logs_remove_attempts
-- The summaries that go with logs_remove's records.
-- ? ids.
DELETE FROM rota_job_log_attempts WHERE job_id IN (SELECT value FROM json_each(?));
