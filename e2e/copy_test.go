//go:build linux

package e2e_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotajobs/rota/internal/pgtest"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
	"github.com/rotajobs/rota/store/sqlite"
)

// TestCopy moves a deployment from SQLite to PostgreSQL and back through
// `rota copy`: a store with jobs in every state (running ones with their
// leases, retried ones with their errors, a family, Bedrock ids, keys,
// metadata, a removed id), type and group settings and a named token, and
// a recurring job (every second, missed slots: all) that a worker runs across both
// moves. Each copy is checked independently of rota copy's own check, by
// exporting both stores here; the recurring job runs once per slot, none
// lost or doubled; the token, the settings and the next id work on the
// destination's server. ROTA_COPY_JOBS sets the size (20,000 by
// default; docs/benchmarks.md has the rate for 1,000,000).
func TestCopy(t *testing.T) {
	n := 20000
	if v := os.Getenv("ROTA_COPY_JOBS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			t.Fatalf("ROTA_COPY_JOBS=%q: want a number of jobs, at least 100", v)
		}
	}
	pg := pgtest.Start(t)
	pgDSN := pg.DSN("postgres")
	dataA := t.TempDir()
	srcPath := filepath.Join(dataA, "rota.db")
	fillForCopy(t, srcPath, n)

	// The first server: SQLite, with the recurring job and a worker.
	a := startServer(t, "--data", dataA, "--auth-token", "admin-secret")
	a.token = "admin-secret"
	rsA, err := remote.New(a.URL, remote.Config{Token: a.token})
	if err != nil {
		t.Fatal(err)
	}
	const interval = time.Second
	t0 := time.Now().Add(time.Second).UTC().Truncate(time.Second)
	added, err := rsA.Add(t.Context(), []store.AddParams{{Type: "copy.tick", Schedule: "@every 1s", RunAt: t0, Missed: store.MissedAll}})
	if err != nil {
		t.Fatal(err)
	}
	tick := added[0].Job.ID
	var slots []time.Time
	runTicks(t, rsA, &slots, t0.Add(3*interval+interval/2))
	// A copy from a database a server holds is refused.
	if r := a.run(t, "", "copy", "--from", srcPath, "--to", filepath.Join(t.TempDir(), "x.db")); r.code != exitConflict || !strings.Contains(r.stderr, "is serving") {
		t.Errorf("a copy from a served database: want exit %d saying it is served: %v", exitConflict, r)
	}
	rsA.Close()
	stop(t, a.cmd, syscall.SIGTERM)

	// SQLite → PostgreSQL.
	out := copyStores(t, srcPath, pgDSN)
	t.Logf("SQLite → PostgreSQL, %d jobs: %s", n, out)
	compareStores(t, srcPath, pgDSN)
	// A destination that holds jobs is refused, and left as it was; with
	// --replace it is emptied and copied into.
	if n <= 100000 {
		r := a.run(t, "", "copy", "--from", srcPath, "--to", pgDSN)
		if r.code != exitConflict || !strings.Contains(r.stderr, "not empty") || !strings.Contains(r.stderr, "--replace") {
			t.Errorf("a copy into a store that holds jobs: want exit %d naming --replace: %v", exitConflict, r)
		}
		copyStores(t, srcPath, pgDSN, "--replace")
		compareStores(t, srcPath, pgDSN)
	}

	// The second server: PostgreSQL, the same token, the recurring job
	// going on, the settings and next id kept.
	b := startServer(t, "--store", pgDSN, "--auth-token", "admin-secret")
	b.token = "admin-secret"
	rsB, err := remote.New(b.URL, remote.Config{Token: b.token})
	if err != nil {
		t.Fatal(err)
	}
	runTicks(t, rsB, &slots, time.Now().Add(4*interval))
	checkCopied(t, b, rsB, n)
	rsB.Close()
	stop(t, b.cmd, syscall.SIGTERM)

	// PostgreSQL → SQLite, into a new file, and the ticks go on there.
	dataC := t.TempDir()
	dstPath := filepath.Join(dataC, "rota.db")
	out = copyStores(t, pgDSN, dstPath)
	t.Logf("PostgreSQL → SQLite, %d jobs: %s", n, out)
	compareStores(t, pgDSN, dstPath)
	c := startServer(t, "--data", dataC, "--auth-token", "admin-secret")
	c.token = "admin-secret"
	rsC, err := remote.New(c.URL, remote.Config{Token: c.token})
	if err != nil {
		t.Fatal(err)
	}
	defer rsC.Close()
	runTicks(t, rsC, &slots, time.Now().Add(3*interval))
	checkCopied(t, c, rsC, n)

	// Once per slot, from t0 on, across both moves: none lost or doubled.
	for i, s := range slots {
		if want := t0.Add(time.Duration(i) * interval); !s.Equal(want) {
			t.Fatalf("run %d of the recurring job stood for slot %v, want %v (every slot once, in order): %v", i, s, want, slots)
		}
	}
	if len(slots) < 8 {
		t.Errorf("the recurring job ran %d times, want at least 8 across the moves: %v", len(slots), slots)
	}
	j, err := rsC.Get(t.Context(), []int64{tick})
	if err != nil || j[0].State != store.Pending {
		t.Errorf("at the end the recurring job is %+v (%v), want it pending", j, err)
	}
}

