-- The statements that apply each kind of plan (lifecycle.Kind), one per
-- kind, run by (*txn).Apply in jobs.go. Each changes one job by id (the
-- last parameter). Times are in microseconds since the epoch, the
-- writer's clock, the time the plan was decided with (txn.Now).

-- name: complete
-- Completes a running job (Complete).
-- ? result, ? finished_at, ? updated_at, ? id.
UPDATE rota_jobs SET state = 3, result = ?, lease_until = NULL, finished_at = ?, updated_at = ?
	WHERE id = ?;

-- name: fail
-- Records an attempt's error and moves the job to pending (Retry) or
-- failed (Discard).
-- ? state, ? run_at, ? error, ? the error's time (RFC 3339), ? error,
-- ? finished_at (NULL for a retry), ? updated_at, ? whether to drop the
-- token, ? id.
UPDATE rota_jobs SET state = ?, run_at = ?, last_error = ?,
	errors = json_insert(coalesce(errors, '[]'), '$[#]', json_object('attempt', attempt, 'at', ?, 'error', ?)),
	lease_until = NULL, finished_at = ?, updated_at = ?, token = CASE WHEN ? THEN NULL ELSE token END WHERE id = ?;

-- name: requeue
-- Makes a running job pending again with its attempt given back (Requeue).
-- ? run_at, ? attempt, ? a new type (NULL keeps it), ? updated_at, ? id.
UPDATE rota_jobs SET state = 0, run_at = ?, attempt = ?, type = coalesce(?, type), lease_until = NULL,
	updated_at = ? WHERE id = ?;

-- name: cancel_run
-- Ends a run its worker cancelled (CancelRun).
-- ? error, ? finished_at, ? updated_at, ? id.
UPDATE rota_jobs SET state = 5, last_error = ?, lease_until = NULL, resubmit = 0,
	finished_at = ?, updated_at = ? WHERE id = ?;

-- name: run_again
-- Starts a new cycle of a resubmitted job (RunAgain).
-- ? run_at, ? slot, ? whether to drop the token, ? deadline (NULL: none),
-- ? updated_at, ? id.
UPDATE rota_jobs SET state = 0, run_at = ?, slot = ?, data = coalesce(next_data, data), next_data = NULL,
	resubmit = 0, resubmit_at = NULL, attempt = 0, result = NULL, last_error = NULL, errors = NULL, progress = 0,
	lease_until = NULL, token = CASE WHEN ? THEN NULL ELSE token END, expires_at = ?, updated_at = ? WHERE id = ?;

