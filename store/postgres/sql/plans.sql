-- The statements that apply each kind of plan (lifecycle.Kind), one per
-- kind, run by (*txn).Apply in jobs.go. Each changes one job by id ($1)
-- and is checked to change exactly one row. Times are the transaction's
-- now(), the time the plan was decided with (txn.Now).

-- name: end
-- Moves a running, pending or paused job to the ended table (Complete,
-- Discard, CancelRun, Cancel; and an imported ended job).
-- $1 id, $2 state, $3 result, $4 error (NULL keeps the last error),
-- $5 whether the error is the attempt's (appended to errors),
-- $6 whether the lease is fenced out for good (drops the token),
-- $7 cancel requested, $8 whether it ended expired (Lapse).
WITH d AS (DELETE FROM {{schema}}.jobs j WHERE j.id = $1 RETURNING j.*)
INSERT INTO {{schema}}.jobs_ended ({{endedColumns}})
SELECT d.id, d.type, d.key, d.grp, d.priority, $2::smallint, d.run_at, d.attempt, d.max_attempts, d.backoff_base,
	d.backoff_max, d.lease_timeout, NULL, CASE WHEN $6::boolean THEN NULL ELSE d.token END, d.worker, $7::boolean,
	false, d.resubmit_at, d.progress, d.created_at, d.started_at, now(), now(), d.retry_after, d.parent_id, d.repeat,
	d.data, d.next_data, $3::bytea, coalesce($4::text, d.last_error),
	CASE WHEN $5::boolean THEN coalesce(d.errors, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', d.attempt, 'at', now(), 'error', $4::text))
		ELSE d.errors END, d.meta, d.missed, d.slot, d.has_children, d.bedrock_id, d.prev_started_at, d.run_timeout,
	d.expires_at, $8::boolean, d.unique_for, d.debounce,
	d.has_deps, d.deps_waiting, d.dep_policy, d.has_dependants, d.batch_id
FROM d;

-- name: revive
-- Moves an ended job back to the hot table as a new cycle (Revive) and
-- returns it (jobColumns). The jobs added after it learnt of its end
-- already: the new cycle's end is theirs no more (has_dependants).
-- $1 id, $2 run_at, $3 data, $4 priority, $5 max attempts,
-- $6 back-off base, $7 back-off max, $8 meta (NULL keeps each of $3–$8),
-- $9 whether to set the schedule, $10 the schedule (NULL: none),
-- $11 the missed-slot policy (NULL keeps it), $12 slot,
-- $13 a new type (NULL keeps it), $14 the deadline (NULL: none; the job
-- is no longer expired).
WITH d AS (DELETE FROM {{schema}}.jobs_ended j WHERE j.id = $1 RETURNING j.*)
INSERT INTO {{schema}}.jobs ({{endedColumns}})
SELECT d.id, coalesce($13::text, d.type), d.key, d.grp, coalesce($4, d.priority), 0, $2::timestamptz, 0,
	coalesce($5, d.max_attempts), coalesce($6, d.backoff_base), coalesce($7, d.backoff_max), d.lease_timeout, NULL,
	d.token, d.worker, false, d.resubmit, d.resubmit_at, 0, d.created_at, d.started_at, NULL, now(), d.retry_after,
	d.parent_id, CASE WHEN $9::boolean THEN $10::text ELSE d.repeat END, coalesce($3, d.data), d.next_data, NULL, NULL, NULL,
	coalesce($8, d.meta), coalesce($11::smallint, d.missed), $12::timestamptz, d.has_children, d.bedrock_id, d.prev_started_at, d.run_timeout,
	$14::timestamptz, false, d.unique_for, d.debounce,
	d.has_deps, d.deps_waiting, d.dep_policy, false, d.batch_id
FROM d RETURNING {{jobColumns}};

-- name: retry
-- Records an attempt's error and makes the job pending again (Retry).
-- $1 id, $2 run_at, $3 error text, $4 whether to drop the token.
UPDATE {{schema}}.jobs j SET state = 0, run_at = $2::timestamptz, last_error = $3::text,
	errors = coalesce(j.errors, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', j.attempt, 'at', now(), 'error', $3::text)),
	lease_until = NULL, finished_at = NULL, token = CASE WHEN $4 THEN NULL ELSE token END, updated_at = now()
WHERE id = $1;

-- name: requeue
-- Makes a running job pending again with its attempt given back (Requeue).
-- $1 id, $2 run_at, $3 attempt, $4 a new type (NULL keeps it).
UPDATE {{schema}}.jobs SET state = 0, run_at = $2::timestamptz, attempt = $3, type = coalesce($4, type), lease_until = NULL,
	updated_at = now()
WHERE id = $1;

-- name: run_again
-- Starts a new cycle of a resubmitted job (RunAgain).
-- $1 id, $2 run_at, $3 whether to drop the token, $4 slot, $5 deadline
-- (NULL: none).
UPDATE {{schema}}.jobs SET state = 0, run_at = $2::timestamptz, slot = $4::timestamptz, expires_at = $5::timestamptz, data = coalesce(next_data, data),
	next_data = NULL, resubmit = false, resubmit_at = NULL, attempt = 0, result = NULL, last_error = NULL, errors = NULL,
	progress = 0, lease_until = NULL, token = CASE WHEN $3 THEN NULL ELSE token END, updated_at = now()
WHERE id = $1;

-- name: update
-- Gives a pending or paused job a re-add's values (Update) and returns it
-- (jobColumns). Parameters as in revive, but a NULL deadline keeps the
-- job's.
UPDATE {{schema}}.jobs SET run_at = $2::timestamptz, data = coalesce($3, data), priority = coalesce($4, priority), type = coalesce($13::text, type),
	max_attempts = coalesce($5, max_attempts), backoff_base = coalesce($6, backoff_base),
	backoff_max = coalesce($7, backoff_max), meta = coalesce($8, meta),
	repeat = CASE WHEN $9::boolean THEN $10::text ELSE repeat END, missed = coalesce($11::smallint, missed), slot = $12::timestamptz,
	expires_at = coalesce($14::timestamptz, expires_at), updated_at = now() WHERE id = $1 RETURNING {{jobColumns}};

-- name: mark_resubmit
-- Marks a running job to run again (MarkResubmit) and returns it (jobColumns).
-- $1 id, $2 run_at (NULL: now, or a recurring job's next slot), $3 data
-- (NULL keeps it), $4 whether to set the schedule, $5 the schedule (NULL:
-- none), $6 the missed-slot policy (NULL keeps it).
UPDATE {{schema}}.jobs SET resubmit = true, resubmit_at = $2::timestamptz,
	next_data = coalesce($3, next_data), repeat = CASE WHEN $4::boolean THEN $5::text ELSE repeat END,
	missed = coalesce($6::smallint, missed), updated_at = now() WHERE id = $1 RETURNING {{jobColumns}};

-- name: recur
-- Starts a recurring job's next cycle (Recur): the run's result and error
-- are its last outcome, its errors and attempts start again.
-- $1 id, $2 run_at, $3 slot, $4 result, $5 error (NULL: none),
-- $6 whether to drop the token, $7 the next slot's deadline (NULL: none).
UPDATE {{schema}}.jobs SET state = 0, run_at = $2::timestamptz, slot = $3::timestamptz, attempt = 0, result = $4::bytea,
	last_error = $5::text, errors = NULL, progress = 0, lease_until = NULL, finished_at = now(), updated_at = now(),
	token = CASE WHEN $6 THEN NULL ELSE token END, expires_at = $7::timestamptz WHERE id = $1;

-- name: skip_slots
-- Takes back a claim of a job that missed its slots (SkipSlots).
-- $1 id, $2 run_at, $3 slot, $4 attempt, $5 the slot's deadline (NULL:
-- none).
UPDATE {{schema}}.jobs SET state = 0, run_at = $2::timestamptz, slot = $3::timestamptz, attempt = $4,
	expires_at = $5::timestamptz, lease_until = NULL, token = NULL, updated_at = now() WHERE id = $1;

-- name: lapse
-- Moves a recurring job whose deadline passed to its next slot (Lapse; a
-- job that ends expired takes end).
-- $1 id, $2 run_at, $3 slot, $4 the slot's deadline, $5 last error.
UPDATE {{schema}}.jobs SET run_at = $2::timestamptz, slot = $3::timestamptz, expires_at = $4::timestamptz,
	last_error = $5::text, updated_at = now() WHERE id = $1;

-- name: edit_hot
-- Changes a job in place (Edit) in the hot table; edit_ended is the same
-- for the ended table, and Apply runs both.
-- $1 id, $2 data, $3 priority (NULL keeps each), $4 whether to set the
-- schedule, $5 the schedule (NULL: none), $6 the missed-slot policy (NULL
-- keeps it), $7 slot, $8 run_at.
UPDATE {{schema}}.jobs SET data = coalesce($2, data), priority = coalesce($3, priority),
	repeat = CASE WHEN $4::boolean THEN $5::text ELSE repeat END, missed = coalesce($6::smallint, missed), slot = $7::timestamptz,
	run_at = $8::timestamptz, updated_at = now() WHERE id = $1;

-- name: edit_ended
-- edit_hot on the ended table. Parameters as in edit_hot.
UPDATE {{schema}}.jobs_ended SET data = coalesce($2, data), priority = coalesce($3, priority),
	repeat = CASE WHEN $4::boolean THEN $5::text ELSE repeat END, missed = coalesce($6::smallint, missed), slot = $7::timestamptz,
	run_at = $8::timestamptz, updated_at = now() WHERE id = $1;

-- name: wait
-- Pauses a parent whose run completed until its children end (Wait).
-- $1 id, $2 run_at, $3 result.
UPDATE {{schema}}.jobs SET state = 2, run_at = $2::timestamptz, result = $3, lease_until = NULL, updated_at = now()
WHERE id = $1;

-- name: resume
-- Makes a paused job pending (Resume).
-- $1 id, $2 run_at.
UPDATE {{schema}}.jobs SET state = 0, run_at = $2::timestamptz, updated_at = now() WHERE id = $1;

-- name: touch
-- Sets what a finish changes besides the job's state (lifecycle.Touch),
-- on a job in the hot table.
-- $1 id, $2 data, $3 priority (NULL keeps each), $4 whether to end the schedule.
UPDATE {{schema}}.jobs SET data = coalesce($2, data), priority = coalesce($3, priority),
	repeat = CASE WHEN $4::boolean THEN NULL ELSE repeat END, slot = CASE WHEN $4::boolean THEN NULL ELSE slot END,
	updated_at = now() WHERE id = $1;

-- name: remove_hot
-- Deletes a job from the hot table (Remove); remove_ended from the ended
-- one, and Apply runs both.
-- $1 id.
DELETE FROM {{schema}}.jobs WHERE id = $1;

-- name: remove_ended
-- $1 id.
DELETE FROM {{schema}}.jobs_ended WHERE id = $1;

-- name: deps_done
-- Counts a waiting job's dependency as ended (DepsDone): it stays waiting
-- or becomes pending at run_at.
-- $1 id, $2 state, $3 run_at, $4 the unended dependencies left.
UPDATE {{schema}}.jobs SET state = $2, run_at = $3::timestamptz, deps_waiting = $4, updated_at = now() WHERE id = $1;
