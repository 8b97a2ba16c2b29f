package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // to read the copy as SQLite does

	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// TestBackupUnderLoad backs up a served SQLite database with `rota
// backup` while producers add jobs and a worker finishes them, on a
// database large enough for the copy to take a while. The copy opens,
// passes PRAGMA integrity_check and holds every job acknowledged before
// the backup began; adds went on during the backup (no gap between
// acknowledgements longer than backupStall); and a server started on the
// copy serves its jobs. It also checks the refusals: an existing file,
// and a data directory with no database.
func TestBackupUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a database and backs it up under load")
	}
	t.Parallel()
	// The bound docs/cli.md gives for how long the backup may hold up an
	// add: it never does, but this machine is shared and loaded.
	const backupStall = 1500 * time.Millisecond
	data := t.TempDir()
	fillSQLite(t, filepath.Join(data, "rota.db"), 60_000)
	srv := serveAt(t, "127.0.0.1:0", data)
	rs, err := remote.New(srv.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	worker := srv.start(t, "work", "--type", "backup.load", "--concurrency", "4", "--", "true")
	defer worker.signal(t, syscall.SIGTERM)
	prod := startProducers([]*remote.Store{rs, rs, rs}, 3, "backup.load")
	time.Sleep(time.Second)

	copyPath := filepath.Join(t.TempDir(), "rota-backup.db")
	began := time.Now()
	res := srv.run(t, "", "backup", "--data", data, copyPath)
	ended := time.Now()
	time.Sleep(500 * time.Millisecond)
	prod.halt()
	if res.code != 0 {
		t.Fatalf("rota backup: %v", res)
	}
	if !strings.Contains(res.stdout, "backed up "+filepath.Join(data, "rota.db")+" to "+copyPath) {
		t.Errorf("rota backup said %q", res.stdout)
	}

	// Adds went on while the copy ran.
	var during []time.Time
	prod.mu.Lock()
	for _, at := range prod.at {
		if at.After(began) && at.Before(ended) {
			during = append(during, at)
		}
	}
	prod.mu.Unlock()
	sort.Slice(during, func(i, k int) bool { return during[i].Before(during[k]) })
	stall := ended.Sub(began)
	if len(during) > 0 {
		stall = max(during[0].Sub(began), ended.Sub(during[len(during)-1]))
		for i := 1; i < len(during); i++ {
			stall = max(stall, during[i].Sub(during[i-1]))
		}
	}
	if stall > backupStall {
		t.Errorf("the backup took %v and adds were acknowledged %d times meanwhile, with a gap of %v: writers were held up", ended.Sub(began), len(during), stall)
	}

	// The copy: whole, and holding every job acknowledged before it began.
	if st, err := os.Stat(copyPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the copy's mode: %v, %v; want 0600", st.Mode(), err)
	}
	db, err := sql.Open("sqlite3", "file:"+copyPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check of the copy: %q, %v", check, err)
	}
	inCopy := map[int64]bool{}
	rows, err := db.Query(`SELECT id FROM rota_jobs WHERE type = 'backup.load'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		inCopy[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var before, lost []int64
	prod.mu.Lock()
	for id, at := range prod.at {
		if at.Before(began) {
			before = append(before, id)
			if !inCopy[id] {
				lost = append(lost, id)
			}
		}
	}
	prod.mu.Unlock()
	if len(before) == 0 {
		t.Fatal("no add was acknowledged before the backup began")
	}
	if len(lost) > 0 {
		t.Errorf("%d of the %d jobs acknowledged before the backup began are not in the copy, e.g. job %d", len(lost), len(before), lost[0])
	}
	var filled int
	if err := db.QueryRow(`SELECT count(*) FROM rota_jobs WHERE type = 'backup.fill'`).Scan(&filled); err != nil || filled != 60_000 {
		t.Errorf("the copy holds %d of the 60000 jobs added before the server started (%v)", filled, err)
	}

	// A restore is serving the copy.
	restored := serveAt(t, "127.0.0.1:0", t.TempDir(), "--store", copyPath)
	if j := restored.get(t, before[0]); j.ID != before[0] || j.Type != "backup.load" {
		t.Errorf("the server on the copy has %+v for job %d", j, before[0])
	}
	restored.add(t, "backup.after")

	// Refusals: exit status 2, naming what was wrong, and nothing written.
	again := srv.run(t, "", "backup", "--data", data, copyPath)
	if again.code != 2 || !strings.Contains(again.stderr, copyPath) || !strings.Contains(again.stderr, "exists") {
		t.Errorf("a backup onto an existing file: %v", again)
	}
	empty := t.TempDir()
	none := srv.run(t, "", "backup", "--data", empty, filepath.Join(empty, "b.db"))
	if none.code != 2 || !strings.Contains(none.stderr, filepath.Join(empty, "rota.db")) {
		t.Errorf("a backup of a missing database: %v", none)
	}
	if _, err := os.Stat(filepath.Join(empty, "b.db")); err == nil {
		t.Error("a refused backup wrote its file")
	}
	if pg := srv.run(t, "", "backup", "--store", "postgres://rota@127.0.0.1:1/rota", filepath.Join(empty, "b.db")); pg.code != 2 || !strings.Contains(pg.stderr, "back up PostgreSQL with its own tools") {
		t.Errorf("a backup of a PostgreSQL store: %v", pg)
	}
	t.Logf("backup of %d jobs under load took %v; %d adds acknowledged meanwhile, longest gap %v; %d of %d earlier jobs in the copy",
		filled+len(inCopy), ended.Sub(began), len(during), stall, len(before)-len(lost), len(before))
	fmt.Printf("backup: %d jobs copied in %v under load (%s); longest gap between adds %v; lost = %d\n", filled+len(inCopy), ended.Sub(began).Round(time.Millisecond), strings.TrimSpace(res.stdout), stall.Round(time.Millisecond), len(lost))
}

// fillSQLite adds n jobs to the SQLite database at path, before a server
// serves it, so that a copy of it takes a while.
func fillSQLite(t *testing.T, path string, n int) {
	t.Helper()
	st, err := sqlite.Open(path, sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pad := strings.Repeat("x", 400)
	batch := make([]store.AddParams, 0, 1000)
	for i := range n {
		batch = append(batch, store.AddParams{Type: "backup.fill", RunAt: time.Now().Add(24 * time.Hour), Data: []byte(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, pad))})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := st.Add(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}
