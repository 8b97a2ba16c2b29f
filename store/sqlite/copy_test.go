package sqlite_test

import (
	"testing"

	"github.com/rotajobs/rota/store/sqlite"
	"github.com/rotajobs/rota/store/storetest"
)

// TestCopyCoversSchema fails when a migration adds a table or a column
// that rota copy does not carry (nor say why it leaves it out).
func TestCopyCoversSchema(t *testing.T) {
	s := open(t)
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(t.Context(), `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' ORDER BY m.name, p.cid`)
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
	copied, left := sqlite.CopyColumns()
	storetest.CheckCopyCovers(t, schema, copied, left)
}
