package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rotajobs/rota/store"
)

// TestNewDatabaseIsOwnersOnly: a new database, and the log files SQLite
// makes beside it, are readable by their owner only, whatever the umask
// lets through.
func TestNewDatabaseIsOwnersOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "rota.db")
	s := openAt(t, path)
	if _, err := s.Add(context.Background(), []store.AddParams{{Type: "t"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want -rw-------", filepath.Base(name), fi.Mode().Perm())
		}
	}
}
