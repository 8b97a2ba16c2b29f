//go:build !linux

package cli

import "syscall"

// programAttr starts a job's program in its own process group, so that a
// stop reaches whatever it started. (Only Linux has a parent-death signal.)
func programAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
