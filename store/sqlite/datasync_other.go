//go:build !linux

package sqlite

import "os"

// datasync flushes f to stable storage (on macOS, os.File.Sync uses
// F_FULLFSYNC, as SQLite's fullfsync does).
func datasync(f *os.File) error {
	return f.Sync()
}
