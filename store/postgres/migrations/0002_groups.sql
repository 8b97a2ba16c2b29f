-- Fair scheduling across groups (docs/fairness.md; the PostgreSQL side is
-- in docs/postgres.md, "Fairness").
--
-- groups holds, per type and group, the counts accept needs (pending and
-- running jobs) and the group's place in the weighted round robin: its
-- virtual time "turn". Serving a group adds 1/weight to its turn; accept
-- serves the group with the smallest turn among those with pending jobs. A
-- group that becomes backlogged again starts no earlier than its type's
-- virtual clock: the smallest turn among the type's backlogged groups, or,
-- when none is backlogged, types.vclock (the turn of the last group served
-- until it ran out of jobs). So an idle group cannot bank turns.
--
-- The counts are kept by the store's own statements, not by triggers: each
-- statement that changes jobs applies its counts in the same statement
-- (claims, completions, inserts), or its transaction applies them in one
-- statement before it commits (everything else). Either way the group rows
-- are locked in (type, grp) order, so that transactions that change jobs of
-- several groups cannot deadlock. Change rota.jobs only through rota; see
-- docs/postgres.md.
--
-- Existing nodes must not run against this schema: they would not keep the
-- counts. Upgrade every node together.

ALTER TABLE types
    ADD COLUMN bands_high        bigint NOT NULL DEFAULT 0,
    ADD COLUMN bands_low         bigint NOT NULL DEFAULT 0,
    ADD COLUMN group_max_running bigint NOT NULL DEFAULT 0,
    ADD COLUMN vclock            double precision NOT NULL DEFAULT 0;

CREATE TABLE groups (
    type       text COLLATE "C" NOT NULL,
    grp        text COLLATE "C" NOT NULL,
    pending    bigint NOT NULL DEFAULT 0,
    running    bigint NOT NULL DEFAULT 0,
    turn       double precision NOT NULL DEFAULT 0,
    band_count bigint NOT NULL DEFAULT 0, -- picks so far, for the counting scheme
    PRIMARY KEY (type, grp)
) WITH (
    -- A few rows updated by every claim and completion: keep room for the
    -- new versions on their pages and vacuum often.
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
-- A group's running jobs across types, for bounds that span types.
CREATE INDEX groups_running ON groups (grp) WHERE running > 0;

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

-- jobs is locked (DROP INDEX above) until this transaction commits, so the
-- counts are exact.
INSERT INTO groups (type, grp, pending, running)
SELECT type, grp, count(*) FILTER (WHERE state = 0), count(*) FILTER (WHERE state = 1)
FROM jobs WHERE state IN (0, 1) GROUP BY type, grp;

-- lock_group takes the transaction-level advisory lock that serialises the
-- accepts serving a bounded group (waiting for it, or only trying), and
-- then reads, with a snapshot taken after the lock, the group's running
-- jobs of type t and of all types. Every claim of a bounded group holds the
-- lock until it commits, so the counts read are exact.
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
        SELECT coalesce(sum(x.running) FILTER (WHERE x.type = t), 0), coalesce(sum(x.running), 0)
        INTO running, all_running
        FROM groups x WHERE x.grp = g AND x.running > 0;
    END IF;
END $$;
