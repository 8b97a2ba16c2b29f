-- A key is unique within a type and a group, not a type: two tenants
-- (groups) may both use key inv-1001 for type invoice, and they are two
-- jobs. A re-add by key, or a unique add, only ever finds a job of the
-- adder's own group, which is in reach of any token allowed to add it.
-- The store keeps (type, group, key) unique across both tables under an
-- advisory lock per (type, group, key) (jobs.go, lockKeys).
--
-- The new indexes are built concurrently beside the old ones, which are
-- then dropped, so that writes to the job tables go on meanwhile
-- (docs/postgres.md, Rolling upgrades). Each statement may run again
-- after a failure: the renames only find what is left to rename.
-- rota:no-transaction
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS jobs_key_grp ON jobs (type, grp, key) WHERE key IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS jobs_key;
ALTER INDEX IF EXISTS jobs_key_grp RENAME TO jobs_key;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS jobs_ended_key_grp ON jobs_ended (type, grp, key) WHERE key IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS jobs_ended_key;
ALTER INDEX IF EXISTS jobs_ended_key_grp RENAME TO jobs_ended_key;
