package bench

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"time"
)

// serverCPUSince returns a function giving the CPU time the PostgreSQL
// server that dsn names has used since now (all its processes: backends,
// WAL writer, checkpointer, autovacuum), when it runs on this machine and
// its processes are readable here; otherwise the function returns 0. On
// two cores shared by client and server, this and the client's CPU per job
// add up to what a drain costs the machine.
func serverCPUSince(ctx context.Context, dsn string) func() time.Duration {
	pm := postmasterPID(ctx, dsn)
	if pm == 0 {
		return func() time.Duration { return 0 }
	}
	c0, ok := serverCPU(pm)
	return func() time.Duration {
		c1, ok1 := serverCPU(pm)
		if !ok || !ok1 {
			return 0
		}
		return c1 - c0
	}
}

// postmasterPID is the parent of a backend's process, or 0.
func postmasterPID(ctx context.Context, dsn string) int {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return 0
	}
	defer db.Close()
	var pid int
	if err := db.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return 0
	}
	f := procStat(pid)
	if len(f) < 4 || f[1] != "postgres" {
		return 0 // not on this machine (or not readable)
	}
	pm, _ := strconv.Atoi(f[3])
	return pm
}

// serverCPU is the CPU time of the postmaster, its exited children (which
// it has reaped) and its live children.
func serverCPU(pm int) (time.Duration, bool) {
	f := procStat(pm)
	if len(f) < 17 || f[1] != "postgres" {
		return 0, false
	}
	ticks := 0
	for _, i := range []int{13, 14, 15, 16} { // utime stime cutime cstime
		n, _ := strconv.Atoi(f[i])
		ticks += n
	}
	kids, err := os.ReadFile("/proc/" + strconv.Itoa(pm) + "/task/" + strconv.Itoa(pm) + "/children")
	if err != nil {
		return 0, false
	}
	for _, k := range strings.Fields(string(kids)) {
		pid, _ := strconv.Atoi(k)
		if c := procStat(pid); len(c) > 14 {
			u, _ := strconv.Atoi(c[13])
			s, _ := strconv.Atoi(c[14])
			ticks += u + s
		}
	}
	return time.Duration(ticks) * time.Second / 100, true // USER_HZ is 100 on Linux
}

// procStat returns the fields of /proc/PID/stat, counted from 0 (so field
// n of proc(5) is at n-1), the command name without its parentheses.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return nil
	}
	return append([]string{strings.TrimSpace(s[:open]), s[open+1 : end]}, strings.Fields(s[end+1:])...)
}
