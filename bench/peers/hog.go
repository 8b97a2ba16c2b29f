package main

// The CPU hog of compare's -hog: a busy loop on one core, beside a steady
// run, so that its latency is measured on a busy machine as well as an
// idle one.

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// hogMain spins on one core until it is killed: one thread of this
// process, pinned to the last CPU (-cpu), so that it takes that core and
// no other, whatever the scheduler would do.
func hogMain(args []string) error {
	fs := flag.NewFlagSet("hog", flag.ContinueOnError)
	cpu := fs.Int("cpu", runtime.NumCPU()-1, "the CPU to spin on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpu < 0 || *cpu >= runtime.NumCPU() {
		return fmt.Errorf("-cpu %d: this machine has CPUs 0 to %d", *cpu, runtime.NumCPU()-1)
	}
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	if err := pinTo(*cpu); err != nil {
		return fmt.Errorf("pinning to CPU %d: %w", *cpu, err)
	}
	x := uint64(1)
	for {
		// xorshift: work the compiler cannot drop.
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if x == 0 {
			fmt.Println(x)
		}
	}
}

// pinTo sets the calling thread's CPU affinity to cpu alone.
func pinTo(cpu int) error {
	var mask [16]uint64 // 1024 CPUs
	mask[cpu/64] |= 1 << (cpu % 64)
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
	if errno != 0 {
		return errno
	}
	return nil
}

// startHog starts the hog as a child of self; the function it returns
// stops it and gives the share of one core it used while it ran (near 1
// when it got its core).
func startHog(self string) (stop func() (float64, error), err error) {
	cmd := exec.Command(self, "hog")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	// The hog dies with the harness, however the harness ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	return func() (float64, error) {
		wall := time.Since(t0)
		cmd.Process.Kill()
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ProcessState.Exited() {
			return 0, fmt.Errorf("it exited early: %w", err) // not killed: it failed
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return cpu.Seconds() / wall.Seconds(), nil
	}, nil
}
