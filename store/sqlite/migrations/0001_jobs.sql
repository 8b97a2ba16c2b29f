-- rota's job table. Times are Unix microseconds (UTC); durations are
-- microseconds. State codes: 0 pending, 1 running, 2 paused, 3 completed,
-- 4 failed, 5 cancelled.
CREATE TABLE rota_jobs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, so a removed id stays dead
    type            TEXT    NOT NULL,
    key             TEXT,                  -- NULL when the job has no key
    grp             TEXT    NOT NULL DEFAULT '',
    priority        INTEGER NOT NULL DEFAULT 0,
    state           INTEGER NOT NULL,
    run_at          INTEGER NOT NULL,
    data            BLOB    NOT NULL,
    attempt         INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER NOT NULL,
    backoff_base    INTEGER NOT NULL,
    backoff_max     INTEGER NOT NULL,
    token           TEXT,                  -- fencing token of the current or last lease
    worker          TEXT,
    lease_until     INTEGER,
    lease_timeout   INTEGER,               -- the lease length a heartbeat extends by
    retry_after     INTEGER,               -- reserved: fixed lease heartbeats do not extend (Bedrock RUNQUEUED)
    repeat          TEXT,                  -- reserved: recurring jobs
    parent_id       INTEGER,               -- reserved: parent/child jobs
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    resubmit        INTEGER NOT NULL DEFAULT 0,
    resubmit_at     INTEGER,               -- run_at asked for by a resubmit while running
    next_data       BLOB,                  -- data asked for by a resubmit while running
    progress        REAL    NOT NULL DEFAULT 0,
    last_error      TEXT,
    errors          TEXT,                  -- JSON array of {attempt, at, error}
    result          BLOB,
    created_at      INTEGER NOT NULL,
    started_at      INTEGER,
    finished_at     INTEGER,
    updated_at      INTEGER NOT NULL
);

-- Due pending jobs in accept order. Partial, so that running and ended jobs
-- never cost anything here.
CREATE INDEX rota_jobs_due ON rota_jobs (type, priority DESC, run_at, id) WHERE state = 0;
-- The earliest pending run time per type, for waking acceptors.
CREATE INDEX rota_jobs_next ON rota_jobs (type, run_at) WHERE state = 0;
-- Leases in expiry order, for the lease monitor.
CREATE INDEX rota_jobs_lease ON rota_jobs (lease_until) WHERE state = 1;
-- Keys are unique within a type.
CREATE UNIQUE INDEX rota_jobs_key ON rota_jobs (type, key) WHERE key IS NOT NULL;
-- Listing by state, and by group (fairness and tenant views).
CREATE INDEX rota_jobs_state ON rota_jobs (state, id);
CREATE INDEX rota_jobs_group ON rota_jobs (grp, id);
-- Children of a parent.
CREATE INDEX rota_jobs_parent ON rota_jobs (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE rota_types (
    name          TEXT PRIMARY KEY,
    lease_timeout INTEGER NOT NULL DEFAULT 0, -- 0: the default
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;
