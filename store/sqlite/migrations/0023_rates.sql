-- Rates of job starts (TypeConfig.Rate, GroupConfig.Rate): rate_n jobs per
-- rate_per microseconds (0: no rate), burst (0: the default), and the
-- token bucket: its tokens as of refilled_at (microseconds of the store's
-- clock; 0: never refilled, a full bucket), written by the accepts that
-- spend them.
ALTER TABLE rota_types ADD COLUMN rate_n INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_types ADD COLUMN rate_per INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_types ADD COLUMN burst INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_types ADD COLUMN tokens REAL NOT NULL DEFAULT 0;
ALTER TABLE rota_types ADD COLUMN refilled_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_group_config ADD COLUMN rate_n INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_group_config ADD COLUMN rate_per INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_group_config ADD COLUMN burst INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_group_config ADD COLUMN tokens REAL NOT NULL DEFAULT 0;
ALTER TABLE rota_group_config ADD COLUMN refilled_at INTEGER NOT NULL DEFAULT 0;
