package pgtest_test

import (
	"os"
	"path/filepath"
	"testing"

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
