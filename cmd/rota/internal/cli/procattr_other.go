//go:build !linux

package cli

import (
	"errors"
	"syscall"
)

// programAttr starts a job's program in its own process group, so that a
// stop reaches whatever it started. (Only Linux has a parent-death signal.)
func programAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited would wait until the child pid has exited without reaping it;
// elsewhere than Linux, the program's group is only signalled before it is
// reaped, and after it was stopped.
func waitExited(pid int) error { return errors.ErrUnsupported }
