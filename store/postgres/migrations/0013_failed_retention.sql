-- How long a type's failed jobs are kept (microseconds; 0: until removed).
ALTER TABLE types ADD COLUMN failed_retention bigint NOT NULL DEFAULT 0;
-- Nodes of version 12 keep working beside it (TestChaosUpgrade): they
-- neither read nor write the column.
-- rota:compatible
