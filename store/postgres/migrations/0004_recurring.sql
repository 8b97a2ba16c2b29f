-- Recurring jobs: repeat (reserved since 0001) holds the schedule, a
-- Bedrock repeat or a cron expression, NULL when none; missed is the
-- missed-slot policy (0 once, 1 skip, 2 all); slot is the slot of the
-- schedule that the job's current cycle stands for (NULL when none).
-- Both job tables keep their columns in one order (jobs.go, endedColumns).
ALTER TABLE jobs ADD COLUMN missed smallint NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN slot timestamptz;
ALTER TABLE jobs_ended ADD COLUMN missed smallint NOT NULL DEFAULT 0;
ALTER TABLE jobs_ended ADD COLUMN slot timestamptz;
