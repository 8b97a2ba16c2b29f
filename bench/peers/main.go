// Command peers runs rota side by side with its peers, River (on PostgreSQL
// and on SQLite) and Asynq (on Redis), on the workloads of `rota bench`:
// a drain of N pre-added no-op jobs, and enqueue→start latency at a steady
// rate. `peers compare` runs them all, interleaved, several rounds, and
// prints medians; the other commands are the peers' own programs, one run
// each, printing one JSON line (as `rota bench --json` does).
//
// It is a module of its own so that rota's module does not depend on River
// or Asynq.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

const usage = `usage: peers COMMAND [flags]

  compare      rota and its peers interleaved, several rounds; medians in a table
  summarize    the table of a compare's output directory again
  river-pg     one River run on PostgreSQL (one JSON line)
  river-sqlite one River run on SQLite (one JSON line)
  asynq        one Asynq run on Redis (one JSON line)
  client-drain one drain of a client's worker through rota serve (one JSON line)
  hog          a busy loop on one core, until killed (compare -hog)

"peers COMMAND -h" lists a command's flags. See README.md.
`

func main() {
	os.Exit(run(os.Args[1:]))
}

// run dispatches a command and returns the process's exit code.
func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	cmds := map[string]func([]string) error{
		"compare":      compareMain,
		"summarize":    summarizeMain,
		"river-pg":     riverPGMain,
		"river-sqlite": riverSQLiteMain,
		"asynq":        asynqMain,
		"hog":          hogMain,
		"client-drain": clientDrainMain,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			fmt.Fprint(os.Stdout, usage)
			return 0
		}
		fmt.Fprintf(os.Stderr, "peers: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err := cmd(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "peers %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
