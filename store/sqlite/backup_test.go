package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// TestBackup copies a store while a writer adds jobs: the copy opens as a
// store and holds every job added before the backup began, and adds went
// on during the copy. Then the refusals: an existing destination (left as
// it was), a missing database, a file that is not a rota database.
func TestBackup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	batch := make([]store.AddParams, 500)
	for i := range batch {
		batch[i] = store.AddParams{Type: "fill", Data: []byte(`{"pad":"` + string(make([]byte, 0)) + `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)}
	}
	for range 20 {
		if _, err := st.Add(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	var last atomic.Int64 // the last add acknowledged
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var during atomic.Int64
	var backingUp atomic.Bool
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := st.Add(ctx, []store.AddParams{{Type: "live"}})
			if err != nil {
				t.Error(err)
				return
			}
			last.Store(res[0].Job.ID)
			if backingUp.Load() {
				during.Add(1)
			}
		}
	})
	for last.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	before := last.Load()
	dst := filepath.Join(t.TempDir(), "copy.db")
	backingUp.Store(true)
	info, err := st.Backup(ctx, dst)
	backingUp.Store(false)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if info.Path != dst || info.Jobs < 10_000 || info.Bytes == 0 {
		t.Errorf("Backup says %+v", info)
	}
	t.Logf("backup of %d jobs in %v; %d adds meanwhile", info.Jobs, info.Duration, during.Load())

	cp, err := sqlite.Open(dst, sqlite.Config{})
	if err != nil {
		t.Fatalf("opening the copy: %v", err)
	}
	defer cp.Close()
	jobs, err := cp.Get(ctx, []int64{1, before})
	if err != nil || jobs[0].Type != "fill" || jobs[1].ID != before || jobs[1].Type != "live" {
		t.Errorf("the copy has %+v (%v); want job 1 and job %d, added before the backup", jobs, err, before)
	}
	cdb, err := cp.DB()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := cdb.QueryRow(`SELECT count(*) FROM rota_jobs`).Scan(&n); err != nil || n != info.Jobs {
		t.Errorf("the copy holds %d jobs (%v); Backup said %d", n, err, info.Jobs)
	}

	// Refusals.
	if err := os.WriteFile(filepath.Join(dir, "taken.db"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Backup(ctx, filepath.Join(dir, "taken.db")); !errors.Is(err, sqlite.ErrBackupExists) || !errors.Is(err, fs.ErrExist) {
		t.Errorf("a backup onto an existing file: %v", err)
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "taken.db")); string(raw) != "mine" {
		t.Errorf("a refused backup changed the existing file: %q", raw)
	}
	if _, err := sqlite.Backup(ctx, filepath.Join(dir, "missing.db"), filepath.Join(dir, "b1.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a backup of a missing database: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("a backup of a missing database created it")
	}
	if _, err := sqlite.Backup(ctx, filepath.Join(dir, "taken.db"), filepath.Join(dir, "b2.db")); err == nil {
		t.Error("a backup of a file that is not a SQLite database succeeded")
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite3", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := sqlite.Backup(ctx, other, filepath.Join(dir, "b3.db")); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a backup of a SQLite file that is not a rota database: %v", err)
	}
	for _, name := range []string{"b1.db", "b2.db", "b3.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("a refused backup left %s", name)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(left) > 0 {
		t.Errorf("refused backups left temporary files: %v", left)
	}
}
