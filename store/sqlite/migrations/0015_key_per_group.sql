-- A key is unique within a type and a group, not a type: two tenants
-- (groups) may both use key inv-1001 for type invoice, and they are two
-- jobs. A re-add by key, or a unique add, only ever finds a job of the
-- adder's own group, which is in reach of any token allowed to add it.
DROP INDEX rota_jobs_key;
CREATE UNIQUE INDEX rota_jobs_key ON rota_jobs (type, grp, key) WHERE key IS NOT NULL;
