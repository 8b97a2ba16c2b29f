-- The statements of job operations around the plans (jobs.go): reading
-- rows for the engine, adds, the batched completion, families, the groups'
-- counts, lease expiry and retention. The writer's transaction holds the
-- whole database, so a row read is a row locked. Times are in
-- microseconds since the epoch.

-- name: read_row
-- A job's row for the rules (rowColumns).
-- ? id.
SELECT {{rowColumns}} FROM rota_jobs WHERE id = ?;

-- name: count_jobs
-- How many jobs the database holds (an export's total, a backup's check).
SELECT count(*) FROM rota_jobs;

-- name: job
-- A job as it now is (jobColumns).
-- ? id.
SELECT {{jobColumns}} FROM rota_jobs WHERE id = ?;

-- name: insert
-- Adds a job. It is the only insert into rota_jobs, and no trigger counts
-- it: add counts the jobs it inserts (addCounts), since an insert
-- trigger's mere presence slows every insert.
-- ? type, ? key (NULL: none), ? group, ? priority, ? state, ? run_at,
-- ? data, ? max attempts, ? back-off base (µs), ? back-off max (µs),
-- ? created_at, ? updated_at, ? meta, ? schedule (NULL: none),
-- ? missed-slot policy, ? slot, ? retry-after (µs, NULL: none),
-- ? parent id (NULL: none), ? run timeout (µs, NULL: none), ? deadline
-- (NULL: none), ? unique window (µs, NULL: none), ? debounce (µs, NULL:
-- none), ? batch id (NULL: none).
INSERT INTO rota_jobs (type, key, grp, priority, state, run_at, data, max_attempts,
	backoff_base, backoff_max, created_at, updated_at, meta, repeat, missed, slot, retry_after, parent_id, run_timeout, expires_at,
	unique_for, debounce, batch_id)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: key_holder
-- The job that holds a key in a type and group.
-- ? type, ? group, ? key.
SELECT id FROM rota_jobs WHERE type = ? AND grp = ? AND key = ?;

-- name: key_of
-- A job's key (NULL: none).
-- ? id.
SELECT key FROM rota_jobs WHERE id = ?;

-- name: unique
-- Finds a job that a unique add of a type and group finds
-- (lifecycle.Matches): pending ones through rota_jobs_next, running ones
-- through rota_jobs_lease, and the rest (paused, failed, cancelled)
-- through rota_jobs_state, filtered by type and group. A job of another
-- group is never found: the add is then a new job in its own group. An
-- index of those by type would make unique adds of a type with many ended
-- jobs of other types cheaper, but it cost a tenth of the drain rate
-- (every claim and completion changes the state it is partial on), and
-- unique adds are rare.
-- ?1 type, ?2 group.
SELECT id FROM (SELECT id FROM rota_jobs WHERE type = ?1 AND grp = ?2 AND state = 0 LIMIT 1)
	UNION ALL SELECT id FROM (SELECT id FROM rota_jobs WHERE type = ?1 AND grp = ?2 AND state = 1 LIMIT 1)
	UNION ALL SELECT id FROM (SELECT id FROM rota_jobs WHERE type = ?1 AND grp = ?2 AND state IN (2, 4, 5, 6) LIMIT 1) LIMIT 1;

-- name: same_data
-- The jobs of a type and group with these data, created after a time, in
-- id order (a unique window: engine.AddUniqueFor).
-- ?1 type, ?2 group, ?3 data, ?4 the window's start (micros).
SELECT id FROM rota_jobs WHERE type = ?1 AND grp = ?2 AND created_at > ?4 AND CAST(data AS BLOB) = CAST(?3 AS BLOB) ORDER BY id;

-- name: register_type
-- Registers a type (a no-op when its row exists).
-- ? name, ? updated_at.
INSERT OR IGNORE INTO rota_types (name, lease_timeout, updated_at) VALUES (?, 0, ?);

-- name: complete_many
-- The common case of finish in one statement: completes every item for
-- which lifecycle.Completes holds (running under the item's token, not
-- resubmitted, not recurring, in no family). "+state" keeps SQLite from
-- driving the join from the state index (which scans every running job
-- for each item); each item is a rowid lookup. The caller counts the jobs.
-- ? finished_at, ? updated_at, ? the items, a JSON array of [id, "token"]
-- or [id, "token", "hex of the result"].
-- Returns id, type, grp, run_at, batch id (0: none) of each job completed.
UPDATE rota_jobs SET state = 3, result = unhex(j.value->>2), lease_until = NULL,
	finished_at = ?, updated_at = ?
	FROM json_each(?) AS j
	WHERE rota_jobs.id = j.value->>0 AND rota_jobs.token = j.value->>1 AND +rota_jobs.state = 1 AND rota_jobs.resubmit = 0
		AND rota_jobs.repeat IS NULL AND rota_jobs.parent_id IS NULL AND rota_jobs.has_children = 0
		AND rota_jobs.has_dependants = 0
	RETURNING rota_jobs.id, rota_jobs.type, rota_jobs.grp, rota_jobs.run_at, coalesce(rota_jobs.batch_id, 0);

-- name: count
-- Adds to the counts of a group whose row exists: jobs that leave a
-- count, or move between pending and running.
-- ? pending, ? running (each a change), ? type, ? group.
UPDATE rota_groups SET pending = pending + ?, running = running + ? WHERE type = ? AND grp = ?;

-- name: enter
-- Counts jobs that enter a group's pending or running count, making its
-- row if it has none. A group that had no pending jobs takes its turn no
-- earlier than its type's virtual clock (clock), so that it cannot have
-- banked turns while idle.
-- ? type, ? group, ? pending, ? running (each a change), ? the type's
-- clock.
INSERT INTO rota_groups (type, grp, pending, running, turn)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (type, grp) DO UPDATE SET
			turn = CASE WHEN pending = 0 AND excluded.pending > 0 THEN max(turn, excluded.turn) ELSE turn END,
			pending = pending + excluded.pending,
			running = running + excluded.running;

