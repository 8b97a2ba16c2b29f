-- Paused types and groups are not accepted from; their jobs wait.
ALTER TABLE types ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE group_config ADD COLUMN paused boolean NOT NULL DEFAULT false;
