-- The reads of read.go, on the reader's connections (a snapshot each),
-- and the Bedrock ids. (List's statement is assembled from its filters,
-- in read.go: see listQuery there.)

-- name: jobs_by_id
-- Jobs by id (jobColumns), in any order.
-- ? the ids, a JSON array.
SELECT {{jobColumns}} FROM rota_jobs WHERE id IN (SELECT value FROM json_each(?));

-- name: job_by_key
-- The job that holds a key in a type and group (jobColumns).
-- ? type, ? group, ? key.
SELECT {{jobColumns}} FROM rota_jobs WHERE type = ? AND grp = ? AND key = ?;

-- name: stats
-- Counts jobs by type, group and state, and how many ended ones are past
-- their retention (store.KeptForSQL).
-- ? now, ? the default retention (µs).
SELECT j.type, j.grp, j.state, count(*),
		coalesce(sum(j.state IN (3, 4, 5) AND j.finished_at < ? - {{keptFor "j" "t" "?"}}), 0)
		FROM rota_jobs j LEFT JOIN rota_types t ON t.name = j.type
		GROUP BY j.type, j.grp, j.state ORDER BY j.type, j.grp, j.state;

-- name: bedrock_id
-- A job's Bedrock id (NULL: none yet).
-- ? id.
SELECT bedrock_id FROM rota_jobs WHERE id = ?;

-- name: set_bedrock_id
-- Gives a job a Bedrock id; the unique index refuses one that is taken.
-- ? the Bedrock id, ? id.
UPDATE rota_jobs SET bedrock_id = ? WHERE id = ?;

-- name: id_by_bedrock_id
-- ? the Bedrock id.
SELECT id FROM rota_jobs WHERE bedrock_id = ?;

-- name: deps_of
-- A job's dependencies with their outcomes, in the order it named them;
-- a deleted one has no row (the outer join's NULLs).
-- ? the dependant's id.
SELECT e.dependency, j.id IS NULL, coalesce(j.type, ''), j.key, coalesce(j.grp, ''), coalesce(j.state, 5), j.result, j.last_error
	FROM rota_deps e LEFT JOIN rota_jobs j ON j.id = e.dependency WHERE e.dependant = ? ORDER BY e.pos;

-- name: dependants_of
-- The jobs added after a job, in id order, at most a number of them.
-- ? the dependency's id, ? the limit.
SELECT dependant FROM rota_deps WHERE dependency = ? ORDER BY dependant LIMIT ?;
