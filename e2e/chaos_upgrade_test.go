//go:build linux

package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotajobs/rota/internal/pgtest"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// previousRelease is the release a rolling upgrade starts from: rota has
// no tags, so it is a commit: the last one released (schema 15), so that
// the upgrade runs every migration added since (0016–) under the older
// nodes. Move it on when a migration is added (docs/postgres.md, Rolling
// upgrades).
const (
	previousRelease       = "d5e615aa99197e30f1ea260c0f12d50e670701d2"
	previousSchemaVersion = 15
)

// TestChaosUpgrade upgrades two nodes of the previous release, running
// on one PostgreSQL under load (producers on every node, a `rota work`
// worker beside each), to the current build, one node at a time: a node
// of the current build starts beside them and migrates the schema while
// they work; an older node that starts after that runs beside it and
// warns to upgrade it (every newer migration is compatible); the older
// nodes are then stopped one by one and replaced. It checks the producers' ledger: every acknowledged add
// completed, no two runs of a job at once, and the older nodes kept
// acknowledging adds after the migration. It builds the previous release
// from git history (git archive, go build), which needs the commit in the
// clone: scripts/setup.sh deepens a shallow one.
func TestChaosUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release and runs two versions for a while")
	}
	t.Parallel()
	began := time.Now()
	old := buildRelease(t, previousRelease)
	built := time.Since(began)
	pg := pgtest.Start(t)
	dsn := pg.DSN("postgres")
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	program := chaosProgram(runs)
	const typ = "upgrade"
	const interval = 2 * time.Second

	// work starts a worker of binary beside node n.
	work := func(n *server, binary string) *process {
		return n.startWith(t, binary, "work", "--type", typ, "--concurrency", "8", "--lease", "3s", "--", "sh", "-c", program)
	}
	client := func(n *server) *remote.Store {
		rs, err := remote.New(n.URL, remote.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Close() })
		return rs
	}
	olds := []*server{serveWith(t, old, "127.0.0.1:0", t.TempDir(), "--store", dsn), serveWith(t, old, "127.0.0.1:0", t.TempDir(), "--store", dsn)}
	oldWorkers := []*process{work(olds[0], old), work(olds[1], old)}
	oldClients := []*remote.Store{client(olds[0]), client(olds[1])}
	if v := schemaStatus(t, dsn); !strings.Contains(v, fmt.Sprintf("version %d;", previousSchemaVersion)) {
		t.Fatalf("the previous release made a schema other than version %d: %s", previousSchemaVersion, v)
	}
	// Producers per node, halted before their node stops: every refusal
	// they count is one by a serving node.
	prodOld := []*producers{startProducers(oldClients[:1], 2, typ), startProducers(oldClients[1:], 2, typ)}
	time.Sleep(interval)

	// A node of the current build migrates under the older ones.
	migrating := time.Now()
	n1 := startServer(t, "--store", dsn)
	migrated := time.Since(migrating)
	if v := schemaStatus(t, dsn); strings.Contains(v, fmt.Sprintf("version %d;", previousSchemaVersion)) {
		t.Fatalf("the current build did not migrate the schema: %s", v)
	}
	w1 := work(n1, bin)
	prodNew := startProducers([]*remote.Store{client(n1)}, 2, typ)
	refusedBefore := prodOld[0].refusedCount() + prodOld[1].refusedCount()
	time.Sleep(interval)

	// An older node started now runs beside the newer schema, since every
	// migration after its own is compatible, and warns to upgrade it.
	late := serveWith(t, old, "127.0.0.1:0", t.TempDir(), "--store", dsn)
	if l := late.log.String(); !strings.Contains(l, "newer than this node knows") || !strings.Contains(l, "upgrade this node") {
		t.Errorf("a node of the previous release started on the migrated schema: want a warning saying the schema is newer and to upgrade the node:\n%s", l)
	}
	oldClients = append(oldClients, client(late))
	// The older nodes still serve: an add through each, after the
	// migration, is acknowledged (and must complete, below).
	var afterMigration []int64
	for i, rs := range oldClients {
		res, err := rs.Add(t.Context(), []store.AddParams{{Type: typ, Data: []byte(`{"after":"migration"}`)}})
		if err != nil {
			t.Fatalf("older node %d refused an add after the migration: %v", i, err)
		}
		afterMigration = append(afterMigration, res[0].Job.ID)
	}

	// Replace the older nodes one at a time.
	var ids []int64
	refused := 0
	replace := func(i int) {
		got, r := prodOld[i].halt()
		ids, refused = append(ids, got...), refused+r
		if log := oldWorkers[i].stderr.String(); strings.Contains(log, "level=ERROR") || strings.Contains(log, `"level":"ERROR"`) {
			t.Errorf("the worker beside older node %d logged errors:\n%s", i, log)
		}
		oldWorkers[i].signal(t, syscall.SIGTERM)
		stop(t, olds[i].cmd, syscall.SIGTERM)
		n := startServer(t, "--store", dsn)
		work(n, bin)
		time.Sleep(interval)
	}
	replace(0)
	replace(1)
	newIDs, newRefused := prodNew.halt()
	ids = append(append(ids, newIDs...), afterMigration...)
	if refusedAfter := refused - refusedBefore; refusedAfter > 0 || newRefused > 0 {
		t.Errorf("after the migration, the older nodes refused %d adds and the new one %d, want none", refusedAfter, newRefused)
	}

	missing, unfinished := checkLedger(t, client(n1), ids, 60*time.Second)
	spans, _, overlaps := checkOverlaps(t, runs)
	w1.signal(t, syscall.SIGTERM)
	t.Logf("upgrade: previous release %.8s built in %v; migration under load by a new node started in %v", previousRelease, built.Round(time.Second), migrated.Round(time.Millisecond))
	fmt.Printf("chaos upgrade: %.8s → current, 2 older nodes replaced under load; %d jobs acknowledged (%d adds refused by the older nodes, %d by the new), %d runs; lost = %d, unfinished = %d, overlaps = %d; %v in all\n",
		previousRelease, len(ids), refused, newRefused, spans, len(missing), len(unfinished), overlaps, time.Since(began).Round(time.Second))
}

