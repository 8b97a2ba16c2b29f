//go:build cgo

package sqlite

import (
	"errors"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// errNeedsCgo is nil where the SQLite driver is compiled in.
var errNeedsCgo error

// isDiskFull reports whether err is SQLite's SQLITE_FULL, or an I/O error
// of ENOSPC, EDQUOT or EFBIG (the disk, a quota or the file size limit).
func isDiskFull(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrFull || se.Code == sqlite3.ErrIoErr &&
		(se.SystemErrno == syscall.ENOSPC || se.SystemErrno == syscall.EDQUOT || se.SystemErrno == syscall.EFBIG))
}

// isConstraint reports whether err is a violated constraint.
func isConstraint(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrConstraint
}
