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
	raw, err := os.ReadFile(filepath.Join(s.Data, "postmaster.pid"))
	if err != nil {
		t.Fatalf("kill: %v", err)
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("kill: postmaster.pid: %v", err)
	}
	pids := append([]int{pm}, children(pm)...)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
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
