-- Unique adds (AddParams.Unique) look for a job of the type in any state
-- but completed: pending ones through jobs_next, running ones through
-- jobs_running, paused ones and ended ones (failed, cancelled) through
-- these indexes, which are off the hot path.
--
-- Built concurrently, so that writes to the job tables go on while the
-- indexes are built (docs/postgres.md, Rolling upgrades).
-- rota:no-transaction
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_paused ON jobs (type) WHERE state = 2;
CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_ended_held ON jobs_ended (type) WHERE state IN (4, 5);
