// Package pgtest starts PostgreSQL servers of a test's own, for tests that
// restart, crash or reconfigure the server: on the shared test database
// that would break the tests of other packages, which go test runs at the
// same time.
package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Server is a PostgreSQL server of the test's own, in a temporary
// directory on a free loopback port. Its superuser is rota, trusted
// without a password.
type Server struct {
	Bin  string // the directory of initdb, pg_ctl
	Data string // the data directory; the server's log is Data + ".log"
	Port string
	// AsPostgres says the test runs as root, which PostgreSQL refuses:
	// its programs run as the postgres user.
	AsPostgres bool
}

// Start initialises and starts a private PostgreSQL, stopped and removed
// when the test ends. It skips the test (fails it, when
// ROTA_REQUIRE_POSTGRES=1) when PostgreSQL's programs are missing: it
// looks in /usr/lib/postgresql/*/bin (Debian's, the newest version) and
// then on PATH.
func Start(t testing.TB) *Server {
	t.Helper()
	s := newServer(t)
	if out, err := s.Command("initdb", "-D", s.Data, "-A", "trust", "-U", "rota", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.Ctl(t, "start")
	return s
}

// newServer finds PostgreSQL's programs and makes the directory of a
// server whose data directory does not exist yet, removed (with the
// server stopped) when the test ends.
func newServer(t testing.TB) *Server {
	t.Helper()
	bin := findBin()
	if bin == "" {
		if os.Getenv("ROTA_REQUIRE_POSTGRES") == "1" {
			t.Fatal("no PostgreSQL programs (initdb, pg_ctl) in /usr/lib/postgresql/*/bin or on PATH (scripts/setup.sh installs them)")
		}
		t.Skip("no PostgreSQL programs (initdb, pg_ctl) in /usr/lib/postgresql/*/bin or on PATH")
	}
	dir, err := os.MkdirTemp("", "rota-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Bin: bin, Data: filepath.Join(dir, "data"), Port: freePort(t), AsPostgres: os.Geteuid() == 0}
	if s.AsPostgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			t.Skipf("running as root without a postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		s.Ctl(t, "stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	return s
}

// Standby makes a streaming standby of s (pg_basebackup of the running
// server, then started in standby mode), named name: with
// synchronous_standby_names = name on s, s's commits wait for it. It is
// stopped and removed when the test ends; Promote makes it a primary.
func (s *Server) Standby(t testing.TB, name string) *Server {
	t.Helper()
	sb := newServer(t)
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%s user=rota application_name=%s", s.Port, name)
	// -R writes standby.signal and a primary_conninfo; the line added
	// after it names the standby, for synchronous_standby_names.
	if out, err := sb.Command("pg_basebackup", "-d", conninfo, "-D", sb.Data, "-X", "stream", "-R", "--no-sync", "-c", "fast").CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	auto := filepath.Join(sb.Data, "postgresql.auto.conf")
	f, err := os.OpenFile(auto, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "primary_conninfo = '%s'\n", conninfo)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	sb.Ctl(t, "start")
	return sb
}

// Promote ends a standby's recovery, making it a primary, and waits until
// it accepts writes.
func (s *Server) Promote(t testing.TB) {
	t.Helper()
	if out, err := s.Command(filepath.Join(s.Bin, "pg_ctl"), "promote", "-D", s.Data, "-w", "-t", "60").CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl promote: %v\n%s", err, out)
	}
}

func findBin() string {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) > 0 {
		// The newest version: by number, so that 9 comes before 10.
		sort.Slice(bins, func(i, j int) bool { return version(bins[i]) < version(bins[j]) })
		return filepath.Dir(bins[len(bins)-1])
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// version is the number n of /usr/lib/postgresql/n/bin/initdb.
func version(initdb string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(initdb))), 64)
	return v
}

// Command runs one of PostgreSQL's programs (or any program, by path) as
// the user who owns the server.
func (s *Server) Command(name string, args ...string) *exec.Cmd {
	path := name
	if !strings.Contains(name, "/") {
		if p := filepath.Join(s.Bin, name); fileExists(p) {
			path = p
		}
	}
	var cmd *exec.Cmd
	if s.AsPostgres {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	// The postgres user may not enter the test's working directory.
	cmd.Dir = filepath.Dir(s.Data)
	return cmd
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Ctl runs pg_ctl with args: start, restart -m fast, stop -m immediate (a
// crash), and so on, waiting for it to finish. It fails the test when
// pg_ctl fails, except for a stop, which may find the server stopped.
func (s *Server) Ctl(t testing.TB, args ...string) {
	t.Helper()
	opts := fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c fsync=on", s.Port, filepath.Dir(s.Data))
	full := append([]string{"-D", s.Data, "-w", "-t", "60", "-o", opts, "-l", s.Data + ".log"}, args...)
	if out, err := s.Command("pg_ctl", full...).CombinedOutput(); err != nil && args[0] != "stop" {
		log, _ := os.ReadFile(s.Data + ".log")
		t.Fatalf("pg_ctl %s: %v\n%s\n%s", strings.Join(args, " "), err, out, log)
	}
}

// DSN is the URL of database db on the server, as the superuser rota.
func (s *Server) DSN(db string) string {
	return "postgres://rota@127.0.0.1:" + s.Port + "/" + db + "?sslmode=disable"
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}
