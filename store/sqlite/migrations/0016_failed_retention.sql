-- How long a type's failed jobs are kept (microseconds; 0: until removed).
ALTER TABLE rota_types ADD COLUMN failed_retention INTEGER NOT NULL DEFAULT 0;
