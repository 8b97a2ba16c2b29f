package backend

import (
	"fmt"

	"github.com/rotajobs/rota/store"
)

// KeptForSQL is how long a job is kept after it ends, before the
// background sweep (Retirer) deletes it, as an SQL expression in
// microseconds, the one rule of both stores' sweeps and counts. Completed
// and cancelled jobs are kept for their type's Retention (DefaultRetention
// when zero); failed jobs for its FailedRetention, and until removed when
// that is zero: failed jobs are a dead-letter list that people triage, as
// Bedrock promises. job and typ name the job row and its type's
// settings row (which may be missing: NULL columns), def is the default
// retention's placeholder. The expression is NULL for a job kept until
// removed, so a comparison with it never deletes the job.
func KeptForSQL(job, typ, def string) string {
	return fmt.Sprintf("(CASE WHEN %[1]s.state = %[3]d THEN nullif(%[2]s.failed_retention, 0) ELSE coalesce(nullif(%[2]s.retention, 0), %[4]s) END)",
		job, typ, int(store.Failed), def)
}
