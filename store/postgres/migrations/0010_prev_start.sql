-- When the run before the current one started: Bedrock's lastRun as a
-- dequeue sees it (the value from before that dequeue). Both job tables
-- keep their columns in one order (jobs.go, endedColumns).
ALTER TABLE jobs ADD COLUMN prev_started_at timestamptz;
ALTER TABLE jobs_ended ADD COLUMN prev_started_at timestamptz;
