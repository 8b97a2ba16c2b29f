package pgtest_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/internal/pgtest"
)

// TestServer starts a private server, restarts it (a session does not
// survive, a new one connects), and checks that the test's end stops it
// and removes its files.
func TestServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL")
	}
	var s *pgtest.Server
	t.Run("lifetime", func(t *testing.T) {
		s = pgtest.Start(t)
		ctx := t.Context()
		c, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var port string
		if err := c.QueryRow(ctx, `SHOW port`).Scan(&port); err != nil || port != s.Port {
			t.Fatalf("SHOW port: %q, %v; want %s", port, err, s.Port)
		}
		s.Ctl(t, "restart", "-m", "fast")
		if err := c.Ping(ctx); err == nil {
			t.Error("a session from before the restart still works: the server did not restart")
		}
		c2, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err != nil {
			t.Fatalf("connecting after the restart: %v", err)
		}
		c2.Close(ctx)
	})
	if s == nil {
		return
	}
	if _, err := os.Stat(filepath.Dir(s.Data)); !os.IsNotExist(err) {
		t.Errorf("the server's directory %s is still there after its test ended (%v)", filepath.Dir(s.Data), err)
	}
	if c, err := pgx.Connect(t.Context(), s.DSN("postgres")); err == nil {
		c.Close(t.Context())
		t.Errorf("the server on port %s still answers after its test ended", s.Port)
	}
}

// TestStandby makes a synchronous standby, checks that a commit on the
// primary is on the standby when it returns, kills the primary and
// promotes the standby, which then takes writes and still holds the row.
func TestStandby(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two PostgreSQL servers")
	}
	ctx := t.Context()
	primary := pgtest.Start(t)
	standby := primary.Standby(t, "standby1")
	p, err := pgx.Connect(ctx, primary.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for _, q := range []string{`ALTER SYSTEM SET synchronous_standby_names = 'standby1'`, `SELECT pg_reload_conf()`, `CREATE TABLE t (v int)`} {
		if _, err := p.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := pgx.Connect(ctx, standby.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var state string
	for range 100 {
		if err := p.QueryRow(ctx, `SELECT coalesce((SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'), '')`).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state == "sync" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if state != "sync" {
		t.Fatalf("the standby's sync_state is %q, want sync", state)
	}
	if _, err := p.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	primary.Kill(t)
	if err := p.Ping(ctx); err == nil {
		t.Error("a session on the killed primary still works")
	}
	var inRecovery bool
	if err := s.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery); err != nil || !inRecovery {
		t.Fatalf("before its promotion the standby says in recovery = %v, %v", inRecovery, err)
	}
	standby.Promote(t)
	if _, err := s.Exec(ctx, `INSERT INTO t VALUES (2)`); err != nil {
		t.Fatalf("the promoted standby refuses a write: %v", err)
	}
	var n int
	if err := s.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Errorf("the promoted standby holds %d rows (%v), want 2: the synchronous commit before the kill is lost", n, err)
	}
}
