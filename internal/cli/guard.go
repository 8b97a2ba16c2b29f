package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
)

// guardCommandName is the hidden command "rota work" starts its guard
// with.
const guardCommandName = "__work-guard"

// A guard is a helper process that "rota work" starts to kill its
// programs' process groups should the worker itself die without doing so
// (SIGKILL, a crash): the kernel's parent-death signal reaches each program
// but not what it started. The worker tells the guard, on the guard's
// stdin, each group it starts ("+PGID") and each it has killed and is
// about to reap ("-PGID"); when that pipe closes, as it does however the
// worker ends, the guard kills the groups it still knows of, and exits.
type guard struct {
	mu   sync.Mutex
	in   io.WriteCloser
	cmd  *exec.Cmd
	fail bool // a write failed: the guard is gone
}

// startGuard starts the guard process, the rota binary itself.
func startGuard() (*guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start the program guard: %w", err)
	}
	cmd := exec.Command(exe, guardCommandName)
	// Its own group, so that neither a terminal's Ctrl-C (meant for the
	// worker) nor a signal to the worker's group ends it early.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe() // close-on-exec here: programs do not hold it open
	if err != nil {
		return nil, fmt.Errorf("start the program guard: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the program guard: %w", err)
	}
	return &guard{in: in, cmd: cmd}, nil
}

func (g *guard) send(op byte, pgid int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail {
		return
	}
	if _, err := g.in.Write(append(strconv.AppendInt([]byte{op}, int64(pgid), 10), '\n')); err != nil {
		g.fail = true // the worker's own exit paths still kill the groups
	}
}

// add tells the guard of a new program's group.
func (g *guard) add(pgid int) { g.send('+', pgid) }

// remove tells the guard that a group was killed and its leader is about
// to be reaped, after which its id may be reused.
func (g *guard) remove(pgid int) { g.send('-', pgid) }

// close ends the guard, once the worker has killed all its groups itself.
func (g *guard) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.in.Close()
	g.mu.Unlock()
	g.cmd.Wait()
}

func guardCommand() *cobra.Command {
	return &cobra.Command{
		Use:    guardCommandName,
		Short:  "Kill a worker's program groups when the worker ends (started by rota work)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// SIGINT and SIGTERM are caught by Main and end nothing here:
			// the guard ends when its stdin does.
			runGuard(cmd.InOrStdin())
			return nil
		},
	}
}

// runGuard reads "+PGID" and "-PGID" lines until in ends, then kills the
// groups added and not removed.
func runGuard(in io.Reader) {
	groups := map[int]struct{}{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(string(line[1:]))
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = struct{}{}
		case '-':
			delete(groups, pgid)
		}
	}
	for pgid := range groups {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
