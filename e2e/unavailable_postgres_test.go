//go:build linux

package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/internal/pgtest"
)

// TestPostgresNotNow takes a rota server's PostgreSQL away in each way
// PostgreSQL says "not now" and checks that every route answers 503 with
// Retry-After (not 500) while it lasts, and works again after it: a
// database not accepting connections (55000 at connect), too many
// connections (53300), a read-only database as after a failover (25006),
// an administrator's termination (57P01), a crash of another backend
// (57P02), a server shutting down (57P03) and one not listening at all
// (a connection error). Meanwhile a `rota work` worker's finish meets an
// outage, is tried again, and completes the job once the database is
// back. It runs on a PostgreSQL of its own, which it restarts and crashes.
func TestPostgresNotNow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and crashes a PostgreSQL of its own")
	}
	pg := pgtest.Start(t)
	ctx := t.Context()
	top := t
	admin := func(t *testing.T, db string) *pgx.Conn {
		t.Helper()
		c, err := pgx.Connect(ctx, pg.DSN(db))
		if err != nil {
			t.Fatal(err)
		}
		top.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	sql := func(t *testing.T, c *pgx.Conn, q string) {
		t.Helper()
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	a := admin(t, "postgres")
	// The server's role is no superuser, whom connection limits spare.
	sql(t, a, `CREATE ROLE app LOGIN`)
	sql(t, a, `CREATE DATABASE app OWNER app`)
	terminate := func(t *testing.T) {
		t.Helper()
		sql(t, a, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'app' AND pid <> pg_backend_pid()`)
	}
	dsn := "postgres://app@127.0.0.1:" + pg.Port + "/app?sslmode=disable"
	s := serveAt(t, "127.0.0.1:0", t.TempDir(), "--store", dsn)
	jid := s.add(t, "e2e.t")

	type answer struct {
		status     int
		retryAfter string
		body       string
	}
	call := func(method, path, body string) answer {
		req, _ := http.NewRequestWithContext(ctx, method, s.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(raw)}
	}
	reads := [][3]string{
		{"GET", "/v1/jobs?limit=5", ""},
		{"GET", "/v1/jobs/" + id(jid), ""},
		{"GET", "/v1/stats", ""},
	}
	writes := [][3]string{
		{"POST", "/v1/jobs", `{"type":"e2e.other"}`},
		{"POST", "/v1/accept", `{"types":["e2e.none"],"limit":1}`},
		{"PATCH", "/v1/jobs/" + id(jid), `{"priority":1}`},
	}
	// unavailable checks that each route answers 503 with Retry-After,
	// and that the message names sqlstate (when PostgreSQL gave one). The
	// pool's connections that an outage ended say so first (57P01) on their
	// next use, also with 503: a route is tried until it names sqlstate.
	unavailable := func(t *testing.T, sqlstate string, routes ...[3]string) {
		t.Helper()
		for _, r := range routes {
			for try := 1; ; try++ {
				got := call(r[0], r[1], r[2])
				if got.status != http.StatusServiceUnavailable || got.retryAfter == "" || !strings.Contains(got.body, `"unavailable"`) {
					t.Errorf("%s %s: %d, Retry-After %q: %s; want 503 with Retry-After", r[0], r[1], got.status, got.retryAfter, got.body)
					break
				}
				if strings.Contains(got.body, "SQLSTATE "+sqlstate) || sqlstate == "" {
					break
				}
				if try == 5 {
					t.Errorf("%s %s: the message does not name SQLSTATE %s: %s", r[0], r[1], sqlstate, got.body)
					break
				}
			}
		}
	}
	available := func(t *testing.T) {
		t.Helper()
		for _, r := range append(reads, writes...) {
			var got answer
			for deadline := time.Now().Add(commandTimeout); ; time.Sleep(50 * time.Millisecond) {
				if got = call(r[0], r[1], r[2]); got.status < 300 || time.Now().After(deadline) {
					break
				}
			}
			if got.status >= 300 {
				t.Fatalf("after the outage, %s %s: %d %s", r[0], r[1], got.status, got.body)
			}
		}
	}
	all := append(reads, writes...)
	// The server tries a read again for 10s before it answers 503: one
	// read route is enough beyond the first case.
	some := append([][3]string{reads[1]}, writes...)

	t.Run("55000 not accepting connections", func(t *testing.T) {
		// A worker's job is running when the outage begins; its finish
		// meets it, is tried again, and lands after.
		w := s.start(t, "work", "--type", "e2e.work", "--lease", "1m", "--", "sh", "-c", "sleep 1")
		wj := s.add(t, "e2e.work")
		eventually(t, "the job runs", func() bool { return s.get(t, wj).State == "running" })
		sql(t, a, `ALTER DATABASE app ALLOW_CONNECTIONS false`)
		terminate(t)
		unavailable(t, "55000", all...)
		time.Sleep(1500 * time.Millisecond) // the program ends: its finish is refused for now
		sql(t, a, `ALTER DATABASE app ALLOW_CONNECTIONS true`)
		available(t)
		eventually(t, "the finish is tried again", func() bool { return s.get(t, wj).State == "completed" })
		if !strings.Contains(w.stderr.String(), "trying again") {
			t.Errorf("the worker's finish met no outage:\n%s", w.stderr)
		}
		w.signal(t, syscall.SIGTERM)
	})
	t.Run("53300 too many connections", func(t *testing.T) {
		sql(t, a, `ALTER DATABASE app CONNECTION LIMIT 0`)
		terminate(t)
		unavailable(t, "53300", some...)
		sql(t, a, `ALTER DATABASE app CONNECTION LIMIT -1`)
		available(t)
	})
	t.Run("25006 read-only", func(t *testing.T) {
		sql(t, a, `ALTER DATABASE app SET default_transaction_read_only = on`)
		terminate(t)
		unavailable(t, "25006", writes...)
		sql(t, a, `ALTER DATABASE app RESET default_transaction_read_only`)
		terminate(t)
		available(t)
	})
	// A request that waits behind a lock is there when its backend ends.
	blocked := func(t *testing.T, c *pgx.Conn) (chan answer, func()) {
		t.Helper()
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE rota.jobs IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		// A write: the server tries a read again for a while, which would
		// outlast the outage.
		got := make(chan answer, 1)
		go func() { got <- call("PATCH", "/v1/jobs/"+id(jid), `{"priority":2}`) }()
		waiting := func() bool {
			var n int
			a.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = 'app' AND wait_event_type = 'Lock'`).Scan(&n)
			return n > 0
		}
		eventually(t, "the request waits for the lock", waiting)
		return got, func() { tx.Rollback(context.Background()) }
	}
	t.Run("57P01 admin shutdown", func(t *testing.T) {
		got, unlock := blocked(t, admin(t, "app"))
		defer unlock()
		// Every backend the request waits on is terminated, the retry's too
		// (on a connection of the loop's own: a pgx.Conn is not shared).
		killer := admin(t, "postgres")
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					killer.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'app' AND wait_event_type = 'Lock'`)
				}
			}
		}()
		r := <-got
		close(stop)
		<-stopped
		if r.status != http.StatusServiceUnavailable || r.retryAfter == "" || !strings.Contains(r.body, "57P01") {
			t.Errorf("a request whose backend was terminated: %d, Retry-After %q: %s", r.status, r.retryAfter, r.body)
		}
		unlock()
		available(t)
	})
	t.Run("57P02 crash of another backend", func(t *testing.T) {
		c := admin(t, "app")
		got, _ := blocked(t, c)
		// SIGKILL of a backend makes PostgreSQL end every other one with
		// 57P02 and recover; meanwhile connections get 57P03.
		killBackend(t, pg, c)
		r := <-got
		if r.status != http.StatusServiceUnavailable || r.retryAfter == "" || !(strings.Contains(r.body, "57P02") || strings.Contains(r.body, "57P03")) {
			t.Errorf("a request whose backend the crash ended: %d, Retry-After %q: %s", r.status, r.retryAfter, r.body)
		}
		// The crash ended the admin's session too; recovery takes a moment.
		var c2 *pgx.Conn
		eventually(t, "PostgreSQL recovers", func() bool {
			var err error
			c2, err = pgx.Connect(ctx, pg.DSN("postgres"))
			return err == nil
		})
		top.Cleanup(func() { c2.Close(context.Background()) })
		a = c2
		available(t)
	})
	t.Run("57P03 shutting down", func(t *testing.T) {
		// A smart shutdown waits for the sessions open; until they end,
		// PostgreSQL turns new connections away with 57P03.
		hold := admin(t, "postgres")
		pg.Ctl(t, "stop", "-m", "smart", "-W")
		terminate(t)
		unavailable(t, "57P03", some...)
		hold.Close(ctx)
		a.Close(ctx)
		eventually(t, "PostgreSQL stops", func() bool {
			_, err := os.Stat(pg.Data + "/postmaster.pid")
			return os.IsNotExist(err)
		})
		t.Run("08 nobody listening", func(t *testing.T) {
			unavailable(t, "", some...)
		})
		pg.Ctl(t, "start")
		a = admin(t, "postgres")
		available(t)
	})
}

// killBackend kills c's backend with SIGKILL, as a crash would.
func killBackend(t *testing.T, pg *pgtest.Server, c *pgx.Conn) {
	t.Helper()
	pid := c.PgConn().PID()
	if pg.AsPostgres || os.Geteuid() == 0 {
		if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
			t.Fatalf("kill backend %d: %v", pid, err)
		}
		return
	}
	if out, err := pg.Command("kill", "-9", strconv.Itoa(int(pid))).CombinedOutput(); err != nil {
		t.Fatalf("kill backend %d: %v %s", pid, err, fmt.Sprint(string(out)))
	}
}
