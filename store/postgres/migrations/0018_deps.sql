-- Dependencies between jobs (store.AddParams.After). A job added after
-- others waits in state 6 (store.Waiting), which no claim selects, an
-- older version's neither, with its count of unended dependencies
-- (deps_waiting) and its policy (dep_policy: 0 cancel, 1 run); has_deps
-- says it has dependencies, has_dependants that jobs wait for it, which
-- sends its end off the batched completion to the engine. Both job
-- tables keep their columns in one order (jobs.go, endedColumns).
ALTER TABLE jobs ADD COLUMN has_deps boolean NOT NULL DEFAULT false;
ALTER TABLE jobs ADD COLUMN deps_waiting integer NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN dep_policy smallint NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN has_dependants boolean NOT NULL DEFAULT false;
ALTER TABLE jobs_ended ADD COLUMN has_deps boolean NOT NULL DEFAULT false;
ALTER TABLE jobs_ended ADD COLUMN deps_waiting integer NOT NULL DEFAULT 0;
ALTER TABLE jobs_ended ADD COLUMN dep_policy smallint NOT NULL DEFAULT 0;
ALTER TABLE jobs_ended ADD COLUMN has_dependants boolean NOT NULL DEFAULT false;
-- The edges, by dependency (a dependency's end reads its own dependants)
-- and by dependant (a job's dependencies, in the order it named them:
-- pos).
CREATE TABLE deps (
	dependency bigint NOT NULL,
	dependant bigint NOT NULL,
	pos integer NOT NULL,
	PRIMARY KEY (dependency, dependant)
);
CREATE INDEX deps_dependant ON deps (dependant, pos);
-- Nodes of version 17 keep working beside it (TestChaosUpgrade): they
-- never claim a waiting job (their claims select state 0), and their
-- inserts take the defaults. A dependency that such a node ends leaves
-- its dependants waiting (it does not know of them): upgrade every node
-- before adding jobs with dependencies (docs/postgres.md).
-- rota:compatible
