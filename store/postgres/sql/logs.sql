-- Per-job logs (store.Logs, logs.go): appends fenced by the engine
-- (engine.AppendLogs), reads, and their removal with the jobs.

-- name: log_attempt
-- The summary of a job's log of one attempt.
-- $1 job id, $2 attempt. Returns lease, records, bytes, dropped.
SELECT lease, records, bytes, dropped FROM {{schema}}.job_log_attempts WHERE job_id = $1 AND attempt = $2;

-- name: log_start
-- Deletes a job's logs of an attempt and later ones (a run that reuses
-- an attempt number starts its log afresh).
-- $1 job id, $2 attempt.
WITH l AS (DELETE FROM {{schema}}.job_logs WHERE job_id = $1 AND attempt >= $2)
DELETE FROM {{schema}}.job_log_attempts WHERE job_id = $1 AND attempt >= $2;

-- name: log_insert
-- Inserts an attempt's records.
-- $1 job id, $2 attempts, $3 seqs, $4 times, $5 levels, $6 messages,
-- $7 attrs (arrays, one element per record).
INSERT INTO {{schema}}.job_logs (job_id, attempt, seq, at, level, message, attrs)
SELECT $1, r.attempt, r.seq, r.at, r.level, r.message, r.attrs
	FROM unnest($2::integer[], $3::integer[], $4::timestamptz[], $5::integer[], $6::text[], $7::text[])
		AS r(attempt, seq, at, level, message, attrs);

-- name: log_summary
-- Writes an attempt's summary.
-- $1 job id, $2 attempt, $3 lease tag, $4 records, $5 bytes, $6 dropped.
INSERT INTO {{schema}}.job_log_attempts (job_id, attempt, lease, records, bytes, dropped) VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (job_id, attempt) DO UPDATE SET lease = excluded.lease, records = excluded.records,
		bytes = excluded.bytes, dropped = excluded.dropped;

-- name: log_attempts
-- The summaries of a job's log, oldest attempt first.
-- $1 job id.
SELECT attempt, records, bytes, dropped FROM {{schema}}.job_log_attempts WHERE job_id = $1 ORDER BY attempt;

-- name: log_page
-- A page of an attempt's records.
-- $1 job id, $2 attempt, $3 after seq, $4 limit.
SELECT attempt, seq, at, level, message, attrs FROM {{schema}}.job_logs
	WHERE job_id = $1 AND attempt = $2 AND seq > $3 ORDER BY seq LIMIT $4;

-- name: logs_remove
-- Deletes the logs of jobs.
-- $1 ids (bigint[]).
WITH l AS (DELETE FROM {{schema}}.job_logs WHERE job_id = ANY($1::bigint[]))
DELETE FROM {{schema}}.job_log_attempts WHERE job_id = ANY($1::bigint[]);
