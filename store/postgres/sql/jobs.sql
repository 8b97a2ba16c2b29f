-- The statements of job operations around the plans (jobs.go): locking
-- and reading rows for the engine, adds, heartbeats, the batched
-- completion, families, lease expiry and retention.

-- name: lock_hot
-- Locks and reads the jobs with these ids in the hot table, in id order
-- (txn.Lock); lock_ended does the same in the ended table. The last column
-- is the transaction's now() (rowColumns).
-- $1 ids (bigint[]).
SELECT {{rowColumns}} FROM {{schema}}.jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE;

-- name: lock_ended
-- $1 ids (bigint[]).
SELECT {{rowColumns}} FROM {{schema}}.jobs_ended WHERE id = ANY($1) ORDER BY id FOR UPDATE;

-- name: peek_rows
-- Reads jobs without locking them, to explain a failed fence (rowColumns).
-- $1 ids (bigint[]).
SELECT {{rowColumns}} FROM {{schema}}.jobs WHERE id = ANY($1) UNION ALL SELECT {{rowColumns}} FROM {{schema}}.jobs_ended WHERE id = ANY($1);

-- name: now
-- The transaction's time (txn.Now), when no row read told it.
SELECT now();

-- name: job
-- A job as it now is, in whichever table (jobColumns).
-- $1 id.
SELECT {{jobColumns}} FROM {{schema}}.jobs WHERE id = $1 UNION ALL SELECT {{jobColumns}} FROM {{schema}}.jobs_ended WHERE id = $1;

-- name: lock_unique
-- Serialises unique adds of a type in a group across nodes, until the
-- transaction ends.
-- $1 the advisory lock's key (hash64 of "unique", schema, type, group).
SELECT pg_advisory_xact_lock($1);

-- name: unique
-- Finds a job that a unique add of a type and group finds
-- (lifecycle.Matches), through an index for each state. A job of another
-- group is never found: the add is then a new job in its own group.
-- $1 type, $2 group.
(SELECT id FROM {{schema}}.jobs WHERE type = $1 AND grp = $2 AND state = 0 AND attempt = 0 LIMIT 1)
	UNION ALL (SELECT id FROM {{schema}}.jobs WHERE type = $1 AND grp = $2 AND state = 0 AND attempt > 0 LIMIT 1)
	UNION ALL (SELECT id FROM {{schema}}.jobs WHERE type = $1 AND grp = $2 AND state = 1 LIMIT 1)
	UNION ALL (SELECT id FROM {{schema}}.jobs WHERE type = $1 AND grp = $2 AND state = 2 LIMIT 1)
	UNION ALL (SELECT id FROM {{schema}}.jobs_ended WHERE type = $1 AND grp = $2 AND state IN (4, 5) LIMIT 1) LIMIT 1;

-- name: same_data
-- The jobs of a type and group with these data, created after a time, in
-- either table, in id order (a unique window: engine.AddUniqueFor).
-- $1 type, $2 group, $3 data, $4 the window's start.
SELECT id FROM (SELECT id FROM {{schema}}.jobs WHERE type = $1 AND grp = $2 AND created_at > $4 AND data = $3
	UNION ALL SELECT id FROM {{schema}}.jobs_ended WHERE type = $1 AND grp = $2 AND created_at > $4 AND data = $3) AS j ORDER BY id;

-- name: lock_keys
-- Serialises adds of the same (type, group, key) across nodes, until the
-- transaction ends; the keys are sorted, so adds cannot deadlock.
-- $1 the advisory locks' keys (bigint[], hash64 of "key", schema, type, group, key).
SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k;

-- name: find_keys
-- The jobs that hold these keys, in either table.
-- $1 types, $2 groups, $3 keys (text[], one element per key).
SELECT type, grp, key, id FROM {{schema}}.jobs WHERE (type, grp, key) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])) UNION ALL SELECT type, grp, key, id FROM {{schema}}.jobs_ended WHERE (type, grp, key) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]));

-- name: key_of
-- A job's key (NULL: none), in either table.
-- $1 id.
SELECT key FROM {{schema}}.jobs WHERE id = $1 UNION ALL SELECT key FROM {{schema}}.jobs_ended WHERE id = $1;

