package postgres_test

import (
	"testing"

	"github.com/rotajobs/rota/store/postgres"
	"github.com/rotajobs/rota/store/storetest"
)

// TestCopyCoversSchema fails when a migration adds a table or a column
// that rota copy does not carry (nor say why it leaves it out).
func TestCopyCoversSchema(t *testing.T) {
	s := open(t)
	rows, err := s.Pool().Query(t.Context(), `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = $1 ORDER BY table_name, ordinal_position`, s.Schema())
	if err != nil {
		t.Fatal(err)
	}
	schema := map[string][]string{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		schema[table] = append(schema[table], column)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	copied, left := postgres.CopyColumns()
	storetest.CheckCopyCovers(t, schema, copied, left)
}
