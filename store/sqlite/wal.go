package sqlite

import (
	"fmt"
	"os"
)

// openWAL opens the database's write-ahead log for the syncer. SQLite
// creates the file when a connection first opens the database in WAL mode
// and keeps it (the same file, truncated at most) while any connection is
// open; creating it here if it is missing is harmless, since an empty log
// is a valid one.
func openWAL(path string) (*os.File, error) {
	f, err := os.OpenFile(path+"-wal", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s-wal: %w", path, err)
	}
	return f, nil
}

// syncWAL makes every transaction committed so far durable. fsync works
// on the file, not the descriptor, so it covers what the writer
// connection wrote through its own. Should the log ever be replaced by a
// new file (SQLite only deletes it when the last connection closes), the
// new one is opened and synced instead.
func (s *Store) syncWAL() error {
	held, err := s.wal.Stat()
	if err != nil {
		return err
	}
	if now, err := os.Stat(s.path + "-wal"); err == nil && !os.SameFile(held, now) {
		f, err := openWAL(s.path)
		if err != nil {
			return err
		}
		s.wal.Close()
		s.wal = f
	}
	return datasync(s.wal)
}