// buildRelease builds the rota binary of commit from this clone's
// history (git archive into a temporary directory, go build there) and
// returns its path.
func buildRelease(t *testing.T, commit string) string {
	t.Helper()
	// Without the history there is nothing to build the previous release
	// from: the test says so and is skipped, unless ROTA_REQUIRE_HISTORY=1
	// asks for it to fail (a checkout without history cannot run it).
	missing := t.Skipf
	if os.Getenv("ROTA_REQUIRE_HISTORY") == "1" {
		missing = t.Fatalf
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		missing("TestChaosUpgrade builds the previous release from git history, and this is not a git clone (%v): run the test in a clone of rota", err)
		return ""
	}
	root := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		missing("the previous release, commit %s, is not in this clone's history (a shallow clone?): run scripts/setup.sh, which deepens it, or `git fetch --unshallow` (or `git fetch origin %s`), then run the test again", commit, commit)
		return ""
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "src.tar")
	if out, err := exec.Command("git", "-C", root, "archive", "--format=tar", "-o", archive, commit).CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", src).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	binary := filepath.Join(dir, "rota-"+commit[:8])
	build := exec.Command("go", "build", "-o", binary, "./cmd/rota")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the previous release %s: %v\n%s", commit, err, out)
	}
	return binary
}

// schemaStatus is `rota migrate --status` of the current build.
func schemaStatus(t *testing.T, dsn string) string {
	t.Helper()
	s := &server{}
	r := s.run(t, "", "migrate", "--store", dsn, "--status")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	return r.stdout
}