-- name: add_types
-- Registers types this node has not seen (an add that inserts no job).
-- $1 type names (text[]).
INSERT INTO {{schema}}.types (name, updated_at) SELECT unnest($1::text[]), now() ON CONFLICT DO NOTHING;

-- name: add_type
-- Registers the type a plan renames a job to.
-- $1 type name.
INSERT INTO {{schema}}.types (name, updated_at) VALUES ($1, now()) ON CONFLICT DO NOTHING;

-- name: insert
-- Inserts a batch from arrays in one statement, registering new types in
-- the same statement (first, so that two nodes adding the first jobs of a
-- type wait for each other there, before they hold anything else). Rows
-- are inserted, and so get their ids, in the order of the batch. Used in a
-- transaction, which appends the group counts before it commits
-- (flush_counts); insert_counted appends them itself.
-- $1 new type names; then one array element per job: $2 type, $3 key
-- (NULL: none), $4 group, $5 priority, $6 run_at (NULL: now), $7 data,
-- $8 max attempts, $9 back-off base (µs), $10 back-off max (µs), $11 meta
-- (NULL: none), $12 schedule (NULL: none), $13 missed-slot policy,
-- $14 retry-after (µs, 0: none), $15 state, $16 parent id (0: none), $17 run timeout (µs, 0: none),
-- $18 deadline (NULL: none), $19 unique window (µs, 0: none), $20 debounce (µs, 0: none), $21 batch id (0: none).
-- Returns id, run_at, created_at in the batch's order.
WITH ty AS (
	INSERT INTO {{schema}}.types (name, updated_at) SELECT unnest($1::text[]), now() ON CONFLICT DO NOTHING RETURNING 1),
ins AS (INSERT INTO {{schema}}.jobs (type, key, grp, priority, state, run_at, data, max_attempts, backoff_base, backoff_max, created_at, updated_at, meta,
	repeat, missed, slot, retry_after, parent_id, run_timeout, expires_at, unique_for, debounce, batch_id)
SELECT u.type, u.key, u.grp, u.priority, u.state, coalesce(u.run_at, now()), u.data, u.max_attempts, u.base, u.maxb, now(), now(), u.meta,
	u.repeat, u.missed, CASE WHEN u.repeat IS NOT NULL THEN coalesce(u.run_at, now()) END, nullif(u.retry_after, 0), nullif(u.parent, 0), nullif(u.run_timeout, 0), u.expires_at,
	nullif(u.unique_for, 0), nullif(u.debounce, 0), nullif(u.batch, 0)
FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::bytea[], $8::bigint[], $9::bigint[], $10::bigint[], $11::text[],
	$12::text[], $13::smallint[], $14::bigint[], $15::smallint[], $16::bigint[], $17::bigint[], $18::timestamptz[],
	$19::bigint[], $20::bigint[], $21::bigint[])
	WITH ORDINALITY AS u(type, key, grp, priority, run_at, data, max_attempts, base, maxb, meta, repeat, missed, retry_after, state, parent, run_timeout, expires_at, unique_for, debounce, batch, ord)
WHERE (SELECT count(*) FROM ty) >= 0
ORDER BY u.ord
RETURNING id, run_at, created_at, type, grp, state) SELECT id, run_at, created_at FROM ins ORDER BY id;

-- name: insert_counted
-- insert, for an insert that is a transaction of its own: it also
-- appends its pending jobs to their groups' counts (as flush_counts does),
-- locking no group row (pending_changes, migration 0022).
-- Parameters as in insert.
WITH ty AS (
	INSERT INTO {{schema}}.types (name, updated_at) SELECT unnest($1::text[]), now() ON CONFLICT DO NOTHING RETURNING 1),
ins AS (INSERT INTO {{schema}}.jobs (type, key, grp, priority, state, run_at, data, max_attempts, backoff_base, backoff_max, created_at, updated_at, meta,
	repeat, missed, slot, retry_after, parent_id, run_timeout, expires_at, unique_for, debounce, batch_id)
SELECT u.type, u.key, u.grp, u.priority, u.state, coalesce(u.run_at, now()), u.data, u.max_attempts, u.base, u.maxb, now(), now(), u.meta,
	u.repeat, u.missed, CASE WHEN u.repeat IS NOT NULL THEN coalesce(u.run_at, now()) END, nullif(u.retry_after, 0), nullif(u.parent, 0), nullif(u.run_timeout, 0), u.expires_at,
	nullif(u.unique_for, 0), nullif(u.debounce, 0), nullif(u.batch, 0)
FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::bytea[], $8::bigint[], $9::bigint[], $10::bigint[], $11::text[],
	$12::text[], $13::smallint[], $14::bigint[], $15::smallint[], $16::bigint[], $17::bigint[], $18::timestamptz[],
	$19::bigint[], $20::bigint[], $21::bigint[])
	WITH ORDINALITY AS u(type, key, grp, priority, run_at, data, max_attempts, base, maxb, meta, repeat, missed, retry_after, state, parent, run_timeout, expires_at, unique_for, debounce, batch, ord)