// runTicks accepts and completes the recurring job until until,
// recording the slot of every run whose completion was acknowledged.
func runTicks(t *testing.T, rs *remote.Store, slots *[]time.Time, until time.Time) {
	t.Helper()
	for time.Now().Before(until) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		res, err := rs.Accept(ctx, store.AcceptParams{Types: []string{"copy.tick"}, LeaseTimeout: 5 * time.Second})
		cancel()
		if err != nil || len(res.Jobs) == 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		j := res.Jobs[0]
		errs, err := rs.Finish(t.Context(), []store.FinishParams{{Lease: j.Lease(), As: store.Complete}})
		if err == nil && errs[0] == nil {
			*slots = append(*slots, j.Slot)
		}
	}
}

var copiedRE = regexp.MustCompile(`copied (\d+) jobs .* in (\S+) \((\d+) jobs/s\)`)

// copyStores runs rota copy and returns what it said.
func copyStores(t *testing.T, from, to string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"copy", "--from", from, "--to", to}, args...)...)
	cmd.Env = cleanEnv()
	outB, err := cmd.CombinedOutput()
	out := string(outB)
	if err != nil {
		t.Fatalf("rota copy --from %s --to %s: %v\n%s", from, to, err, out)
	}
	if !copiedRE.MatchString(out) || !strings.Contains(out, "checked in") {
		t.Fatalf("rota copy does not say what it copied and checked:\n%s", out)
	}
	return strings.TrimSpace(out)
}

// compareStores exports both stores and compares what they hold.
func compareStores(t *testing.T, a, b string) {
	t.Helper()
	sa, sb := exportSummary(t, a), exportSummary(t, b)
	if diff := sa.Diff(sb); len(diff) > 0 {
		t.Fatalf("%s and its copy %s differ: %s", a, b, strings.Join(diff, "; "))
	}
	if sa.Jobs == 0 || len(sa.Counts) < 10 {
		t.Fatalf("the store %s holds %d jobs in %d (type, group, state) counts: the test filled it wrong", a, sa.Jobs, len(sa.Counts))
	}
}

