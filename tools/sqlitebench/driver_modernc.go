//go:build sqlitebench_modernc

package main

import _ "modernc.org/sqlite"

func init() {
	thisDriver = &driverSpec{
		Name:    "modernc",
		SQLName: "sqlite",
		Module:  "modernc.org/sqlite",
		Kind:    "pure Go, ccgo-transpiled C",
		DSN: func(path string, writer bool) string {
			dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)"
			if writer {
				dsn += "&_txlock=immediate"
			}
			return dsn
		},
	}
}
