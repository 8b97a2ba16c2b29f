-- The reads of read.go: jobs by id and by key, counts, the types, and
-- Bedrock's ids. (List's statement is assembled from its filters, in
-- read.go: see listSQL there.) A job is in exactly one of the two tables
-- in any snapshot, so a read of both is a UNION ALL.

-- name: jobs_by_id
-- Jobs by id, in either table (jobColumns).
-- $1 ids (bigint[]).
SELECT {{jobColumns}} FROM {{schema}}.jobs WHERE id = ANY($1) UNION ALL SELECT {{jobColumns}} FROM {{schema}}.jobs_ended WHERE id = ANY($1);

-- name: job_by_key
-- The job that holds a key in a type and group, in either table (jobColumns).
-- $1 type, $2 group, $3 key.
SELECT {{jobColumns}} FROM {{schema}}.jobs WHERE type = $1 AND grp = $2 AND key = $3 UNION ALL SELECT {{jobColumns}} FROM {{schema}}.jobs_ended WHERE type = $1 AND grp = $2 AND key = $3;

-- name: stats
-- Counts jobs by type, group and state, and how many ended ones are past
-- their retention (store.KeptForSQL).
-- $1 the default retention (µs).
SELECT j.type, j.grp, j.state, count(*),
			count(*) FILTER (WHERE j.state IN (3, 4, 5) AND j.finished_at < now() - {{keptFor "j" "y" "$1"}} * interval '1 microsecond')
			FROM (SELECT type, grp, state, finished_at FROM {{schema}}.jobs UNION ALL SELECT type, grp, state, finished_at FROM {{schema}}.jobs_ended) j LEFT JOIN {{schema}}.types y ON y.name = j.type
			GROUP BY j.type, j.grp, j.state ORDER BY j.type, j.grp, j.state;

-- name: type_configs
-- Every type's settings.
SELECT name, lease_timeout, bands_high, bands_low, group_max_running, paused, retention, failed_retention, max_running, run_timeout,
	rate_n, rate_per, burst FROM {{schema}}.types;

-- name: type_names
-- The names of the types every node knows.
SELECT name FROM {{schema}}.types;

-- name: bedrock_id
-- A job's Bedrock id (NULL: none yet), in either table.
-- $1 id.
SELECT bedrock_id FROM {{schema}}.jobs WHERE id = $1 UNION ALL SELECT bedrock_id FROM {{schema}}.jobs_ended WHERE id = $1;

-- name: set_bedrock_id_hot
-- Gives a job of the hot table a Bedrock id that no job holds;
-- set_bedrock_id_ended does the same in the ended table.
-- $1 id, $2 the Bedrock id.
UPDATE {{schema}}.jobs SET bedrock_id = $2 WHERE id = $1 AND bedrock_id IS NULL
						AND NOT EXISTS (SELECT FROM {{schema}}.jobs WHERE bedrock_id = $2)
						AND NOT EXISTS (SELECT FROM {{schema}}.jobs_ended WHERE bedrock_id = $2);

-- name: set_bedrock_id_ended
-- $1 id, $2 the Bedrock id.
UPDATE {{schema}}.jobs_ended SET bedrock_id = $2 WHERE id = $1 AND bedrock_id IS NULL
						AND NOT EXISTS (SELECT FROM {{schema}}.jobs WHERE bedrock_id = $2)
						AND NOT EXISTS (SELECT FROM {{schema}}.jobs_ended WHERE bedrock_id = $2);

-- name: ids_by_bedrock_id
-- The rota ids of jobs by their Bedrock ids.
-- $1 Bedrock ids (bigint[]). Returns bedrock_id, id.
SELECT bedrock_id, id FROM {{schema}}.jobs WHERE bedrock_id = ANY($1) UNION ALL SELECT bedrock_id, id FROM {{schema}}.jobs_ended WHERE bedrock_id = ANY($1);

-- name: deps_of
-- Jobs' dependencies with their outcomes, in the order each named them;
-- a deleted one has no row (o's NULLs). Every step is an index probe by
-- id, whatever the tables' statistics say (a hash join over the whole of
-- deps or of a bloated hot table grew with the tables: 19 ms a call at
-- 40,000 edges); the ended table first, where a dependency of a job
-- that runs usually is.
-- $1 the dependants' ids (bigint[]).
SELECT x.dependant, x.dependency, o.id IS NULL, coalesce(o.type, ''), o.key, coalesce(o.grp, ''),
		coalesce(o.state, 5), o.result, o.last_error
	FROM unnest($1::bigint[]) AS u(id) JOIN {{schema}}.deps x ON x.dependant = u.id
	LEFT JOIN LATERAL (SELECT e.id, e.type, e.key, e.grp, e.state, e.result, e.last_error FROM {{schema}}.jobs_ended e WHERE e.id = x.dependency
		UNION ALL SELECT h.id, h.type, h.key, h.grp, h.state, h.result, h.last_error FROM {{schema}}.jobs h WHERE h.id = x.dependency
		LIMIT 1) o ON true
	ORDER BY x.dependant, x.pos;

-- name: dependants_of
-- The jobs added after a job, in id order, at most a number of them.
-- $1 the dependency's id, $2 the limit.
SELECT dependant FROM {{schema}}.deps WHERE dependency = $1 ORDER BY dependant LIMIT $2;
