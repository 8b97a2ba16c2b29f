-- Paused types and groups are not accepted from; their jobs wait.
ALTER TABLE rota_types ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_group_config ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
