//go:build linux

package cli

import (
	"syscall"
	"unsafe"
)

// programAttr starts a job's program in its own process group (so that a
// stop reaches whatever it started) and has the kernel kill it if this
// worker dies first, even by SIGKILL, so that the program does not run on
// as an orphan while its job runs again elsewhere. (The kernel signals the
// program itself; what it started is killed with its group by the
// worker's own exit paths, by its guard if the worker dies outright, and
// when the program exits.)
func programAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// pPID is waitid's P_PID: wait for the one process given.
const pPID = 1

// waitExited waits until the child pid has exited, without reaping it.
// Until it is reaped, its pid, and so its process group's id, cannot be
// reused: the group can be signalled without the risk of hitting another.
func waitExited(pid int) error {
	var info [128]byte // a siginfo_t, which the kernel fills in
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}
