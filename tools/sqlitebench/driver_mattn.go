//go:build sqlitebench_mattn

package main

import _ "github.com/mattn/go-sqlite3"

func init() {
	thisDriver = &driverSpec{
		Name:    "mattn",
		SQLName: "sqlite3",
		Module:  "github.com/mattn/go-sqlite3",
		Kind:    "cgo",
		DSN: func(path string, writer bool) string {
			dsn := "file:" + path + "?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=5000"
			if writer {
				dsn += "&_txlock=immediate"
			}
			return dsn
		},
	}
}
