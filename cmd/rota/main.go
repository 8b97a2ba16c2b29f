// Command rota is the rota job system's binary. The commands live in
// cmd/rota/internal/cli; this file only runs them.
package main

import (
	"os"
	"runtime/debug"

	"github.com/rotajobs/rota/cmd/rota/internal/cli"
)

func main() {
	// A job server keeps a small live heap and allocates fast, so Go's
	// default (collect whenever the heap doubles) collects many times a
	// second under load, scanning every worker goroutine's stack each
	// time. 400 trades some tens of megabytes for a quarter of the
	// collections (docs/benchmarks.md). GOGC in the environment still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(cli.Main(os.Args[1:]))
}
