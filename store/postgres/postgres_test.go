package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
	"github.com/rotajobs/rota/store/storetest"
)

// testDSN returns the database the tests use, from ROTA_TEST_POSTGRES. In
// CI (or with ROTA_REQUIRE_POSTGRES=1) a missing DSN fails the test, so
// that the PostgreSQL tests never skip silently; scripts/test.sh starts
// the local PostgreSQL and sets both.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("ROTA_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_POSTGRES") == "1" {
			t.Fatal("ROTA_TEST_POSTGRES is not set, and the PostgreSQL tests are required here (CI or ROTA_REQUIRE_POSTGRES=1): " +
				"run ./scripts/test.sh, which starts the local PostgreSQL, or set ROTA_TEST_POSTGRES to a database URL")
		}
		t.Skip("ROTA_TEST_POSTGRES is not set: skipping the PostgreSQL tests (./scripts/test.sh starts the local PostgreSQL and sets it)")
	}
	return dsn
}

// newSchema returns the name of a fresh schema, dropped when the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	return newSchemaAt(t, testDSN(t))
}

// newSchemaAt returns the name of a fresh schema in the database at dsn,
// dropped when the test ends.
func newSchemaAt(t testing.TB, dsn string) string {
	t.Helper()
	name := fmt.Sprintf("rota_test_%016x", rand.Uint64())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Logf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Logf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// openIn opens a store on schema and closes it when the test ends.
func openIn(t testing.TB, schema string, cfg postgres.Config) *postgres.Store {
	t.Helper()
	return openAt(t, testDSN(t), schema, cfg)
}

// openAt opens a store on schema in the database at dsn and closes it when
// the test ends.
func openAt(t testing.TB, dsn, schema string, cfg postgres.Config) *postgres.Store {
	t.Helper()
	cfg.Schema = schema
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 4
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, dsn, cfg)
	if err != nil {
		t.Fatalf("Open(schema %s): %v", schema, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// open returns a store on a fresh schema of its own.
func open(t testing.TB) *postgres.Store {
	t.Helper()
	return openIn(t, newSchema(t), postgres.Config{})
}

func TestConformance(t *testing.T) {
	testDSN(t) // once, rather than in every subtest
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

func TestSchemaVersion(t *testing.T) {
	schema := newSchema(t)
	ctx := t.Context()
	// Without migrating, the schema is empty.
	bare := openIn(t, schema, postgres.Config{SkipMigrate: true, NoListen: true})
	if v, err := bare.SchemaVersion(ctx); err != nil || v != 0 {
		t.Fatalf("SchemaVersion before migrating = %d, %v; want 0", v, err)
	}
	if err := bare.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	want := postgres.LatestSchemaVersion()
	if want <= 0 {
		t.Fatalf("LatestSchemaVersion = %d, want > 0", want)
	}
	if v, err := bare.SchemaVersion(ctx); err != nil || v != want {
		t.Fatalf("SchemaVersion after Migrate = %d, %v; want %d", v, err, want)
	}
	// Migrating again changes nothing.
	if err := bare.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if v, err := bare.SchemaVersion(ctx); err != nil || v != want {
		t.Fatalf("SchemaVersion after a second Migrate = %d, %v; want %d", v, err, want)
	}
}

// TestMigrateConcurrently opens many stores on one new schema at once, as
// nodes starting together do: each must open, and the schema must come out
// migrated once.
func TestMigrateConcurrently(t *testing.T) {
	schema := newSchema(t)
	const nodes = 6
	errs := make(chan error, nodes)
	stores := make(chan *postgres.Store, nodes)
	for range nodes {
		go func() {
			s, err := postgres.Open(t.Context(), testDSN(t), postgres.Config{Schema: schema, MaxConns: 2, NoListen: true})
			errs <- err
			stores <- s
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Errorf("Open of one of %d nodes starting at once: %v", nodes, err)
		}
		if s := <-stores; s != nil {
			defer s.Close()
		}
	}
	conn, err := pgx.Connect(t.Context(), testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var rows, max int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(version) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if rows != postgres.LatestSchemaVersion() || max != postgres.LatestSchemaVersion() {
		t.Errorf("schema_migrations has %d rows up to version %d, want each of the %d migrations once", rows, max, postgres.LatestSchemaVersion())
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []struct {
		name, dsn string
		cfg       postgres.Config
	}{
		{"malformed DSN", "postgres://%zz", postgres.Config{}},
		{"schema name too long", "postgres://localhost/x", postgres.Config{Schema: strings.Repeat("s", 64)}},
		{"control character in the schema name", "postgres://localhost/x", postgres.Config{Schema: "a\nb"}},
		{"malformed session DSN", "postgres://localhost/x", postgres.Config{SessionDSN: "postgres://%zz"}},
	} {
		_, err := postgres.Open(t.Context(), c.dsn, c.cfg)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Open with %s: %v, want an error matching ErrInvalid", c.name, err)
		}
	}
}