WHERE (SELECT count(*) FROM ty) >= 0
ORDER BY u.ord
RETURNING id, run_at, created_at, type, grp, state), cnt AS (INSERT INTO {{schema}}.pending_changes (type, grp, n)
	SELECT type, grp, count(*) FROM ins WHERE state = 0 GROUP BY type, grp RETURNING 1) SELECT id, run_at, created_at FROM ins ORDER BY id;

-- name: heartbeat
-- Extends leases by each job's lease length and updates data and
-- progress, where the token is current and the run within its timeout
-- (lifecycle.Heartbeat's preconditions; no lease outlasts the timeout). Items it does not return failed the fence. Used when an
-- item carries data: it waits for the WAL flush.
-- $1 ids (bigint[]), $2 tokens by id (jsonb), $3 data by id (jsonb of
-- text), $4 progress by id (jsonb), $5 the default lease (µs).
-- Returns id, lease_until, resubmit, type, grp.
UPDATE {{schema}}.jobs j SET lease_until = least(CASE WHEN j.retry_after IS NOT NULL THEN j.lease_until
		ELSE now() + coalesce(nullif(j.lease_timeout, 0), $5) * interval '1 microsecond' END,
		j.started_at + coalesce(j.run_limit, j.run_timeout) * interval '1 microsecond'),
	data = coalesce(convert_to($3::jsonb ->> j.id::text, 'UTF8'), j.data),
	progress = coalesce(($4::jsonb ->> j.id::text)::float8, j.progress), updated_at = now()
WHERE j.id = ANY($1::bigint[]) AND j.state + 0 = 1 AND j.token = $2::jsonb ->> j.id::text
	AND (coalesce(j.run_limit, j.run_timeout) IS NULL OR now() < j.started_at + coalesce(j.run_limit, j.run_timeout) * interval '1 microsecond')
RETURNING j.id, j.lease_until, j.resubmit, j.type, j.grp;

-- name: heartbeat_bytes
-- heartbeat for one item whose data is not UTF-8.
-- Parameters as in heartbeat, but $3 is the data itself (bytea).
UPDATE {{schema}}.jobs j SET lease_until = least(CASE WHEN j.retry_after IS NOT NULL THEN j.lease_until
		ELSE now() + coalesce(nullif(j.lease_timeout, 0), $5) * interval '1 microsecond' END,
		j.started_at + coalesce(j.run_limit, j.run_timeout) * interval '1 microsecond'),
	data = coalesce($3::bytea, j.data),
	progress = coalesce(($4::jsonb ->> j.id::text)::float8, j.progress), updated_at = now()
WHERE j.id = ANY($1::bigint[]) AND j.state + 0 = 1 AND j.token = $2::jsonb ->> j.id::text
	AND (coalesce(j.run_limit, j.run_timeout) IS NULL OR now() < j.started_at + coalesce(j.run_limit, j.run_timeout) * interval '1 microsecond')
RETURNING j.id, j.lease_until, j.resubmit, j.type, j.grp;

-- name: heartbeat_async
-- heartbeat without data: losing it in a database crash only ends the
-- lease early, so it need not wait for the WAL flush.
-- Parameters as in heartbeat.
UPDATE {{schema}}.jobs j SET lease_until = least(CASE WHEN j.retry_after IS NOT NULL THEN j.lease_until
		ELSE now() + coalesce(nullif(j.lease_timeout, 0), $5) * interval '1 microsecond' END,
		j.started_at + coalesce(j.run_limit, j.run_timeout) * interval '1 microsecond'),
	data = coalesce(convert_to($3::jsonb ->> j.id::text, 'UTF8'), j.data),
	progress = coalesce(($4::jsonb ->> j.id::text)::float8, j.progress), updated_at = now()
WHERE j.id = ANY($1::bigint[]) AND j.state + 0 = 1 AND j.token = $2::jsonb ->> j.id::text
	AND (coalesce(j.run_limit, j.run_timeout) IS NULL OR now() < j.started_at + coalesce(j.run_limit, j.run_timeout) * interval '1 microsecond') AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL
RETURNING j.id, j.lease_until, j.resubmit, j.type, j.grp;

-- name: complete
-- Completes, in one statement, the jobs for which lifecycle.Completes
-- holds (running under the item's token, not resubmitted) and that are in
-- no batch (a member's ending takes the general path, which counts it in
-- its batch and may add the batch's callbacks), moving them to
-- the ended table with their results: the plain completion
-- lifecycle.Finish would plan for each (its state, result, finished_at).
-- Items it does not return take the general path.
-- $1 ids (bigint[]), $2 tokens by id (jsonb), $3 results by id (jsonb of text).
-- Returns id, type, grp, run_at.
WITH d AS (DELETE FROM {{schema}}.jobs j
	WHERE j.id = ANY($1::bigint[]) AND j.state + 0 = 1 AND NOT j.resubmit AND j.repeat IS NULL
		AND j.parent_id IS NULL AND NOT j.has_children AND NOT j.has_dependants AND j.batch_id IS NULL AND j.token = $2::jsonb ->> j.id::text
	RETURNING j.*)
INSERT INTO {{schema}}.jobs_ended ({{endedColumns}})
SELECT d.id, d.type, d.key, d.grp, d.priority, 3, d.run_at, d.attempt, d.max_attempts, d.backoff_base, d.backoff_max,
	d.lease_timeout, NULL, d.token, d.worker, d.cancel_requested, d.resubmit, d.resubmit_at, d.progress, d.created_at,
	d.started_at, now(), now(), d.retry_after, d.parent_id, d.repeat, d.data, d.next_data,
	convert_to($3::jsonb ->> d.id::text, 'UTF8'), d.last_error, d.errors, d.meta, d.missed, d.slot, d.has_children, d.bedrock_id, d.prev_started_at, d.run_timeout,
	d.expires_at, d.expired, d.unique_for, d.debounce,
	d.has_deps, d.deps_waiting, d.dep_policy, d.has_dependants, d.batch_id
FROM d RETURNING id, type, grp, run_at;

-- name: children
-- The ids of a parent's unended children (in the hot table), in id order.
-- $1 parent id.
SELECT id FROM {{schema}}.jobs WHERE parent_id = $1 ORDER BY id;

-- name: children_paused
-- The ids of a parent's paused children, in id order.
-- $1 parent id.
SELECT id FROM {{schema}}.jobs WHERE parent_id = $1 AND state = 2 ORDER BY id;

-- name: children_all
-- The ids of all a parent's children, ended or not, in id order.
-- $1 parent id.
SELECT id FROM (SELECT id FROM {{schema}}.jobs WHERE parent_id = $1 UNION ALL
			SELECT id FROM {{schema}}.jobs_ended WHERE parent_id = $1) c ORDER BY id;

-- name: drop_ended
-- Deletes a parent's ended children (ended jobs are in no count).
-- $1 parent id, $2 whether failed children stay.
-- Returns id, type, grp, state of each. Their logs go with them.
WITH d AS (DELETE FROM {{schema}}.jobs_ended WHERE parent_id = $1 AND (NOT $2 OR state <> 4) RETURNING id, type, grp, state),
	l AS (DELETE FROM {{schema}}.job_logs WHERE job_id IN (SELECT id FROM d)),
	a AS (DELETE FROM {{schema}}.job_log_attempts WHERE job_id IN (SELECT id FROM d))
SELECT id, type, grp, state FROM d;

-- name: mark_parent
-- Records that a job has children (it is running or paused: in the hot table).
-- $1 id.
UPDATE {{schema}}.jobs SET has_children = true WHERE id = $1;

-- name: unfinished
-- Whether any of a parent's children is pending, running or paused. It
-- asks whether one exists rather than count them all (a fan-out of n
-- children would cost n² index steps).
-- $1 parent id.
SELECT EXISTS (SELECT FROM {{schema}}.jobs WHERE parent_id = $1);

-- name: expired
-- Locks and reads up to 1,000 running jobs whose lease ran out, oldest
-- first, skipping jobs that others hold (rowColumns).
-- $1 how far the caller's now is ahead of this node's clock (µs).
SELECT {{rowColumns}} FROM {{schema}}.jobs
		WHERE lease_until < now() + $1::bigint * interval '1 microsecond' AND state = 1
		ORDER BY lease_until LIMIT 1000 FOR UPDATE SKIP LOCKED;

-- name: next_lease
-- When the next lease runs out (NULL: none running).
SELECT min(lease_until) FROM {{schema}}.jobs WHERE lease_until IS NOT NULL;

-- name: lapsed
-- Locks and reads up to 1,000 pending jobs whose deadline is not after
-- the caller's now, earliest first, skipping jobs that others hold (an
-- accept claiming them skips them too: jobs_deadline, rowColumns).
-- $1 how far the caller's now is ahead of this node's clock (µs).
SELECT {{rowColumns}} FROM {{schema}}.jobs
		WHERE expires_at <= now() + $1::bigint * interval '1 microsecond' AND expires_at IS NOT NULL AND state = 0
		ORDER BY expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED;

-- name: next_deadline
-- The earliest deadline of a pending job (NULL: none; jobs_deadline).
SELECT min(expires_at) FROM {{schema}}.jobs WHERE expires_at IS NOT NULL AND state = 0;

-- name: retire
-- Deletes ended jobs past their type's retention (store.Retirer,
-- store.KeptForSQL), but not the children of a parent still in the hot
-- table, nor a dependency whose dependants have yet to run (waiting,
-- pending or running: they read its outcome when they start), and forgets
-- the dependencies of those it deletes. Returns how many it deleted.
-- $1 how far the caller's now is ahead of this node's clock (µs),
-- $2 the default retention (µs), $3 at most this many jobs.
-- Returns how many it deleted; their logs go with them.
WITH d AS (DELETE FROM {{schema}}.jobs_ended WHERE id IN (SELECT e.id FROM {{schema}}.jobs_ended e LEFT JOIN {{schema}}.types t ON t.name = e.type
	WHERE e.finished_at < now() + $1 * interval '1 microsecond' - {{keptFor "e" "t" "$2"}} * interval '1 microsecond'
		AND (e.parent_id IS NULL OR NOT EXISTS (SELECT FROM {{schema}}.jobs p WHERE p.id = e.parent_id))
		AND NOT EXISTS (SELECT FROM {{schema}}.deps x JOIN {{schema}}.jobs j ON j.id = x.dependant
			WHERE x.dependency = e.id AND j.state IN (0, 1, 6))
	LIMIT $3) RETURNING id, has_deps),
	l AS (DELETE FROM {{schema}}.job_logs WHERE job_id IN (SELECT id FROM d)),
	a AS (DELETE FROM {{schema}}.job_log_attempts WHERE job_id IN (SELECT id FROM d)),
	dd AS (DELETE FROM {{schema}}.deps WHERE dependant IN (SELECT id FROM d WHERE has_deps))
SELECT count(*) FROM d;

-- name: flush_counts
-- Appends the collected changes of the groups' pending counts
-- (txn.flushCounts) to pending_changes, which claims fold into groups
-- (fold_pending, migration 0022): so the transaction locks no group row.
-- $1 types, $2 groups (text[]), $3 changes of their pending counts (bigint[]).
INSERT INTO {{schema}}.pending_changes (type, grp, n) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]);

