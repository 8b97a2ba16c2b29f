-- Recurring jobs: repeat (reserved since 0001) holds the schedule, a
-- Bedrock repeat or a cron expression, NULL when none; missed is the
-- missed-slot policy (0 once, 1 skip, 2 all); slot is the slot of the
-- schedule that the job's current cycle stands for (NULL when none).
ALTER TABLE rota_jobs ADD COLUMN missed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_jobs ADD COLUMN slot INTEGER;
