-- Counting in bulk.
--
-- The triggers of 0002 keep rota_groups' counts one job at a time, which
-- costs a trigger program per job. The statements that move many jobs at
-- once (accept's claim of a group's jobs, and the completion of a batch of
-- finishes) keep the counts themselves instead, with one update per group
-- in the same transaction: they flip rota_jobs.bulk on the rows they move,
-- and the update trigger skips rows whose bulk changed. Every other
-- transition, including those in callers' own transactions (AddTx,
-- FinishTx), leaves bulk alone and is counted by the trigger as before.

ALTER TABLE rota_jobs ADD COLUMN bulk INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER rota_jobs_groups_update;

CREATE TRIGGER rota_jobs_groups_update AFTER UPDATE OF state, grp ON rota_jobs
WHEN (OLD.state != NEW.state OR OLD.grp != NEW.grp) AND (OLD.state IN (0, 1) OR NEW.state IN (0, 1))
    AND OLD.bulk = NEW.bulk
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
