-- Unique adds (AddParams.Unique) look for a job of the type in any state
-- but completed: pending ones through rota_jobs_next, running ones through
-- rota_jobs_lease, the rest (paused, failed, cancelled: off the hot path)
-- through this index.
CREATE INDEX rota_jobs_type_held ON rota_jobs (type) WHERE state IN (2, 4, 5);
