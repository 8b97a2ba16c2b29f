package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store/postgres"
	"github.com/rotajobs/rota/store/storetest"
)

// TestLogsRemoved: a job's logs go with it on every path that deletes
// jobs, from the hot table and the ended one.
func TestLogsRemoved(t *testing.T) {
	schema := newSchema(t)
	s := openIn(t, schema, postgres.Config{})
	conn, err := pgx.Connect(t.Context(), testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	logs, attempts := pgx.Identifier{schema, "job_logs"}.Sanitize(), pgx.Identifier{schema, "job_log_attempts"}.Sanitize()
	storetest.LogsRemoved(t, s, func() int {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM `+logs+`) + (SELECT count(*) FROM `+attempts+`)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}
