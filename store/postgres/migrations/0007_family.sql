-- Parent and child jobs: parent_id (reserved since 0001, indexed) names a
-- child's parent; has_children marks a job that has had children, so that
-- only such jobs pay for the family rules. Both job tables keep their
-- columns in one order (jobs.go, endedColumns).
ALTER TABLE jobs ADD COLUMN has_children boolean NOT NULL DEFAULT false;
ALTER TABLE jobs_ended ADD COLUMN has_children boolean NOT NULL DEFAULT false;
