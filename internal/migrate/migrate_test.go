package migrate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_b.sql": {Data: []byte("B")},
		"m/0001_a.sql": {Data: []byte("A")},
		"m/README":     {Data: []byte("not a migration")},
	}
	all, err := Load(fsys, "m")
	if err != nil || len(all) != 2 || all[0].Name != "0001_a.sql" || all[1].SQL != "B" || Latest(all) != 2 {
		t.Fatalf("Load = %+v, %v", all, err)
	}
	for name, files := range map[string]fstest.MapFS{
		"gap":    {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
		"repeat": {"m/0001_a.sql": {}, "m/0001_b.sql": {}},
		"name":   {"m/first.sql": {}},
	} {
		if _, err := Load(files, "m"); err == nil {
			t.Errorf("%s: Load accepted %v", name, files)
		}
	}
}

// memTx is a database in memory with the runner's view of a transaction.
type memTx struct {
	have    int
	ran     []string
	failOn  string
	records []int
}

func (m *memTx) Applied(context.Context) (int, error) { return m.have, nil }
func (m *memTx) Exec(_ context.Context, q string) error {
	if q == m.failOn {
		return errors.New("syntax error")
	}
	m.ran = append(m.ran, q)
	return nil
}
func (m *memTx) Record(_ context.Context, mg Migration) error {
	m.records = append(m.records, mg.Version)
	return nil
}

func TestApply(t *testing.T) {
	all := []Migration{{Version: 1, Name: "0001_a.sql", SQL: "A"}, {Version: 2, Name: "0002_b.sql", SQL: "B"}, {Version: 3, Name: "0003_c.sql", SQL: "C"}}
	tx := &memTx{have: 1}
	done, err := Apply(context.Background(), tx, all)
	if err != nil || len(done) != 2 || strings.Join(tx.ran, "") != "BC" || len(tx.records) != 2 || tx.records[1] != 3 {
		t.Fatalf("Apply from 1: %v, ran %v, recorded %v", err, tx.ran, tx.records)
	}
	if _, err := Apply(context.Background(), &memTx{have: 4}, all); err == nil || !strings.Contains(err.Error(), "newer than this rota") {
		t.Fatalf("Apply to a newer schema: %v", err)
	}
	if _, err := Apply(context.Background(), &memTx{failOn: "B"}, all); err == nil || !strings.Contains(err.Error(), "0002_b.sql") {
		t.Fatalf("a failing migration: %v", err)
	}
	script := Script(all[1:])
	if !strings.HasPrefix(script, "-- migration 2: 0002_b.sql\nB\n\n-- migration 3") {
		t.Fatalf("Script = %q", script)
	}
}

func TestDirectives(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0001_a.sql": {Data: []byte("-- a table\nCREATE TABLE a (x int);\n")},
		"m/0002_b.sql": {Data: []byte("-- rota:no-transaction\n-- rota:compatible\nCREATE INDEX CONCURRENTLY IF NOT EXISTS a_x\n  ON a (x);\n-- why\nDROP INDEX CONCURRENTLY IF EXISTS old;\n")},
		"m/0003_c.sql": {Data: []byte("-- rota:offline\nALTER TABLE a ADD COLUMN y int;\n")},
	}
	all, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if a, b, c := all[0], all[1], all[2]; a.NoTransaction || a.Compatible || a.Offline || !b.NoTransaction || !b.Compatible || b.Offline || !c.Offline {
		t.Fatalf("directives read as %+v", all)
	}
	if got := Statements(all[1].SQL); len(got) != 2 || got[0] != "CREATE INDEX CONCURRENTLY IF NOT EXISTS a_x\n  ON a (x);" || got[1] != "DROP INDEX CONCURRENTLY IF EXISTS old;" {
		t.Fatalf("Statements = %q", got)
	}
	for _, bad := range []string{"-- rota:bogus\n", "-- rota:compatible\n-- rota:offline\n"} {
		if _, err := Load(fstest.MapFS{"m/0001_a.sql": {Data: []byte(bad)}}, "m"); err == nil {
			t.Errorf("Load accepted the directives %q", bad)
		}
	}
	compatible := map[int]bool{3: true, 4: false}
	if err := Runnable(all, 3, func(v int) bool { return compatible[v] }); err != nil {
		t.Errorf("a known schema: %v", err)
	}
	if err := Runnable(all[:2], 3, func(v int) bool { return compatible[v] }); err != nil {
		t.Errorf("a schema one compatible migration newer: %v", err)
	}
	if err := Runnable(all[:2], 4, func(v int) bool { return compatible[v] }); err == nil || !strings.Contains(err.Error(), "migration 4 does not let older nodes run") {
		t.Errorf("a schema newer by an incompatible migration: %v", err)
	}
}
