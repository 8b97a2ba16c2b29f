-- Batches (store.Batch): a row per batch with its members' counts by
-- outcome, kept in the transaction of every member's change (O(1) per
-- member, under the batch row's lock, so that the member that ends it,
-- on any node, adds its callbacks), and its callbacks (store.AddParams as
-- JSON). A member names its batch in batch_id (NULL: none); both job
-- tables keep their columns in one order (jobs.go, endedColumns).
CREATE TABLE batches (
	id bigserial PRIMARY KEY,
	description text NOT NULL DEFAULT '',
	total bigint NOT NULL DEFAULT 0,
	remaining bigint NOT NULL DEFAULT 0,
	completed bigint NOT NULL DEFAULT 0,
	failed bigint NOT NULL DEFAULT 0,
	cancelled bigint NOT NULL DEFAULT 0,
	removed bigint NOT NULL DEFAULT 0,
	open boolean NOT NULL DEFAULT false,
	on_complete text,
	on_success text,
	complete_job bigint,
	success_job bigint,
	created_at timestamptz NOT NULL DEFAULT now(),
	done_at timestamptz
);
ALTER TABLE jobs ADD COLUMN batch_id bigint;
ALTER TABLE jobs_ended ADD COLUMN batch_id bigint;
-- Nodes of version 15 keep working beside it (TestChaosUpgrade): they
-- neither read nor write the column, so a member they end is not counted
-- in its batch (docs/postgres.md, "Rolling upgrades": add batches once
-- every node runs this version).
-- rota:compatible