func exportSummary(t *testing.T, spec string) *store.CopySummary {
	t.Helper()
	var c store.Copier
	if strings.HasPrefix(spec, "postgres://") {
		st, err := postgres.Open(t.Context(), spec, postgres.Config{NoListen: true, NoNotify: true, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		c = st
	} else {
		st, err := sqlite.Open(spec, sqlite.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		c = st
	}
	sum := store.NewCopySummary()
	if err := c.Export(t.Context(), 5000, func(b *store.CopyBatch) error { sum.Add(b); return nil }); err != nil {
		t.Fatal(err)
	}
	return sum
}

// fillForCopy fills a SQLite store with n jobs of every kind and state,
// settings and a token.
func fillForCopy(t *testing.T, path string, n int) {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(path, sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for start := 0; start < n; start += 1000 {
		batch := make([]store.AddParams, 0, 1000)
		for i := start; i < min(start+1000, n); i++ {
			p := store.AddParams{Type: []string{"copy.mail", "copy.report"}[i%2], Group: fmt.Sprintf("g%d", i%10),
				Data: []byte(fmt.Sprintf(`{"i":%d,"s":"ünïcode ✓"}`, i)), Priority: i % 3, MaxAttempts: 3}
			if i%7 == 0 {
				p.Meta = map[string]string{"traceparent": fmt.Sprintf("00-%032x-%016x-01", i, i)}
			}
			if i%11 == 0 {
				p.Key = fmt.Sprintf("k%d", i)
			}
			if i%13 == 0 {
				p.RunAt = time.Now().Add(time.Hour).Truncate(time.Microsecond)
			}
			if i%17 == 0 {
				p.Timeout = time.Duration(i%5+1) * time.Hour
			}
			batch = append(batch, p)
		}
		if _, err := st.Add(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	// Runs: some complete, fail for good, are retried with their error,
	// or keep running under their leases.
	for done := 0; done < n/4; {
		res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"copy.report"}, Limit: 1000, Worker: "filler", LeaseTimeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) == 0 {
			break
		}
		var fin []store.FinishParams
		for k, j := range res.Jobs {
			switch k % 10 {
			case 0:
				fin = append(fin, store.FinishParams{Lease: j.Lease(), As: store.Fail, Error: "no such mailbox", Permanent: true})
			case 1, 2:
				fin = append(fin, store.FinishParams{Lease: j.Lease(), As: store.Fail, Error: "timeout"})
			case 3:
				// running: its lease goes with it
			default:
				fin = append(fin, store.FinishParams{Lease: j.Lease(), As: store.Complete, Result: []byte(fmt.Sprintf(`{"sent":%d}`, j.ID))})
			}
		}
		if _, err := st.Finish(ctx, fin); err != nil {
			t.Fatal(err)
		}
		done += len(res.Jobs)
	}
	// Cancelled jobs, a removed id, a family, Bedrock ids, settings, a
	// paused group, a token.
	var cancel []int64
	for id := int64(2); id < int64(n); id += 40 {
		cancel = append(cancel, id)
	}
	if _, err := st.Cancel(ctx, cancel); err != nil {
		t.Fatal(err)
	}
	parent, err := st.Add(ctx, []store.AddParams{{Type: "copy.batch", Data: []byte(`{"parent":true}`)}})
	if err != nil {
		t.Fatal(err)
	}
	pres, err := st.Accept(ctx, store.AcceptParams{Types: []string{"copy.batch"}, LeaseTimeout: time.Hour})
	if err != nil || len(pres.Jobs) != 1 {
		t.Fatalf("accept the parent: %v, %d jobs", err, len(pres.Jobs))
	}
	var kids []store.AddParams
	for k := range 3 {
		kids = append(kids, store.AddParams{Type: "copy.batch", Parent: parent[0].Job.ID, Data: []byte(fmt.Sprintf(`{"child":%d}`, k))})
	}
	if _, err := st.Add(ctx, kids); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finish(ctx, []store.FinishParams{{Lease: pres.Jobs[0].Lease(), As: store.Complete}}); err != nil {
		t.Fatal(err)
	}
	last, err := st.Add(ctx, []store.AddParams{{Type: "copy.mail", Data: []byte(`{"removed":true}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Remove(ctx, []int64{last[0].Job.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.BedrockIDs(ctx, []int64{1, 3, 5, parent[0].Job.ID}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []store.TypeConfig{
		{Type: "copy.mail", LeaseTimeout: 90 * time.Second, Retention: 48 * time.Hour, FailedRetention: 30 * 24 * time.Hour},
		{Type: "copy.report", GroupMaxRunning: 50, MaxRunning: 80, Bands: store.Bands{High: 3, Low: 1}, Rate: store.Rate{N: 500, Per: time.Second}, Burst: 900},
	} {
		if err := st.SetTypeConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []store.GroupConfig{{Group: "g1", Weight: 3}, {Group: "g2", Type: "copy.mail", MaxRunning: 4}, {Group: "g9", Paused: true}, {Group: "g3", Rate: store.Rate{N: 7, Per: time.Minute}, Burst: 2}} {
		if err := st.SetGroupConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	h := sha256.Sum256([]byte("tenant-secret"))
	if err := st.CreateToken(ctx, store.Token{Name: "tenant", Groups: []string{"g1", "g2"}, ReadOnly: true}, h[:]); err != nil {
		t.Fatal(err)
	}
}

// checkCopied checks, through a server on the copy, what rota copy
// carries that the checksums cannot show at work: the named token, the
// paused group, the settings, and ids past every id the source gave.
func checkCopied(t *testing.T, s *server, rs *remote.Store, n int) {
	t.Helper()
	tenant := *s
	tenant.token = "tenant-secret"
	var ls struct{ Jobs []job }
	tenant.rotaJSON(t, &ls, "ls", "--limit", "20")
	if len(ls.Jobs) == 0 {
		t.Errorf("the tenant's token sees no jobs on the copy")
	}
	for _, j := range ls.Jobs {
		if j.Group != "g1" && j.Group != "g2" {
			t.Errorf("the tenant's token (groups g1, g2) sees job %d of group %q on the copy", j.ID, j.Group)
		}
	}
	if r := tenant.run(t, "", "add", "copy.mail", "--group", "g1"); r.code != exitAuth && r.code != exitUsage {
		t.Errorf("the read-only token added a job on the copy: %v", r)
	}
	gcs, err := rs.GroupConfigs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	paused, rated := false, false
	for _, g := range gcs {
		paused = paused || g.Group == "g9" && g.Paused
		rated = rated || g.Group == "g3" && g.Rate == store.Rate{N: 7, Per: time.Minute} && g.Burst == 2
	}
	if !paused || !rated {
		t.Errorf("group g9 is not paused or g3 has not its rate of 7/m, burst 2, on the copy: %+v", gcs)
	}
	tcs, err := rs.TypeConfigs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(tcs, func(c store.TypeConfig) bool { return c.Type == "copy.report" }); i < 0 || tcs[i].Rate.String() != "500/s" || tcs[i].Burst != 900 {
		t.Errorf("type copy.report has not its rate of 500/s, burst 900, on the copy: %+v", tcs)
	}
	added := s.add(t, "copy.after")
	if added <= int64(n)+5 {
		t.Errorf("a job added to the copy got id %d, which the source gave (or removed) before", added)
	}
}
