-- Bedrock's ids (store.BedrockIDs): a random positive 63-bit integer a
-- job gets when the Bedrock protocol first names it, kept beside rota's
-- id. Both job tables keep their columns in one order (jobs.go,
-- endedColumns); the indexes are partial, on a column no transition
-- changes.
--
-- Statement by statement, the indexes built concurrently, so that writes
-- to the job tables go on while they are built (docs/postgres.md, Rolling
-- upgrades).
-- rota:no-transaction
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS bedrock_id bigint;
ALTER TABLE jobs_ended ADD COLUMN IF NOT EXISTS bedrock_id bigint;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS jobs_bedrock ON jobs (bedrock_id) WHERE bedrock_id IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS jobs_ended_bedrock ON jobs_ended (bedrock_id) WHERE bedrock_id IS NOT NULL;
