// Command rota is the rota job system's binary. The commands live in
// internal/cli; this file only runs them.
package main

import (
	"os"

	"github.com/rotajobs/rota/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
