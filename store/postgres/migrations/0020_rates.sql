-- Rates of job starts (TypeConfig.Rate, GroupConfig.Rate): rate_n jobs per
-- rate_per microseconds (0: no rate), burst (0: the default), and the
-- token bucket: its tokens as of refilled_at (microseconds since the
-- epoch by the database's clock; 0: never refilled, a full bucket),
-- written by the accepts that spend them, under the type's lock
-- (lock_type_tokens) or the group's (lock_group).
ALTER TABLE types ADD COLUMN rate_n bigint NOT NULL DEFAULT 0,
	ADD COLUMN rate_per bigint NOT NULL DEFAULT 0,
	ADD COLUMN burst bigint NOT NULL DEFAULT 0,
	ADD COLUMN tokens float8 NOT NULL DEFAULT 0,
	ADD COLUMN refilled_at bigint NOT NULL DEFAULT 0;
ALTER TABLE group_config ADD COLUMN rate_n bigint NOT NULL DEFAULT 0,
	ADD COLUMN rate_per bigint NOT NULL DEFAULT 0,
	ADD COLUMN burst bigint NOT NULL DEFAULT 0,
	ADD COLUMN tokens float8 NOT NULL DEFAULT 0,
	ADD COLUMN refilled_at bigint NOT NULL DEFAULT 0;

-- lock_type_tokens takes the lock of a type (lock_type's) and then reads,
-- with a snapshot taken after the lock, its bucket and the database's
-- clock. Every accept that spends the type's tokens holds the lock until
-- it commits, so the bucket holds across nodes.
CREATE FUNCTION lock_type_tokens(t text, lock_key bigint, OUT tokens float8, OUT refilled_at bigint, OUT now_us bigint)
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    -- A statement of its own, so a snapshot taken after the lock.
    SELECT y.tokens, y.refilled_at, (extract(epoch FROM clock_timestamp()) * 1e6)::bigint
        INTO tokens, refilled_at, now_us FROM types y WHERE y.name = t;
END $$;

-- Nodes of version 19 keep working beside it (TestChaosUpgrade): they
-- neither read nor write the columns, and do not know the rates.
-- rota:compatible