-- name: fold_lock
-- Takes the fold locks of the types ($1, text[]) in name order, so that
-- folds of one type run one at a time (migration 0022): the first statement
-- of a fold's transaction. A claim only waits for a fold of its types that
-- is under way (asynchronous commits, no WAL flush).
SELECT count(pg_advisory_xact_lock(hashtextextended('rota fold ' || current_schema() || ' ' || t, 0))) FROM (SELECT DISTINCT t FROM unnest($1::text[]) AS u(t) ORDER BY t) l
	WHERE (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL;

-- name: fold_pending_one
-- Folds the pending changes of the types ($1, text[]) into groups in one
-- statement, as one transaction's, when that gives what fold_pending
-- (migration 0022) gives by applying each transaction's in turn: for each
-- type, the changes are one transaction's, or they only add jobs and
-- either to one group or to a type with a group that has pending jobs
-- (then every group that starts again starts at that type's clock,
-- which they do not move). That is the usual case: adds, then a claim. It
-- notes that it folded (rotajobs.folded); otherwise it leaves them all to
-- fold_pending. After fold_lock, in a transaction of its own that need not
-- wait for the WAL flush: a fold lost in a crash leaves its changes to be
-- folded again.
WITH d AS (DELETE FROM {{schema}}.pending_changes c WHERE c.type = ANY($1::text[])
		AND (SELECT bool_and(t.together) FROM (SELECT min(o.xact) = max(o.xact) OR (bool_and(o.n > 0)
				AND (count(DISTINCT o.grp) = 1 OR EXISTS (SELECT FROM {{schema}}.groups x WHERE x.type = o.type AND x.pending > 0))) AS together
			FROM {{schema}}.pending_changes o WHERE o.type = ANY($1::text[]) GROUP BY o.type) t)
	RETURNING c.type, c.grp, c.n),
f AS (SELECT set_config('rotajobs.folded', 'true', true) FROM d LIMIT 1),
c AS (SELECT d.type, d.grp, sum(d.n)::bigint AS dp FROM d GROUP BY d.type, d.grp)
INSERT INTO {{schema}}.groups AS g (type, grp, pending, turn)
	SELECT c.type, c.grp, c.dp, CASE WHEN c.dp > 0 THEN coalesce((SELECT min(x.turn) FROM {{schema}}.groups x WHERE x.type = c.type AND x.pending > 0),
		(SELECT y.vclock FROM {{schema}}.types y WHERE y.name = c.type), 0) ELSE 0 END
	FROM c WHERE c.dp <> 0 AND (SELECT count(*) FROM f) >= 0 ORDER BY c.type, c.grp
	ON CONFLICT (type, grp) DO UPDATE SET
		turn = CASE WHEN g.pending <= 0 AND g.pending + excluded.pending > 0 THEN greatest(g.turn, excluded.turn) ELSE g.turn END,
		pending = g.pending + excluded.pending;

-- name: fold_pending
-- Folds the pending changes of the types ($1, text[]) when
-- fold_pending_one before it in the transaction folded none (they were
-- several transactions': fold_pending in migration 0022 applies them in
-- order); not calling the function when there are none. One of the two
-- folds, so that the transaction locks group rows in one statement's order
-- (changes committed since wait for the next fold).
SELECT {{schema}}.fold_pending($1::text[]) WHERE current_setting('rotajobs.folded', true) IS DISTINCT FROM 'true'
	AND EXISTS (SELECT FROM {{schema}}.pending_changes c WHERE c.type = ANY($1::text[]));

-- name: fold_all
-- Folds every type's pending changes (the lease sweep), in a transaction
-- of its own that need not wait for the WAL flush; fold_pending takes the
-- types' fold locks.
SELECT {{schema}}.fold_pending(NULL) WHERE (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL;

-- name: dependants
-- The jobs added after jobs (their dependants), by dependency, each in
-- id order.
-- $1 the dependencies' ids (bigint[]).
SELECT dependency, dependant FROM {{schema}}.deps WHERE dependency = ANY($1::bigint[]) ORDER BY dependency, dependant;

-- name: add_deps
-- Records a job's dependencies, in the order it names them, marks the
-- unended ones as having dependants (their ends go through the engine),
-- and gives the job its count of unended dependencies and its policy.
-- $1 the dependant's id, $2 the dependencies (bigint[]), $3 the unended
-- ones (bigint[]), $4 the policy.
WITH e AS (INSERT INTO {{schema}}.deps (dependency, dependant, pos)
		SELECT d, $1, o FROM unnest($2::bigint[]) WITH ORDINALITY AS u(d, o)),
	m AS (UPDATE {{schema}}.jobs SET has_dependants = true WHERE id = ANY($3::bigint[]) AND NOT has_dependants)
UPDATE {{schema}}.jobs SET has_deps = true, deps_waiting = cardinality($3::bigint[]), dep_policy = $4 WHERE id = $1;

-- name: drop_deps
-- Forgets the dependencies of a job that is removed; its dependants'
-- edges stay, so that a dependant learns the dependency was removed.
-- $1 id.
DELETE FROM {{schema}}.deps WHERE dependant = $1;