-- name: cancel
-- Cancels a job (Cancel).
-- ? cancel requested (a running job's worker is told), ? the reason
-- (NULL keeps the last error: a dependency's end), ? finished_at,
-- ? updated_at, ? id.
UPDATE rota_jobs SET state = 5, cancel_requested = ?, last_error = coalesce(?, last_error), lease_until = NULL, resubmit = 0,
	finished_at = ?, updated_at = ? WHERE id = ?;

-- name: update
-- Gives a pending or paused job a re-add's values (Update). The schedule
-- is set with CASE, since NULL is a value there (no schedule): the flag
-- says whether to set it.
-- ? run_at, ? data, ? priority, ? a new type, ? max attempts, ? back-off
-- base, ? back-off max, ? meta (NULL keeps each of these), ? whether to set
-- the schedule, ? the schedule (NULL: none), ? the missed-slot policy
-- (NULL keeps it), ? slot, ? deadline (NULL keeps it), ? updated_at, ? id.
UPDATE rota_jobs SET run_at = ?, data = coalesce(?, data), priority = coalesce(?, priority), type = coalesce(?, type),
	max_attempts = coalesce(?, max_attempts), backoff_base = coalesce(?, backoff_base),
	backoff_max = coalesce(?, backoff_max), meta = coalesce(?, meta),
	repeat = CASE WHEN ? THEN ? ELSE repeat END, missed = coalesce(?, missed), slot = ?, expires_at = coalesce(?, expires_at),
	updated_at = ? WHERE id = ?;

-- name: revive
-- Makes an ended job pending again as a new cycle (Revive). The jobs
-- added after it learnt of its end already: the new cycle's end is
-- theirs no more (has_dependants).
-- Parameters as in update, but the deadline is set (NULL: none), and the
-- job is no longer expired.
UPDATE rota_jobs SET state = 0, run_at = ?, data = coalesce(?, data), priority = coalesce(?, priority), type = coalesce(?, type),
	max_attempts = coalesce(?, max_attempts), backoff_base = coalesce(?, backoff_base),
	backoff_max = coalesce(?, backoff_max), meta = coalesce(?, meta),
	repeat = CASE WHEN ? THEN ? ELSE repeat END, missed = coalesce(?, missed), slot = ?, expires_at = ?, expired = 0, attempt = 0, errors = NULL, last_error = NULL, result = NULL,
	progress = 0, finished_at = NULL, lease_until = NULL, cancel_requested = 0, has_dependants = 0, updated_at = ? WHERE id = ?;

-- name: mark_resubmit
-- Marks a running job to run again (MarkResubmit).
-- ? run_at (NULL: now, or a recurring job's next slot), ? data (NULL
-- keeps it), ? whether to set the schedule, ? the schedule (NULL: none),
-- ? the missed-slot policy (NULL keeps it), ? updated_at, ? id.
UPDATE rota_jobs SET resubmit = 1, resubmit_at = ?, next_data = coalesce(?, next_data),
	repeat = CASE WHEN ? THEN ? ELSE repeat END, missed = coalesce(?, missed), updated_at = ? WHERE id = ?;

-- name: touch
-- Sets what a finish changes besides the job's state (lifecycle.Touch).
-- ?1 data, ?2 priority (NULL keeps each), ?3 whether to end the schedule,
-- ?4 updated_at, ?5 id.
UPDATE rota_jobs SET data = coalesce(?1, data), priority = coalesce(?2, priority),
	repeat = CASE WHEN ?3 THEN NULL ELSE repeat END, slot = CASE WHEN ?3 THEN NULL ELSE slot END, updated_at = ?4 WHERE id = ?5;

-- name: remove
-- Deletes a job (Remove).
-- ? id.
DELETE FROM rota_jobs WHERE id = ?;

-- name: extend
-- Extends a lease and sets data and progress (Extend: a heartbeat).
-- ? lease_until, ? data, ? progress (NULL keeps each), ? updated_at, ? id.
UPDATE rota_jobs SET lease_until = ?, data = coalesce(?, data), progress = coalesce(?, progress),
	updated_at = ? WHERE id = ?;

-- name: recur
-- Starts a recurring job's next cycle (Recur): the run's result and error
-- are its last outcome, its errors and attempts start again.
-- ? run_at, ? slot, ? result, ? error (NULL: none), ? finished_at,
-- ? updated_at, ? whether to drop the token, ? the next slot's deadline
-- (NULL: none), ? id.
UPDATE rota_jobs SET state = 0, run_at = ?, slot = ?, attempt = 0, result = ?, last_error = ?, errors = NULL,
	progress = 0, lease_until = NULL, finished_at = ?, updated_at = ?, token = CASE WHEN ? THEN NULL ELSE token END,
	expires_at = ? WHERE id = ?;

-- name: skip_slots
-- Takes back a claim of a job that missed its slots (SkipSlots).
-- ? run_at, ? slot, ? attempt, ? the slot's deadline (NULL: none),
-- ? updated_at, ? id.
UPDATE rota_jobs SET state = 0, run_at = ?, slot = ?, attempt = ?, lease_until = NULL, token = NULL,
	expires_at = ?, updated_at = ? WHERE id = ?;

-- name: lapse
-- Ends a pending job whose deadline passed, expired, or moves a recurring
-- one to its next slot (Lapse).
-- ? state, ? run_at, ? slot, ? deadline, ? last error, ? whether it ended
-- expired, ? finished_at (NULL keeps it), ? updated_at, ? id.
UPDATE rota_jobs SET state = ?, run_at = ?, slot = ?, expires_at = ?, last_error = ?, expired = ?,
	resubmit = 0, finished_at = coalesce(?, finished_at), updated_at = ? WHERE id = ?;

-- name: edit
-- Changes a job in place (Edit); the schedule as in update.
-- ? data, ? priority (NULL keeps each), ? whether to set the schedule,
-- ? the schedule (NULL: none), ? the missed-slot policy (NULL keeps it),
-- ? slot, ? run_at, ? updated_at, ? id.
UPDATE rota_jobs SET data = coalesce(?, data), priority = coalesce(?, priority),
	repeat = CASE WHEN ? THEN ? ELSE repeat END, missed = coalesce(?, missed), slot = ?, run_at = ?, updated_at = ? WHERE id = ?;

-- name: wait
-- Pauses a parent whose run completed until its children end (Wait).
-- ? run_at, ? result, ? updated_at, ? id.
UPDATE rota_jobs SET state = 2, run_at = ?, result = ?, lease_until = NULL, updated_at = ? WHERE id = ?;

-- name: resume
-- Makes a paused job pending (Resume).
-- ? run_at, ? updated_at, ? id.
UPDATE rota_jobs SET state = 0, run_at = ?, updated_at = ? WHERE id = ?;

-- name: deps_done
-- Counts a waiting job's dependency as ended (DepsDone): it stays waiting
-- or becomes pending at run_at.
-- ? state, ? run_at, ? the unended dependencies left, ? updated_at, ? id.
UPDATE rota_jobs SET state = ?, run_at = ?, deps_waiting = ?, updated_at = ? WHERE id = ?;
