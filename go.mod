module github.com/rotajobs/rota

go 1.25

require (
	github.com/gobwas/glob v1.1.0
	github.com/mattn/go-sqlite3 v1.14.52
	github.com/spf13/cobra v1.10.2
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)
