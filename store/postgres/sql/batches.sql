-- Batches (store.Batch; internal/engine/batch.go): their rows, and the
-- counts every member's change keeps in the same transaction.

-- name: batch_insert
-- $1 description, $2 open, $3 on_complete, $4 on_success (JSON, NULL: none),
-- $5 groups, $6 types (JSON arrays), $7 wide. Returns the id.
INSERT INTO {{schema}}.batches (description, open, on_complete, on_success, created_at, groups, types, wide)
	VALUES ($1, $2, $3, $4, now(), $5, $6, $7) RETURNING id;

-- name: batch_widen
-- Writes a batch's groups and types, its row locked.
-- $1 groups, $2 types (JSON arrays), $3 wide, $4 id.
UPDATE {{schema}}.batches SET groups = $1, types = $2, wide = $3 WHERE id = $4;

-- name: batch
-- A batch's row (batchColumns), without a lock.
SELECT {{batchColumns}} FROM {{schema}}.batches WHERE id = $1;

-- name: batch_lock
-- A batch's row (batchColumns), locked until the transaction ends.
SELECT {{batchColumns}} FROM {{schema}}.batches WHERE id = $1 FOR UPDATE;

-- name: batch_move
-- Adds to a batch's counts and closes it ($8), unless it is done: the
-- update takes the row's lock, and a concurrent member's transaction
-- waits for it, then sees these counts (READ COMMITTED re-reads the row).
-- $1 total, $2 remaining, $3 completed, $4 failed, $5 cancelled, $6 removed, $7 id, $8 close.
UPDATE {{schema}}.batches SET total = total + $1, remaining = remaining + $2, completed = completed + $3,
	failed = failed + $4, cancelled = cancelled + $5, removed = removed + $6, open = open AND NOT $8::boolean
	WHERE id = $7 AND done_at IS NULL
	RETURNING {{batchColumns}};

-- name: batch_end
-- Marks a batch done. $1 complete_job, $2 success_job (NULL: none), $3 id.
UPDATE {{schema}}.batches SET done_at = now(), complete_job = $1, success_job = $2 WHERE id = $3;

-- name: batches
-- A page of batches, newest first. $1 before (an id), $2 limit.
SELECT {{batchColumns}} FROM {{schema}}.batches WHERE id < $1 ORDER BY id DESC LIMIT $2;
