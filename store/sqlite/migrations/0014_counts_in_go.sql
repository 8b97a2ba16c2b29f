-- The store counts every job that enters or leaves a group's counts.
--
-- Since 0003 and 0013, claims, batch completions and adds counted their
-- jobs themselves, and the update and delete triggers of 0002 counted the
-- rest, one job at a time. The update trigger's mere presence cost every
-- claim and completion about 0.7 µs per job (BenchmarkHotStatements,
-- no-group-trigger), though it did not fire for them: SQLite prepares
-- the old and new rows for it. Every other change of a job's state,
-- group or type, and every removal of a pending or running job, is
-- applied by the store's apply (store/sqlite/jobs.go) or Import, which
-- now count it the way the triggers did (writeTx.move). The bulk column
-- of 0003 is no longer written.
DROP TRIGGER rota_jobs_groups_update;
DROP TRIGGER rota_jobs_groups_delete;