-- name: clock
-- A type's virtual clock (fair's rule): the smallest turn among its
-- groups with pending jobs, else the turn kept in rota_types.
-- ? type, ? type.
SELECT coalesce((SELECT min(turn) FROM rota_groups WHERE type = ? AND pending > 0),
		(SELECT vclock FROM rota_types WHERE name = ?), 0);

-- name: children
-- The ids of a parent's unended children, in id order.
-- ? parent id.
SELECT id FROM rota_jobs WHERE parent_id = ? AND state IN (0, 1, 2) ORDER BY id;

-- name: children_paused
-- The ids of a parent's paused children, in id order.
-- ? parent id.
SELECT id FROM rota_jobs WHERE parent_id = ? AND state = 2 ORDER BY id;

-- name: children_all
-- The ids of all a parent's children, in id order.
-- ? parent id.
SELECT id FROM rota_jobs WHERE parent_id = ? AND true ORDER BY id;

-- name: drop_ended
-- Deletes a parent's ended children (ended jobs are in no count).
-- ? parent id, ? whether failed children stay.
-- Returns id, type, grp, state of each.
DELETE FROM rota_jobs WHERE parent_id = ? AND state IN (3, 4, 5) AND NOT (? AND state = 4)
		RETURNING id, type, grp, state;

-- name: mark_parent
-- Records that a job has children.
-- ? id.
UPDATE rota_jobs SET has_children = 1 WHERE id = ?;

-- name: unfinished
-- One of a parent's children that is pending, running or paused, if any.
-- It runs after every child's end, so it must not count them all (that
-- made a fan-out of n children cost n² index steps): it looks from the
-- newest child back, and children mostly end oldest first, so the first
-- it meets is usually unfinished.
-- ? parent id.
SELECT id FROM rota_jobs INDEXED BY rota_jobs_parent
		WHERE parent_id = ? AND state IN (0, 1, 2) ORDER BY id DESC LIMIT 1;

-- name: expired
-- Up to 1,000 running jobs whose lease ended, oldest first.
-- ? now.
SELECT id FROM rota_jobs WHERE state = 1 AND lease_until < ? ORDER BY lease_until LIMIT 1000;

-- name: next_lease
-- When the next lease ends (NULL: none running).
SELECT min(lease_until) FROM rota_jobs WHERE state = 1;

-- name: lapsed
-- Up to 1,000 pending jobs whose deadline is not after now, earliest
-- first (rota_jobs_deadline).
-- ? now.
SELECT id FROM rota_jobs INDEXED BY rota_jobs_deadline WHERE state = 0 AND expires_at IS NOT NULL AND expires_at <= ?
	ORDER BY expires_at LIMIT 1000;

-- name: next_deadline
-- The earliest deadline of a pending job (NULL: none).
SELECT min(expires_at) FROM rota_jobs INDEXED BY rota_jobs_deadline WHERE state = 0 AND expires_at IS NOT NULL;

-- name: retire
-- Deletes ended jobs past their type's retention (store.Retirer,
-- store.KeptForSQL), but not the children of a parent that has not ended,
-- nor a dependency whose dependants have yet to run (waiting, pending or
-- running: they read its outcome when they start).
-- ?1 now, ?2 the default retention (µs), ?3 at most this many jobs.
-- Returns the id of each job deleted (the caller deletes their logs), and
-- whether it had dependencies.
DELETE FROM rota_jobs WHERE id IN (SELECT j.id FROM rota_jobs j LEFT JOIN rota_types t ON t.name = j.type
	WHERE j.state IN (3, 4, 5) AND j.finished_at < ?1 - {{keptFor "j" "t" "?2"}}
		AND (j.parent_id IS NULL OR NOT EXISTS (SELECT 1 FROM rota_jobs p WHERE p.id = j.parent_id AND p.state IN (0, 1, 2)))
		AND NOT EXISTS (SELECT 1 FROM rota_deps e JOIN rota_jobs d ON d.id = e.dependant
			WHERE e.dependency = j.id AND d.state IN (0, 1, 6))
	LIMIT ?3) RETURNING id, has_deps;

-- name: dependants
-- The jobs added after jobs (their dependants), by dependency, each in
-- id order.
-- ? the dependencies' ids, a JSON array.
SELECT dependency, dependant FROM rota_deps WHERE dependency IN (SELECT value FROM json_each(?)) ORDER BY dependency, dependant;

-- name: add_deps
-- Records a job's dependencies, in the order it names them.
-- ?1 the dependant's id, ?2 the dependencies (a JSON array of ids).
INSERT INTO rota_deps (dependency, dependant, pos) SELECT value, ?1, key FROM json_each(?2);

-- name: mark_dependants
-- Marks jobs as having dependants (their ends go through the engine).
-- ? the ids, a JSON array.
UPDATE rota_jobs SET has_dependants = 1 WHERE id IN (SELECT value FROM json_each(?)) AND has_dependants = 0;

-- name: set_deps
-- Gives a job added after others its count of unended dependencies and
-- its policy.
-- ? unended dependencies, ? policy, ? id.
UPDATE rota_jobs SET has_deps = 1, deps_waiting = ?, dep_policy = ? WHERE id = ?;

-- name: drop_deps
-- Forgets the dependencies of jobs that are deleted (removed or retired);
-- their dependants' edges stay, so that a dependant learns the
-- dependency was removed.
-- ? the ids, a JSON array.
DELETE FROM rota_deps WHERE dependant IN (SELECT value FROM json_each(?));
