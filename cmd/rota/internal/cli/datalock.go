package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rotajobs/rota/store"
)

// dataLock is a held lock on a SQLite database: one server at a time
// serves it, because a second process would run its own writer, lease
// monitor and change feed beside the first's, unknown to it (its workers
// would not wake on the other's adds, nor its watchers see them).
type dataLock struct{ f *os.File }

// sqlitePath is the SQLite file a store spec (or, when it is empty, the
// data directory) names; "" for another store.
func sqlitePath(spec, dataDir string) string {
	if spec == "" {
		return filepath.Join(dataDir, "rota.db")
	}
	if store.SchemeOf(spec) != "sqlite" {
		return ""
	}
	return strings.TrimPrefix(spec, "sqlite:")
}

// lockDatabase takes the lock of the SQLite database at path: the file
// path+".lock", locked with flock, which the kernel releases when the
// process ends however it ends (SIGKILL included), so a stale file never
// keeps a server out. The file holds the holder's pid, for the message
// of the one refused.
func lockDatabase(path string) (*dataLock, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the database %s: %w", path, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the database %s (%s): %w", path, name, err)
	}
	if held {
		raw, _ := os.ReadFile(name)
		f.Close()
		who := "another rota process"
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid > 0 {
			who += fmt.Sprintf(" (pid %d)", pid)
		}
		return nil, fmt.Errorf("%s is serving %s (it holds %s); stop it first, or give this one another --data directory", who, path, name)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dataLock{f: f}, nil
}

// release lets another server take the database. The file stays: removing
// it could let two servers lock two different files of one name.
func (l *dataLock) release() {
	if l != nil {
		l.f.Close()
	}
}
