//go:build unix

package pgtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Kill ends the server as a machine's loss would: SIGKILL to the
// postmaster and every process it started, at once, with no shutdown and
// no WAL flushed beyond what commits already flushed. The test's end
// still removes its files.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	pm := s.signalAll(t, syscall.SIGKILL)
	// Gone when the postmaster's pid is; its children, orphaned and
	// killed, follow.
	for range 500 {
		if syscall.Kill(pm, 0) != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("kill: postmaster %d still runs", pm)
}

// Freeze stops the server as a machine that hangs, or a network that
// drops every packet, would: SIGSTOP to the postmaster and every process
// it started. No connection is closed or reset; clients' statements and
// connection attempts wait unanswered. The test's end kills it.
func (s *Server) Freeze(t testing.TB) {
	t.Helper()
	pm := s.signalAll(t, syscall.SIGSTOP)
	t.Cleanup(func() {
		// Children first: once the postmaster is gone they are init's.
		for _, pid := range children(pm) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		syscall.Kill(pm, syscall.SIGKILL)
	})
}

// signalAll sends sig to the postmaster and its children, and returns the
// postmaster's pid.
func (s *Server) signalAll(t testing.TB, sig syscall.Signal) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.Data, "postmaster.pid"))
	if err != nil {
		t.Fatalf("signal the server: %v", err)
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("signal the server: postmaster.pid: %v", err)
	}
	for _, pid := range append([]int{pm}, children(pm)...) {
		syscall.Kill(pid, sig)
	}
	return pm
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		raw, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so read after ')'.
		i := strings.LastIndexByte(string(raw), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			out = append(out, child)
		}
	}
	return out
}
