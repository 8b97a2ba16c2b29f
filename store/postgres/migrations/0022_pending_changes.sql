-- Changes of the groups' pending counts, appended rather than applied
-- (docs/postgres.md, "Pending counts"): every transaction that makes jobs
-- pending or takes them out of pending (an add, a retry, a cancel, a
-- removal, the lease sweep…) inserts one row per group it changed, and
-- claims, which read the counts, fold them into groups first
-- (fold_pending). An add then locks no row that another add or a claim
-- needs: it used to update its group's row and hold it through its
-- synchronous commit, so that claims queued behind the WAL flush and
-- concurrent adds of one group serialised on it.
--
-- xact is the transaction that wrote the rows: fold_pending applies each
-- transaction's changes together, in the order they were written, as the
-- transactions applied them to groups before.
CREATE TABLE pending_changes (
    id    bigint GENERATED ALWAYS AS IDENTITY,
    xact  bigint NOT NULL DEFAULT txid_current(),
    type  text COLLATE "C" NOT NULL,
    grp   text COLLATE "C" NOT NULL,
    n     bigint NOT NULL
) WITH (
    -- Rows live from an add to the next claim: vacuum often.
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 1000
);

CREATE INDEX pending_changes_type ON pending_changes (type, id);

-- fold_pending applies the pending changes of the types (NULL: all) to
-- groups and deletes them. A transaction's changes are applied in one
-- statement, as flush_counts applied them: a group whose count rises from
-- zero (or below: a claim may take a job whose add is not folded yet)
-- starts at its type's clock, the smallest turn among its backlogged
-- groups, or the clock kept in types when none is. With several
-- transactions' changes of several groups, the group rows there are are
-- locked first, in (type, grp) order, as every other writer of groups locks them, so that
-- folds and claims cannot wait for each other in a circle. Folds of a type
-- run one at a time, under a transaction-level advisory lock per type
-- (taken in name order), so that two folds never lock the same changes in
-- different orders. Callers run it in a transaction of its own, before
-- their claims.
--
-- Its statements use generic plans: planned afresh for each transaction's
-- arrays, the insert cost 0.34 ms of planning a call.
CREATE FUNCTION fold_pending(fold_types text[]) RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    xs bigint[];
    ts text[];
    gs text[];
    ns bigint[];
    i int := 1;
    j int;
    last int;
    groups_n bigint;
BEGIN
    IF fold_types IS NULL THEN
        fold_types := ARRAY(SELECT DISTINCT c.type FROM pending_changes c);
    END IF;
    -- One fold of a type at a time, the types' locks taken in name order
    -- (a claim's fold took them already; taking them again is immediate).
    PERFORM count(pg_advisory_xact_lock(hashtextextended('rota fold ' || current_schema() || ' ' || l.t, 0)))
        FROM (SELECT DISTINCT u.t FROM unnest(fold_types) AS u(t) ORDER BY u.t) l;
    -- Most claims find nothing to fold: a read of the index's front, not
    -- a delete.
    IF NOT EXISTS (SELECT FROM pending_changes c WHERE c.type = ANY(fold_types)) THEN
        RETURN 0;
    END IF;
    WITH d AS (DELETE FROM pending_changes c WHERE c.type = ANY(fold_types)
        RETURNING c.id, c.xact, c.type, c.grp, c.n)
    SELECT array_agg(d.xact ORDER BY d.id), array_agg(d.type ORDER BY d.id), array_agg(d.grp ORDER BY d.id), array_agg(d.n ORDER BY d.id),
        count(DISTINCT (d.type, d.grp))
        INTO xs, ts, gs, ns, groups_n FROM d;
    IF xs IS NULL THEN
        RETURN 0;
    END IF;
    last := array_length(xs, 1);
    IF xs[1] <> xs[last] AND groups_n > 1 THEN
        PERFORM 1 FROM groups g WHERE (g.type, g.grp) IN (SELECT u.type, u.grp FROM unnest(ts, gs) AS u(type, grp))
            ORDER BY g.type, g.grp FOR UPDATE OF g;
    END IF;
    WHILE i <= last LOOP
        j := i;
        WHILE j < last AND xs[j + 1] = xs[i] LOOP
            j := j + 1;
        END LOOP;
        INSERT INTO groups AS g (type, grp, pending, turn)
            SELECT c.type, c.grp, c.dp, CASE WHEN c.dp > 0 THEN coalesce((SELECT min(x.turn) FROM groups x WHERE x.type = c.type AND x.pending > 0),
                (SELECT y.vclock FROM types y WHERE y.name = c.type), 0) ELSE 0 END
            FROM (SELECT u.type, u.grp, sum(u.dp)::bigint AS dp FROM unnest(ts[i:j], gs[i:j], ns[i:j]) AS u(type, grp, dp)
                GROUP BY u.type, u.grp) c
            WHERE c.dp <> 0
            ORDER BY c.type, c.grp
            ON CONFLICT (type, grp) DO UPDATE SET
                turn = CASE WHEN g.pending <= 0 AND g.pending + excluded.pending > 0 THEN greatest(g.turn, excluded.turn) ELSE g.turn END,
                pending = g.pending + excluded.pending;
        i := j + 1;
    END LOOP;
    RETURN last;
END $$;

-- Nodes of version 21 keep working beside it (TestChaosUpgrade): they
-- apply their changes to groups directly, which folds add to; the jobs
-- that newer nodes add are counted in groups by the next claim of their
-- type on a newer node, or by the newer nodes' lease sweep.
-- rota:compatible
