package sqlite

import (
	"os"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back
// (fdatasync), as SQLite does for its log on Linux.
func datasync(f *os.File) error {
	return syscall.Fdatasync(int(f.Fd()))
}
