-- How long each run of a job may last (microseconds; NULL: unbounded):
-- store.AddParams.Timeout. A run past it is taken back by the lease sweep.
ALTER TABLE rota_jobs ADD COLUMN run_timeout INTEGER;
