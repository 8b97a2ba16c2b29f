-- Fair scheduling across groups.
--
-- rota_groups holds, per type and group, the counts accept needs (pending
-- and running jobs) and the group's place in the weighted round robin: its
-- virtual time "turn". Serving a group adds 1/weight to its turn; accept
-- serves the group with the smallest turn among those with pending jobs. A
-- group that becomes backlogged again starts no earlier than its type's
-- virtual clock (rota_types.vclock, the turn of the group served last), so
-- an idle group cannot bank turns.
--
-- The counts are kept by triggers, so that no transition (including those
-- run in a caller's own transaction) can forget them.

ALTER TABLE rota_types ADD COLUMN bands_high INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_types ADD COLUMN bands_low INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_types ADD COLUMN group_max_running INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_types ADD COLUMN vclock REAL NOT NULL DEFAULT 0;

CREATE TABLE rota_groups (
    type       TEXT    NOT NULL,
    grp        TEXT    NOT NULL,
    pending    INTEGER NOT NULL DEFAULT 0,
    running    INTEGER NOT NULL DEFAULT 0,
    turn       REAL    NOT NULL DEFAULT 0,
    band_count INTEGER NOT NULL DEFAULT 0, -- picks so far, for the counting scheme
    PRIMARY KEY (type, grp)
) WITHOUT ROWID;

-- Groups with pending jobs in round-robin order: accept reads only the
-- front of it.
CREATE INDEX rota_groups_turn ON rota_groups (type, turn, grp) WHERE pending > 0;
-- A group's running jobs across types, for bounds that span types.
CREATE INDEX rota_groups_running ON rota_groups (grp) WHERE running > 0;

CREATE TABLE rota_group_config (
    grp         TEXT    NOT NULL,
    type        TEXT    NOT NULL DEFAULT '', -- '' = every type
    max_running INTEGER NOT NULL DEFAULT 0,
    weight      REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (grp, type)
) WITHOUT ROWID;

-- Inside a group: due retries first, then the rest, each in priority,
-- run time, id order. Two partial indexes so that neither scans the other.
DROP INDEX rota_jobs_due;
CREATE INDEX rota_jobs_due ON rota_jobs (type, grp, priority DESC, run_at, id) WHERE state = 0 AND attempt = 0;
CREATE INDEX rota_jobs_retry ON rota_jobs (type, grp, priority DESC, run_at, id) WHERE state = 0 AND attempt > 0;

INSERT INTO rota_groups (type, grp, pending, running)
SELECT type, grp, sum(state = 0), sum(state = 1) FROM rota_jobs WHERE state IN (0, 1) GROUP BY type, grp;

CREATE TRIGGER rota_jobs_groups_insert AFTER INSERT ON rota_jobs
WHEN NEW.state IN (0, 1)
BEGIN
    INSERT INTO rota_groups (type, grp, pending, running, turn)
    SELECT NEW.type, NEW.grp, NEW.state = 0, NEW.state = 1,
           coalesce((SELECT vclock FROM rota_types WHERE name = NEW.type), 0)
    WHERE true
    ON CONFLICT (type, grp) DO UPDATE SET
        turn = CASE WHEN pending = 0 AND excluded.pending = 1 THEN max(turn, excluded.turn) ELSE turn END,
        pending = pending + excluded.pending,
        running = running + excluded.running;
END;

CREATE TRIGGER rota_jobs_groups_update AFTER UPDATE OF state, grp ON rota_jobs
WHEN (OLD.state != NEW.state OR OLD.grp != NEW.grp) AND (OLD.state IN (0, 1) OR NEW.state IN (0, 1))
BEGIN
    UPDATE rota_groups SET pending = pending - (OLD.state = 0), running = running - (OLD.state = 1)
    WHERE OLD.state IN (0, 1) AND type = OLD.type AND grp = OLD.grp;
    INSERT INTO rota_groups (type, grp, pending, running, turn)
    SELECT NEW.type, NEW.grp, NEW.state = 0, NEW.state = 1,
           coalesce((SELECT vclock FROM rota_types WHERE name = NEW.type), 0)
    WHERE NEW.state IN (0, 1)
    ON CONFLICT (type, grp) DO UPDATE SET
        turn = CASE WHEN pending = 0 AND excluded.pending = 1 THEN max(turn, excluded.turn) ELSE turn END,
        pending = pending + excluded.pending,
        running = running + excluded.running;
END;

CREATE TRIGGER rota_jobs_groups_delete AFTER DELETE ON rota_jobs
WHEN OLD.state IN (0, 1)
BEGIN
    UPDATE rota_groups SET pending = pending - (OLD.state = 0), running = running - (OLD.state = 1)
    WHERE type = OLD.type AND grp = OLD.grp;
END;
