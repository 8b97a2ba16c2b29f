-- What an import sets after inserting its jobs as pending (import.go);
-- a parent is marked with mark_parent (jobs.sql).

-- name: import_job
-- ? state, ? parent id (NULL: none), ? Bedrock id (NULL: none),
-- ? created_at, ? finished_at (NULL: not ended), ? last error (NULL keeps
-- it), ? id.
UPDATE rota_jobs SET state = ?, parent_id = ?, bedrock_id = ?, created_at = ?, finished_at = ?,
				last_error = coalesce(?, last_error) WHERE id = ?;
