-- A key is unique within a type and a group, not a type: two tenants
-- (groups) may both use key inv-1001 for type invoice, and they are two
-- jobs. A re-add by key, or a unique add, only ever finds a job of the
-- adder's own group, which is in reach of any token allowed to add it.
-- The store keeps (type, group, key) unique across both tables under an
-- advisory lock per (type, group, key) (jobs.go, lockKeys).
DROP INDEX jobs_key;
CREATE UNIQUE INDEX jobs_key ON jobs (type, grp, key) WHERE key IS NOT NULL;
DROP INDEX jobs_ended_key;
CREATE UNIQUE INDEX jobs_ended_key ON jobs_ended (type, grp, key) WHERE key IS NOT NULL;
