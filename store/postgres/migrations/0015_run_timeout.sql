-- How long each run of a job may last (microseconds; NULL: unbounded):
-- store.AddParams.Timeout. A run past it is taken back by the lease sweep.
-- Both job tables keep their columns in one order (jobs.go, endedColumns).
ALTER TABLE jobs ADD COLUMN run_timeout bigint;
ALTER TABLE jobs_ended ADD COLUMN run_timeout bigint;
-- Nodes of version 14 keep working beside it (TestChaosUpgrade): their
-- jobs have no timeout, and they neither read nor write the column.
-- rota:compatible
