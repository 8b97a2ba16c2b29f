-- A job's deadline (microseconds; NULL: none): store.AddParams.ExpiresAt.
-- No run starts at or after it; the lease sweep ends a pending job past it
-- and marks it expired.
ALTER TABLE rota_jobs ADD COLUMN expires_at INTEGER;
ALTER TABLE rota_jobs ADD COLUMN expired INTEGER NOT NULL DEFAULT 0;
-- The sweep's look-up of pending jobs past their deadline, and of the next
-- deadline to sleep until: only pending jobs with one.
CREATE INDEX rota_jobs_deadline ON rota_jobs (expires_at) WHERE state = 0 AND expires_at IS NOT NULL;

-- A type's default run timeout (µs; 0: none) for jobs without their own
-- (store.TypeConfig.Timeout). It applies when a job starts: the claim
-- writes the run's timeout, its own or its type's, into run_limit, which
-- the lease, heartbeats and the sweep hold the run to.
ALTER TABLE rota_types ADD COLUMN run_timeout INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_jobs ADD COLUMN run_limit INTEGER;

-- The unique window and debounce of the add that inserted a job (µs; NULL:
-- none), kept to show with the job (store.Job.UniqueFor, Debounce).
ALTER TABLE rota_jobs ADD COLUMN unique_for INTEGER;
ALTER TABLE rota_jobs ADD COLUMN debounce INTEGER;
