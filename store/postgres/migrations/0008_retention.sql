-- How long a type's ended jobs are kept (microseconds; 0: the default).
ALTER TABLE types ADD COLUMN retention bigint NOT NULL DEFAULT 0;
