-- Batches (store.Batch; internal/engine/batch.go): their rows, and the
-- counts every member's change keeps in the same transaction.

-- name: batch_insert
-- ? description, ? open, ? on_complete, ? on_success (JSON, NULL: none), ? created_at,
-- ? groups, ? types (JSON arrays), ? wide.
INSERT INTO rota_batches (description, open, on_complete, on_success, created_at, groups, types, wide)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: batch_widen
-- Writes a batch's groups and types. ? groups, ? types (JSON arrays), ? wide, ? id.
UPDATE rota_batches SET groups = ?, types = ?, wide = ? WHERE id = ?;

-- name: batch
-- A batch's row (batchColumns).
SELECT {{batchColumns}} FROM rota_batches WHERE id = ?;

-- name: batch_move
-- Adds to a batch's counts and closes it (? close), unless it is done.
-- ? total, ? remaining, ? completed, ? failed, ? cancelled, ? removed, ? close, ? id.
UPDATE rota_batches SET total = total + ?, remaining = remaining + ?, completed = completed + ?,
	failed = failed + ?, cancelled = cancelled + ?, removed = removed + ?, open = open AND NOT ?
	WHERE id = ? AND done_at IS NULL
	RETURNING {{batchColumns}};

-- name: batch_end
-- Marks a batch done. ? done_at, ? complete_job, ? success_job (NULL: none), ? id.
UPDATE rota_batches SET done_at = ?, complete_job = ?, success_job = ? WHERE id = ?;

-- name: batches
-- A page of batches, newest first. ? before (an id), ? limit.
SELECT {{batchColumns}} FROM rota_batches WHERE id < ? ORDER BY id DESC LIMIT ?;
