//go:build !cgo

package sqlite

import "errors"

// errNeedsCgo is Open's error in a build without cgo: the SQLite driver
// is C. The package still compiles, so that a program that links it (for
// store.Open's "sqlite:" scheme) builds, and says why at Open.
var errNeedsCgo = errors.New("the SQLite store needs cgo (CGO_ENABLED=1 and a C compiler); use store/postgres or remote without it")

func isDiskFull(error) bool   { return false }
func isConstraint(error) bool { return false }
