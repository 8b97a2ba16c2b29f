-- Dependencies, set-based (deps.go): the completions of jobs with
-- dependants, which complete_many leaves, and what the ends of
-- dependencies do to the jobs that wait for them.

-- name: complete_dependencies
-- complete_many for the jobs that have dependants, in the finish's
-- transaction (the jobs complete_many leaves): the same condition and
-- change. The caller applies their ends to their dependants
-- (engine.Finish) in the same transaction, together, and counts them.
-- ? finished_at, ? updated_at, ? the items, a JSON array of [id, "token"]
-- or [id, "token", "hex of the result"].
-- Returns id, type, grp, run_at, batch id (0: none) of each job completed.
UPDATE rota_jobs SET state = 3, result = unhex(j.value->>2), lease_until = NULL,
	finished_at = ?, updated_at = ?
	FROM json_each(?) AS j
	WHERE rota_jobs.id = j.value->>0 AND rota_jobs.token = j.value->>1 AND +rota_jobs.state = 1 AND rota_jobs.resubmit = 0
		AND rota_jobs.repeat IS NULL AND rota_jobs.parent_id IS NULL AND rota_jobs.has_children = 0
		AND rota_jobs.has_dependants = 1
	RETURNING rota_jobs.id, rota_jobs.type, rota_jobs.grp, rota_jobs.run_at, coalesce(rota_jobs.batch_id, 0);

-- name: deps_done_many
-- deps_done for many waiting jobs at once (engine.DepsTx): each stays
-- waiting with fewer unended dependencies, or becomes pending at its
-- run_at.
-- ? updated_at, ? the jobs, a JSON array of [id, state, run_at, unended
-- dependencies left].
UPDATE rota_jobs SET state = j.value->>1, run_at = j.value->>2, deps_waiting = j.value->>3, updated_at = ?
	FROM json_each(?) AS j
	WHERE rota_jobs.id = j.value->>0;

-- name: deps_of_many
-- deps_of for the jobs an accept claimed that were added after others, in
-- one statement: by dependant, each in the order it named them.
-- ? the dependants' ids, a JSON array.
SELECT e.dependant, e.dependency, j.id IS NULL, coalesce(j.type, ''), j.key, coalesce(j.grp, ''), coalesce(j.state, 5), j.result, j.last_error
	FROM json_each(?) AS u JOIN rota_deps e ON e.dependant = u.value LEFT JOIN rota_jobs j ON j.id = e.dependency
	ORDER BY e.dependant, e.pos;
