package sqlite_test

import (
	"testing"

	"github.com/rotajobs/rota/store/storetest"
)

// TestLogsRemoved: a job's logs go with it on every path that deletes
// jobs.
func TestLogsRemoved(t *testing.T) {
	s := open(t)
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	storetest.LogsRemoved(t, s, func() int {
		var n int
		if err := db.QueryRowContext(t.Context(), `SELECT (SELECT count(*) FROM rota_job_logs) + (SELECT count(*) FROM rota_job_log_attempts)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}
