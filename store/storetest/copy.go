package storetest

import (
	"slices"
	"sort"
	"testing"
)

// CheckCopyCovers checks a store's copy (store.Copier) against its
// schema: schema is every table's columns as the database lists them,
// copied the columns the copy carries by table, and left what it leaves
// out ("table" or "table.column") with the reason. Every column of every
// table must be carried or left out with a reason, and nothing named that
// the schema does not have: a migration that adds a table or a column
// fails this until the copy carries it.
func CheckCopyCovers(t *testing.T, schema, copied map[string][]string, left map[string]string) {
	t.Helper()
	tables := make([]string, 0, len(schema))
	for table := range schema {
		tables = append(tables, table)
	}
	sort.Strings(tables)
	for _, table := range tables {
		if _, ok := left[table]; ok {
			if _, both := copied[table]; both {
				t.Errorf("table %s is both copied and left out", table)
			}
			continue
		}
		cols, ok := copied[table]
		if !ok {
			t.Errorf("table %s is not copied: add it to the store's copyColumns (copy.go), with its export and load, or to notCopied with the reason", table)
			continue
		}
		for _, col := range schema[table] {
			_, out := left[table+"."+col]
			switch in := slices.Contains(cols, col); {
			case in && out:
				t.Errorf("column %s.%s is both copied and left out", table, col)
			case !in && !out:
				t.Errorf("column %s.%s is not copied: add it to the store's copy (copy.go: copyColumns, Export, Write), or to notCopied with the reason", table, col)
			}
		}
		for _, col := range cols {
			if !slices.Contains(schema[table], col) {
				t.Errorf("the copy names column %s.%s, which the schema does not have", table, col)
			}
		}
	}
	for table := range copied {
		if _, ok := schema[table]; !ok {
			t.Errorf("the copy names table %s, which the schema does not have", table)
		}
	}
}
