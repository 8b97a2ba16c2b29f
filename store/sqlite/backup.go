package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/rotajobs/rota/internal/rules/check"
)

// BackupInfo describes a backup Backup made.
type BackupInfo struct {
	Path     string        // the copy
	Bytes    int64         // its size
	Jobs     int64         // the jobs in it, in every state
	Duration time.Duration // how long the copy took
}

// ErrBackupExists is Backup's error when its destination exists: a
// backup never overwrites a file. It matches fs.ErrExist.
var ErrBackupExists = fmt.Errorf("sqlite: backup: destination %w", fs.ErrExist)

// Backup writes a consistent copy of the rota database at path to dst,
// while servers and programs keep using it: it reads the database in one
// read transaction (VACUUM INTO), which in SQLite's WAL mode never blocks
// the writer, so adds and finishes go on during the copy and the copy holds
// exactly what was committed when it began. Only the write-ahead log grows
// meanwhile, because checkpoints cannot move past the copy's snapshot;
// the next checkpoint after the copy catches up.
//
// The copy is written next to dst under a temporary name, synced to disk
// and renamed to dst, so that dst is either a whole backup or absent, and
// it is its owner's alone (0600), as the database is. A restore is
// opening the copy: `rota serve --store dst`, or moving it to the data
// directory's rota.db while no server runs. Backup refuses a dst that
// exists (ErrBackupExists) and a path that holds no rota database.
func Backup(ctx context.Context, path, dst string) (BackupInfo, error) {
	if errNeedsCgo != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup %s: %w", path, errNeedsCgo)
	}
	if dst == "" {
		return BackupInfo{}, check.Invalidf("sqlite: backup: the destination path is empty")
	}
	if _, err := os.Lstat(dst); err == nil {
		return BackupInfo{}, fmt.Errorf("%w: %s", ErrBackupExists, dst)
	}
	// SQLite would create a missing database; a backup of nothing is a
	// mistake in the path.
	if _, err := os.Stat(path); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	start := time.Now()
	src, err := sql.Open(driverName, dsn(path, url.Values{"_txlock": {"deferred"}}, 5*time.Second))
	if err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup %s: %w", path, err)
	}
	defer src.Close()
	src.SetMaxOpenConns(1)
	var tables int
	if err := src.QueryRowContext(ctx, stmt("backup_tables")).Scan(&tables); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup %s: %w", path, err)
	}
	if tables != 2 {
		return BackupInfo{}, check.Invalidf("sqlite: backup: %s is not a rota database (it has no rota_jobs and rota_types tables)", path)
	}

	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	tmpName := tmp.Name()
	tmp.Close()
	// VACUUM INTO wants a file that does not exist or is empty; the empty
	// one made here reserves the name with the owner-only mode.
	done := false
	defer func() {
		if !done {
			os.Remove(tmpName)
		}
	}()
	// One statement, one read transaction: the snapshot of its start.
	if _, err := src.ExecContext(ctx, stmt("backup_into"), tmpName); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup %s: %w", path, err)
	}
	if err := syncFile(tmpName); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	info := BackupInfo{Path: dst}
	if info.Jobs, err = countJobs(ctx, tmpName); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: the copy: %w", err)
	}
	// Link, not rename: it fails when dst appeared meanwhile, instead of
	// replacing it.
	if err := os.Link(tmpName, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return BackupInfo{}, fmt.Errorf("%w: %s", ErrBackupExists, dst)
		}
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	os.Remove(tmpName)
	done = true
	if err := syncFile(filepath.Dir(dst)); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	if st, err := os.Stat(dst); err == nil {
		info.Bytes = st.Size()
	}
	info.Duration = time.Since(start)
	return info, nil
}

// Backup writes a consistent copy of the store's database to dst while
// the store stays in use; see the package function Backup.
func (s *Store) Backup(ctx context.Context, dst string) (BackupInfo, error) {
	return Backup(ctx, s.path, dst)
}

func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// countJobs counts the jobs of the database at path, opened read-only.
func countJobs(ctx context.Context, path string) (int64, error) {
	db, err := sql.Open(driverName, "file:"+path+"?mode=ro&_query_only=1")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRowContext(ctx, stmt("count_jobs")).Scan(&n)
	return n, err
}
