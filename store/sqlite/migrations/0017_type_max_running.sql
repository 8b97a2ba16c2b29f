-- The bound on a type's running jobs, all groups together (0: none).
ALTER TABLE rota_types ADD COLUMN max_running INTEGER NOT NULL DEFAULT 0;
