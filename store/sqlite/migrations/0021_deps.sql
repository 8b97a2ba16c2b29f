-- Dependencies between jobs (store.AddParams.After). A job added after
-- others waits in state 6 (store.Waiting), which no claim selects, an
-- older version's neither, with its count of unended dependencies
-- (deps_waiting) and its policy (dep_policy: 0 cancel, 1 run); has_deps
-- says it has dependencies, has_dependants that jobs wait for it, which
-- sends its end off the batched completion to the engine.
ALTER TABLE rota_jobs ADD COLUMN has_deps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_jobs ADD COLUMN deps_waiting INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_jobs ADD COLUMN dep_policy INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_jobs ADD COLUMN has_dependants INTEGER NOT NULL DEFAULT 0;
-- The edges, by dependency (a dependency's end reads its own dependants)
-- and by dependant (a job's dependencies, in the order it named them:
-- pos).
CREATE TABLE rota_deps (
	dependency INTEGER NOT NULL,
	dependant INTEGER NOT NULL,
	pos INTEGER NOT NULL,
	PRIMARY KEY (dependency, dependant)
) WITHOUT ROWID;
CREATE INDEX rota_deps_dependant ON rota_deps (dependant, pos);
