-- Batches (store.Batch): a row per batch with its members' counts by
-- outcome, kept in the transaction of every member's change (O(1) per
-- member), and its callbacks (store.AddParams as JSON). A member names
-- its batch in rota_jobs.batch_id (NULL: none).
-- groups and types are the distinct groups and types of its members and
-- callbacks (JSON arrays), which a token must reach to reach the batch;
-- wide: more than store.MaxBatchReach of either, kept by neither (only
-- unscoped tokens reach it).
CREATE TABLE rota_batches (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	description TEXT NOT NULL DEFAULT '',
	total INTEGER NOT NULL DEFAULT 0,
	remaining INTEGER NOT NULL DEFAULT 0,
	completed INTEGER NOT NULL DEFAULT 0,
	failed INTEGER NOT NULL DEFAULT 0,
	cancelled INTEGER NOT NULL DEFAULT 0,
	removed INTEGER NOT NULL DEFAULT 0,
	open INTEGER NOT NULL DEFAULT 0,
	on_complete TEXT,
	on_success TEXT,
	complete_job INTEGER,
	success_job INTEGER,
	created_at INTEGER NOT NULL,
	done_at INTEGER,
	groups TEXT NOT NULL DEFAULT '[]',
	types TEXT NOT NULL DEFAULT '[]',
	wide INTEGER NOT NULL DEFAULT 0
);
ALTER TABLE rota_jobs ADD COLUMN batch_id INTEGER;
