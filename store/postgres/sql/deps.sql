-- Dependencies and batch members, set-based (deps.go): the completions
-- the plain one (complete) leaves for their dependants or their batch,
-- and what the ends of dependencies do to the jobs that wait for them.

-- name: complete_workflow
-- complete for the jobs that have dependants or are members of a batch,
-- in the finish's transaction (the jobs complete leaves): the same
-- condition and change, set-based. The caller applies their ends to their
-- dependants (engine.Finish) and counts them in their batches
-- (engine.BatchesCompleted) in the same transaction, one statement per
-- kind of work for the whole finish, the batches' rows last, so that
-- their locks are held little longer than the commit.
-- $1 ids (bigint[]), $2 tokens by id (jsonb), $3 results by id (jsonb of text).
-- Returns id, type, grp, run_at, batch_id (0: none), has_dependants.
WITH d AS (DELETE FROM {{schema}}.jobs j
	WHERE j.id = ANY($1::bigint[]) AND j.state + 0 = 1 AND NOT j.resubmit AND j.repeat IS NULL
		AND j.parent_id IS NULL AND NOT j.has_children AND (j.has_dependants OR j.batch_id IS NOT NULL)
		AND j.token = $2::jsonb ->> j.id::text
	RETURNING j.*)
INSERT INTO {{schema}}.jobs_ended ({{endedColumns}})
SELECT d.id, d.type, d.key, d.grp, d.priority, 3, d.run_at, d.attempt, d.max_attempts, d.backoff_base, d.backoff_max,
	d.lease_timeout, NULL, d.token, d.worker, d.cancel_requested, d.resubmit, d.resubmit_at, d.progress, d.created_at,
	d.started_at, now(), now(), d.retry_after, d.parent_id, d.repeat, d.data, d.next_data,
	convert_to($3::jsonb ->> d.id::text, 'UTF8'), d.last_error, d.errors, d.meta, d.missed, d.slot, d.has_children, d.bedrock_id, d.prev_started_at, d.run_timeout,
	d.expires_at, d.expired, d.unique_for, d.debounce,
	d.has_deps, d.deps_waiting, d.dep_policy, d.has_dependants, d.batch_id
FROM d RETURNING id, type, grp, run_at, coalesce(batch_id, 0), has_dependants;

-- name: deps_done_many
-- deps_done for many waiting jobs at once (engine.DepsTx): each stays
-- waiting with fewer unended dependencies, or becomes pending at its
-- run_at.
-- $1 ids (bigint[]), $2 states (smallint[]), $3 run_ats (timestamptz[]),
-- $4 the unended dependencies left (integer[]). Returns how many it changed.
UPDATE {{schema}}.jobs j SET state = u.state, run_at = u.run_at, deps_waiting = u.deps_waiting, updated_at = now()
	FROM unnest($1::bigint[], $2::smallint[], $3::timestamptz[], $4::integer[]) AS u(id, state, run_at, deps_waiting)
	WHERE j.id = u.id;
