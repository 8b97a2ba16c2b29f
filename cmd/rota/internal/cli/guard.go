package cli

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
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
//
// A program runs from its start until the worker has told the guard of
// its group, so a worker killed in between would leave what the program
// started behind. Programs therefore carry the guard's token in their
// environment (guardEnv), which what they start inherits, and the guard
// also kills, last, every process that carries it (Linux, from /proc).
type guard struct {
	mu    sync.Mutex
	in    io.WriteCloser
	cmd   *exec.Cmd
	token string
	fail  bool // a write failed: the guard is gone
}

// guardEnv names the environment variable that marks a worker's programs
// and what they start with the token of the worker's guard.
const guardEnv = "ROTA_WORK_GUARD"

// env is the environment entry that marks a program of this guard's
// worker; empty without a guard.
func (g *guard) env() string {
	if g == nil {
		return ""
	}
	return guardEnv + "=" + g.token
}

// startGuard starts the guard process, the rota binary itself.
func startGuard() (*guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start the program guard: %w", err)
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("start the program guard: %w", err)
	}
	token := hex.EncodeToString(b[:])
	cmd := exec.Command(exe, guardCommandName, token)
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
	return &guard{in: in, cmd: cmd, token: token}, nil
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
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// SIGINT and SIGTERM are caught by Main and end nothing here:
			// the guard ends when its stdin does.
			runGuard(cmd.InOrStdin(), args[0])
			return nil
		},
	}
}

// runGuard reads "+PGID" and "-PGID" lines until in ends, then kills the
// groups added and not removed, and then every process marked with token.
func runGuard(in io.Reader, token string) {
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
	killMarked(guardEnv + "=" + token)
}

// killMarked kills every process whose environment holds the entry mark,
// with its process group, a few times over, so that a process forking as
// it is killed does not leave a child behind. Without /proc it does
// nothing.
func killMarked(mark string) {
	want := []byte(mark)
	self := os.Getpid()
	for range 3 {
		dirs, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		found := false
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
			if err != nil || !slices.ContainsFunc(bytes.Split(env, []byte{0}), func(e []byte) bool { return bytes.Equal(e, want) }) {
				continue
			}
			found = true
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
				syscall.Kill(-pgid, syscall.SIGKILL)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if !found {
			return
		}
	}
}
