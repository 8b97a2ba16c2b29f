//go:build linux

package cli

import "syscall"

// programAttr starts a job's program in its own process group (so that a
// stop reaches whatever it started) and has the kernel kill it if this
// worker dies first, even by SIGKILL, so that the program does not run on
// as an orphan while its job runs again elsewhere. (The kernel signals the
// program itself; what it started is stopped by the group signals of the
// worker's own exit paths.)
func programAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
