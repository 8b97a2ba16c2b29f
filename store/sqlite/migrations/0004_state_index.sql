-- A narrower listing index.
--
-- rota_jobs_state indexed every job by (state, id), so that a claim moved
-- each job within it twice over (out of pending, into running) and a
-- completion twice again. Running jobs are few and already indexed by
-- rota_jobs_lease, so the listing index now leaves them out: a claim only
-- removes the job from it and a completion only adds it back. Listings of
-- running jobs go through rota_jobs_lease.
DROP INDEX rota_jobs_state;
CREATE INDEX rota_jobs_state ON rota_jobs (state, id) WHERE state != 1;
