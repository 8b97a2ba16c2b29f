-- How long a type's ended jobs are kept (microseconds; 0: the default).
ALTER TABLE rota_types ADD COLUMN retention INTEGER NOT NULL DEFAULT 0;
