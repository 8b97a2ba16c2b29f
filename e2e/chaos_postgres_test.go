//go:build linux

package e2e_test

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
	"syscall"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
)

// privatePostgres is a PostgreSQL server of the test's own, in a
// temporary directory on a free port, so that restarting it disturbs no
// other test.
type privatePostgres struct {
	bin, data, port string
	asPostgres      bool // the test runs as root; PostgreSQL refuses to
}

// startPostgres initialises and starts a private PostgreSQL, or skips
// (fails, when ROTA_REQUIRE_POSTGRES=1) when its binaries are missing.
func startPostgres(t *testing.T) *privatePostgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		if os.Getenv("ROTA_REQUIRE_POSTGRES") == "1" {
			t.Fatal("no PostgreSQL binaries in /usr/lib/postgresql/*/bin (scripts/setup.sh installs them)")
		}
		t.Skip("no PostgreSQL binaries in /usr/lib/postgresql/*/bin")
	}
	sort.Strings(bins)
	dir, err := os.MkdirTemp("", "rota-chaos-pg-")
	if err != nil {
		t.Fatal(err)
	}
	pg := &privatePostgres{bin: filepath.Dir(bins[len(bins)-1]), data: filepath.Join(dir, "data"), port: freePort(t), asPostgres: os.Geteuid() == 0}
	if pg.asPostgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root without a postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		pg.ctl(t, "stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	if out, err := pg.cmd("initdb", "-D", pg.data, "-A", "trust", "-U", "rota", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	pg.ctl(t, "start")
	return pg
}

func (pg *privatePostgres) cmd(name string, args ...string) *exec.Cmd {
	path := filepath.Join(pg.bin, name)
	if pg.asPostgres {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// ctl runs pg_ctl: start, stop -m immediate (a crash), restart.
func (pg *privatePostgres) ctl(t *testing.T, args ...string) {
	t.Helper()
	opts := fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c fsync=on", pg.port, filepath.Dir(pg.data))
	full := append([]string{"-D", pg.data, "-w", "-t", "60", "-o", opts, "-l", pg.data + ".log"}, args...)
	if out, err := pg.cmd("pg_ctl", full...).CombinedOutput(); err != nil && args[0] != "stop" {
		log, _ := os.ReadFile(pg.data + ".log")
		t.Fatalf("pg_ctl %s: %v\n%s\n%s", strings.Join(args, " "), err, out, log)
	}
}

func (pg *privatePostgres) dsn() string {
	return "postgres://rota@127.0.0.1:" + pg.port + "/postgres?sslmode=disable"
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// TestChaosPostgres runs two `rota serve` nodes on one PostgreSQL under
// load (producers on both nodes, a `rota work` worker on each, an event
// subscriber) and takes PostgreSQL away twice: a fast restart, then a
// crash (stop -m immediate, recovery at start). Then it checks the
// producers' ledger as TestChaos does: nothing acknowledged lost, every
// job completed, no overlapping runs, no stale completion. It prints its
// figures.
func TestChaosPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts PostgreSQL for a while")
	}
	t.Parallel()
	pg := startPostgres(t)
	dir := t.TempDir()
	var nodes []*server
	for range 2 {
		nodes = append(nodes, startServer(t, "--store", pg.dsn()))
	}
	runs := filepath.Join(dir, "runs")
	program := chaosProgram(runs)
	var workers []*process
	for _, n := range nodes {
		workers = append(workers, n.start(t, "work", "--type", "chaos", "--concurrency", "8", "--lease", "3s", "--", "sh", "-c", program))
	}
	defer func() {
		for _, w := range workers {
			w.signal(t, syscall.SIGTERM)
		}
	}()
	var clients []*remote.Store
	for _, n := range nodes {
		rs, err := remote.New(n.URL, remote.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		clients = append(clients, rs)
	}
	c, err := rota.NewClient(clients[1], rota.Config{NoMaintenance: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	done := watchCompletions(t, c, "chaos")
	prod := startProducers(clients, 4, "chaos")
	const interval = 2500 * time.Millisecond
	time.Sleep(interval)
	pg.ctl(t, "restart", "-m", "fast")
	time.Sleep(interval)
	pg.ctl(t, "stop", "-m", "immediate") // a crash: recovery replays the WAL
	time.Sleep(500 * time.Millisecond)
	pg.ctl(t, "start")
	time.Sleep(interval)
	ids, failedAdds := prod.halt()
	for i, n := range nodes {
		if n.cmd.ProcessState != nil {
			t.Errorf("node %d exited when PostgreSQL went away:\n%s", i, n.log)
		}
	}

	missing, unfinished := checkLedger(t, clients[0], ids, 90*time.Second)
	spans, _, overlaps := checkOverlaps(t, runs)
	twice, reverted := done.check(t)
	fmt.Printf("chaos: PostgreSQL restarted and crashed under 2 nodes; %d jobs acknowledged (%d adds refused while it was down), %d runs; lost = %d, unfinished = %d, overlaps = %d, stale completions = %d, reverted = %d\n",
		len(ids), failedAdds, spans, len(missing), len(unfinished), overlaps, twice, reverted)
}
