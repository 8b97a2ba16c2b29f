-- Fair scheduling across groups (docs/fairness.md; the PostgreSQL side is
-- in docs/postgres.md, "Fairness").
--
-- groups holds, per type and group, its pending jobs and its place in the
-- weighted round robin: its virtual time "turn". Serving a group adds
-- 1/weight to its turn; accept serves the group with the smallest turn
-- among those with pending jobs. A group that becomes backlogged again
-- starts no earlier than its type's
-- virtual clock: the smallest turn among the type's backlogged groups, or,
-- when none is backlogged, types.vclock (the turn of the last group served
-- until it ran out of jobs). So an idle group cannot bank turns.
--
-- The pending counts are kept by the store's own statements, not by
-- triggers: a statement that runs by itself (a claim, a batch insert)
-- applies its counts in the same statement; a transaction of several
-- statements applies them in one statement before it commits. Either way the
-- group rows are locked in (type, grp) order, so that transactions that
-- change jobs of several groups cannot deadlock. Change rota.jobs only
-- through rota; see docs/postgres.md.
--
-- Running jobs are not counted here, but counted where they are, in
-- jobs_running, and only for groups with a bound (lock_group): so
-- completions, the most frequent writes, do not touch the group rows.
--
-- Existing nodes must not run against this schema: they would not keep the
-- counts. Upgrade every node together: stop them all, then migrate.
-- rota:offline

ALTER TABLE types
    ADD COLUMN bands_high        bigint NOT NULL DEFAULT 0,
    ADD COLUMN bands_low         bigint NOT NULL DEFAULT 0,
    ADD COLUMN group_max_running bigint NOT NULL DEFAULT 0,
    ADD COLUMN vclock            double precision NOT NULL DEFAULT 0;

CREATE TABLE groups (
    type       text COLLATE "C" NOT NULL,
    grp        text COLLATE "C" NOT NULL,
    pending    bigint NOT NULL DEFAULT 0,
    turn       double precision NOT NULL DEFAULT 0,
    band_count bigint NOT NULL DEFAULT 0, -- picks so far, for the counting scheme
    PRIMARY KEY (type, grp)
) WITH (
    -- A few rows updated by every claim: keep room for the new versions on
    -- their pages and vacuum often.
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_analyze_threshold = 1000
);

-- Groups with pending jobs in round-robin order: accept reads only the
-- front of it, a page at a time.
CREATE INDEX groups_turn ON groups (type, turn, grp) WHERE pending > 0;

CREATE TABLE group_config (
    grp         text COLLATE "C" NOT NULL,
    type        text COLLATE "C" NOT NULL DEFAULT '', -- '' = every type
    max_running bigint NOT NULL DEFAULT 0,
    weight      double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (grp, type)
);

-- Inside a group: due retries first, then the rest, each in priority, run
-- time, id order; two partial indexes so that neither scans the other.
-- The earliest run time per type (for waking acceptors) has an index of its
-- own, whose predicate no claim implies (pending jobs never hold a lease),
-- so that stale statistics cannot make a claim read it and sort.
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (type, grp, priority DESC, run_at, id) WHERE state = 0 AND attempt = 0;
CREATE INDEX jobs_retry ON jobs (type, grp, priority DESC, run_at, id) WHERE state = 0 AND attempt > 0;
CREATE INDEX jobs_next ON jobs (type, run_at) WHERE state = 0 AND lease_until IS NULL;
-- Running jobs by group, counted for bounds.
CREATE INDEX jobs_running ON jobs (grp, type) WHERE state = 1;

-- jobs is locked (DROP INDEX above) until this transaction commits, so the
-- counts are exact.
INSERT INTO groups (type, grp, pending)
SELECT type, grp, count(*) FROM jobs WHERE state = 0 GROUP BY type, grp;

-- lock_group takes the transaction-level advisory lock that serialises the
-- accepts serving a bounded group (waiting for it, or only trying), and
-- then counts, with a snapshot taken after the lock, the group's running
-- jobs of type t and of all types. Every claim of a bounded group holds the
-- lock until it commits, so the counts are exact (a finish that has not
-- committed yet only makes them higher).
CREATE FUNCTION lock_group(t text, g text, lock_key bigint, wait boolean,
    OUT locked boolean, OUT running bigint, OUT all_running bigint)
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    IF wait THEN
        PERFORM pg_advisory_xact_lock(lock_key);
        locked := true;
    ELSE
        locked := pg_try_advisory_xact_lock(lock_key);
    END IF;
    IF locked THEN
        -- A statement of its own, so a snapshot taken after the lock.
        SELECT count(*) FILTER (WHERE j.type = t), count(*)
        INTO running, all_running
        FROM jobs j WHERE j.grp = g AND j.state = 1;
    END IF;
END $$;
