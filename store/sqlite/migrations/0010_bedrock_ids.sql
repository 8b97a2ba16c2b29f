-- Bedrock's ids (store.BedrockIDs): a random positive 63-bit integer a
-- job gets when the Bedrock protocol first names it, kept beside rota's
-- id. Partial, and on a column no transition changes, so that jobs that
-- never meet the protocol cost nothing.
ALTER TABLE rota_jobs ADD COLUMN bedrock_id INTEGER;
CREATE UNIQUE INDEX rota_jobs_bedrock ON rota_jobs (bedrock_id) WHERE bedrock_id IS NOT NULL;
