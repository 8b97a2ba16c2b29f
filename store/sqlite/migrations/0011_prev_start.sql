-- When the run before the current one started: Bedrock's lastRun as a
-- dequeue sees it (the value from before that dequeue).
ALTER TABLE rota_jobs ADD COLUMN prev_started_at INTEGER;
