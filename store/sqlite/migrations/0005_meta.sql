-- Job metadata (AddParams.Meta): small string pairs carried beside the
-- data, such as a trace context; a JSON object, NULL when none.
ALTER TABLE rota_jobs ADD COLUMN meta BLOB;
