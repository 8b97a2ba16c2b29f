-- What an import sets after inserting its jobs as pending (import.go);
-- an ended job then moves with the statement end (plans.sql).

-- name: import_job
-- $1 id, $2 parent id (NULL: none), $3 Bedrock id (NULL: none),
-- $4 created_at (NULL keeps the insert's), $5 last error (NULL keeps it).
UPDATE {{schema}}.jobs SET parent_id = $2, bedrock_id = $3, created_at = coalesce($4, created_at),
				last_error = coalesce($5, last_error) WHERE id = $1;

-- name: import_paused
-- $1 id.
UPDATE {{schema}}.jobs SET state = 2 WHERE id = $1;

