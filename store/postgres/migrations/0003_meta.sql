-- Job metadata (AddParams.Meta): small string pairs carried beside the
-- data, such as a trace context; a JSON object as text, NULL when none.
-- Both job tables keep their columns in one order (jobs.go, endedColumns).
ALTER TABLE jobs ADD COLUMN meta text;
ALTER TABLE jobs_ended ADD COLUMN meta text;
