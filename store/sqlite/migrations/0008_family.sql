-- Parent and child jobs: parent_id (reserved since 0001, indexed) names a
-- child's parent; has_children marks a job that has had children, so that
-- only such jobs pay for the family rules.
ALTER TABLE rota_jobs ADD COLUMN has_children INTEGER NOT NULL DEFAULT 0;
