package store

import (
	"fmt"
	"time"
)

// KeptFor is how long a job of type c that ended in state st is kept
// before the background sweep (Retirer) deletes it; forever is true when
// it is kept until removed. Completed and cancelled jobs are kept for the
// type's Retention (DefaultRetention when zero); failed jobs for its
// FailedRetention, and until removed when that is zero: failed jobs are a
// dead-letter list that people triage, as Bedrock promises.
func KeptFor(c TypeConfig, st State) (d time.Duration, forever bool) {
	if st == Failed {
		return c.FailedRetention, c.FailedRetention == 0
	}
	if c.Retention == 0 {
		return DefaultRetention, false
	}
	return c.Retention, false
}

// KeptForSQL is KeptFor as an SQL expression, in microseconds, for the
// stores' sweeps and counts: job and typ name the job row and its type's
// settings row (which may be missing: NULL columns), def is the default
// retention's placeholder. The expression is NULL for a job kept until
// removed, so a comparison with it never deletes the job.
func KeptForSQL(job, typ, def string) string {
	return fmt.Sprintf("(CASE WHEN %[1]s.state = %[3]d THEN nullif(%[2]s.failed_retention, 0) ELSE coalesce(nullif(%[2]s.retention, 0), %[4]s) END)",
		job, typ, int(Failed), def)
}
