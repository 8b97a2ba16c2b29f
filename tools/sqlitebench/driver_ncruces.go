//go:build sqlitebench_ncruces

package main

// Since v0.35 ncruces/go-sqlite3 no longer runs a .wasm blob in wazero: the
// SQLite wasm build is translated to Go with wasm2go (module
// github.com/ncruces/go-sqlite3-wasm). The github.com/ncruces/go-sqlite3/embed
// package still exists but is a deprecated no-op that prints a warning from
// init, so it is not imported here.
import _ "github.com/ncruces/go-sqlite3/driver"

func init() {
	thisDriver = &driverSpec{
		Name:    "ncruces",
		SQLName: "sqlite3",
		Module:  "github.com/ncruces/go-sqlite3",
		Kind:    "pure Go, wasm2go-translated wasm",
		DSN: func(path string, writer bool) string {
			dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)"
			if writer {
				dsn += "&_txlock=immediate"
			}
			return dsn
		},
	}
}
