-- A job's deadline (store.AddParams.ExpiresAt; NULL: none): no run starts
-- at or after it, and the lease sweep ends a pending job past it, marked
-- expired. Both job tables keep their columns in one order (jobs.go,
-- endedColumns). The index serves the sweep's look-up of pending jobs past
-- their deadline and of the next deadline to sleep until; it holds only
-- pending jobs that have one, and is built concurrently, so that writes go
-- on meanwhile. Each statement can run again (no transaction).
-- rota:no-transaction
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS expires_at timestamptz;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS expired boolean NOT NULL DEFAULT false;
ALTER TABLE jobs_ended ADD COLUMN IF NOT EXISTS expires_at timestamptz;
ALTER TABLE jobs_ended ADD COLUMN IF NOT EXISTS expired boolean NOT NULL DEFAULT false;
-- A type's default run timeout (µs; 0: none) for jobs without their own
-- (store.TypeConfig.Timeout). It applies when a job starts: the claim
-- writes the run's timeout, its own or its type's, into run_limit, which
-- the lease, heartbeats and the sweep hold the run to (an older node's
-- claims leave it NULL, and run_timeout applies, as before).
ALTER TABLE types ADD COLUMN IF NOT EXISTS run_timeout bigint NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS run_limit bigint;
ALTER TABLE jobs_ended ADD COLUMN IF NOT EXISTS run_limit bigint;
-- The unique window and debounce of the add that inserted a job (µs; NULL:
-- none), kept to show with the job (store.Job.UniqueFor, Debounce).
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS unique_for bigint;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS debounce bigint;
ALTER TABLE jobs_ended ADD COLUMN IF NOT EXISTS unique_for bigint;
ALTER TABLE jobs_ended ADD COLUMN IF NOT EXISTS debounce bigint;
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_deadline ON jobs (expires_at) WHERE state = 0 AND expires_at IS NOT NULL;
-- Nodes of version 16 keep working beside it (TestChaosUpgrade): they
-- neither read nor write the columns, so their jobs have no deadline, a
-- job they end or revive loses its own (it no longer waits to start), and
-- their claims do not apply a type's default timeout.
-- rota:compatible
