package e2e_test

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// serveOn starts `rota serve` on addr with data directory dir and waits
// until it serves; the caller stops it.
func serveOn(t *testing.T, dir, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--http", addr, "--data", dir)
	cmd.Env = cleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	up := make(chan bool, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if servingRE.MatchString(sc.Text()) {
				select {
				case up <- true:
				default:
				}
			}
		}
		close(up)
	}()
	select {
	case ok := <-up:
		if !ok {
			t.Fatalf("rota serve exited before serving:\n%s", log.String())
		}
	case <-time.After(commandTimeout):
		t.Fatal("rota serve did not start")
	}
	return cmd
}

// TestRecurringAcrossKill: a recurring job on SQLite keeps its phase
// across a SIGKILL of the server and a restart, and completes at most once
// per slot; the slots missed while the server was down run once (the
// default policy), and the job then keeps to its schedule.
func TestRecurringAcrossKill(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	srv := serveOn(t, dir, addr)
	t.Cleanup(func() { stop(t, srv, syscall.SIGTERM) })

	rs, err := remote.New("http://"+addr, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	const interval = 2 * time.Second
	t0 := time.Now().Add(time.Second).UTC().Truncate(time.Second)
	added, err := rs.Add(t.Context(), []store.AddParams{{Type: "tick", Schedule: "SCHEDULED, +2 SECONDS", RunAt: t0}})
	if err != nil {
		t.Fatal(err)
	}
	id := added[0].Job.ID

	// run is a worker loop: it records the slot of every run whose finish
	// the server acknowledged.
	var slots []time.Time
	run := func(until time.Time) {
		for time.Now().Before(until) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			res, err := rs.Accept(ctx, store.AcceptParams{Types: []string{"tick"}, LeaseTimeout: time.Second})
			cancel()
			if err != nil || len(res.Jobs) == 0 {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			j := res.Jobs[0]
			errs, err := rs.Finish(t.Context(), []store.FinishParams{{Lease: j.Lease(), As: store.Complete}})
			if err == nil && errs[0] == nil {
				slots = append(slots, j.Slot)
			}
		}
	}
	run(t0.Add(3*interval + interval/2))
	before := len(slots)
	if before < 2 {
		t.Fatalf("only %d runs before the kill, want at least 2: %v", before, slots)
	}

	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	time.Sleep(2 * interval) // slots pass while the server is down
	restarted := time.Now()
	srv = serveOn(t, dir, addr)
	run(restarted.Add(3*interval + interval/2))

	for i, s := range slots {
		if s.Sub(t0)%interval != 0 {
			t.Errorf("run %d stood for slot %v, off the phase of %v every %v", i, s, t0, interval)
		}
		if i > 0 && !s.After(slots[i-1]) {
			t.Errorf("run %d stood for slot %v, not after the previous run's %v: two runs for one slot", i, s, slots[i-1])
		}
	}
	late := 0
	for _, s := range slots[before:] {
		if s.Before(restarted.Add(-interval)) {
			late++
		}
	}
	if late > 1 {
		t.Errorf("%d runs after the restart stood for slots missed while the server was down, want at most 1 (policy once): %v", late, slots[before:])
	}
	if len(slots)-before < 2 {
		t.Errorf("only %d runs after the restart, want the schedule to go on: %v", len(slots)-before, slots[before:])
	}
	jobs, err := rs.Get(t.Context(), []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	if j := jobs[0]; j.State != store.Pending || j.Slot.Sub(t0)%interval != 0 {
		t.Errorf("at the end the job is %v with slot %v, want pending on the phase of %v", j.State, j.Slot, t0)
	}
}
