package cli

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store/sqlite"
)

// runMigrate runs `rota migrate args…` and returns what it printed.
func runMigrate(t *testing.T, args ...string) string {
	t.Helper()
	cmd := migrateCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("rota migrate %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestMigratePrintSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.db")
	out := runMigrate(t, "--store", path, "--print-sql")
	if !strings.Contains(out, "-- migration 1: 0001_jobs.sql") || !strings.Contains(out, "CREATE TABLE") {
		t.Fatalf("--print-sql on a new file:\n%s", out)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("--print-sql created the database (%v)", err)
	}
	if out := runMigrate(t, "--store", path); !strings.Contains(out, "migrated from version 0 to") {
		t.Fatalf("migrate: %s", out)
	}
	if out := runMigrate(t, "--store", "sqlite:"+path, "--print-sql"); !strings.Contains(out, "up to date") || strings.Contains(out, "CREATE") {
		t.Fatalf("--print-sql after migrate: %s", out)
	}
	if out := runMigrate(t, "--store", path, "--status"); !strings.Contains(out, fmt.Sprintf("version %d; this rota knows up to version %[1]d", sqlite.LatestSchemaVersion())) {
		t.Fatalf("--status: %s", out)
	}
}

func TestMigratePrintPostgres(t *testing.T) {
	dsn := os.Getenv("ROTA_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_POSTGRES") == "1" {
			t.Fatal("ROTA_TEST_POSTGRES is not set (run ./scripts/test.sh)")
		}
		t.Skip("ROTA_TEST_POSTGRES is not set")
	}
	schema := fmt.Sprintf("rota_test_%016x", rand.Uint64())
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(context.Background())
		}
	})
	out := runMigrate(t, "--store", dsn, "--schema", schema, "--print-sql")
	if !strings.Contains(out, "-- migration 1: 0001_jobs.sql") || !strings.Contains(out, "-- migration 2:") {
		t.Fatalf("--print-sql on a new schema:\n%s", out)
	}
	if out := runMigrate(t, "--store", dsn, "--schema", schema, "--status"); !strings.Contains(out, "version 0;") {
		t.Fatalf("--print-sql applied something: %s", out)
	}
	if out := runMigrate(t, "--store", dsn, "--schema", schema); !strings.Contains(out, "migrated from version 0 to") {
		t.Fatalf("migrate: %s", out)
	}
	if out := runMigrate(t, "--store", dsn, "--schema", schema, "--print-sql"); !strings.Contains(out, "up to date") {
		t.Fatalf("--print-sql after migrate: %s", out)
	}
}
