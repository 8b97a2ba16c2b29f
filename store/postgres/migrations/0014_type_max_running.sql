-- The bound on a type's running jobs, all groups together (0: none).
ALTER TABLE types ADD COLUMN max_running bigint NOT NULL DEFAULT 0;

-- lock_type takes the transaction-level advisory lock that serialises the
-- accepts of a type with a bound on its running jobs, and then counts,
-- with a snapshot taken after the lock, the type's running jobs. Every
-- claim of the type holds the lock until it commits, so the count is
-- exact across nodes (a finish not committed yet only makes it higher).
CREATE FUNCTION lock_type(t text, lock_key bigint, OUT running bigint)
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    -- A statement of its own, so a snapshot taken after the lock.
    SELECT count(*) INTO running FROM jobs j WHERE j.type = t AND j.state = 1;
END $$;

-- Nodes of version 13 keep working beside it (TestChaosUpgrade): they
-- neither read nor write the column, and do not know the bound.
-- rota:compatible
