//go:build linux

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// TestChaosDiskFull fills the SQLite file's disk from the server's point
// of view, under load, and frees it: the server's file size limit
// (RLIMIT_FSIZE, set from outside with prlimit) drops to nothing, so every
// write to its database and log fails as on a full disk, then comes back.
// While the disk is full, adds and finishes are refused with an error,
// never acknowledged and lost; afterwards the server serves again without
// a restart, and every acknowledged add completes.
func TestChaosDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a disk for a while")
	}
	t.Parallel()
	s := startServer(t)
	pid := s.cmd.Process.Pid
	w := s.start(t, "work", "--type", "full", "--concurrency", "4", "--", "true")
	defer w.signal(t, 15)

	rs, err := remote.New(s.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()

	ctx, stopProducers := context.WithCancel(context.Background())
	var mu sync.Mutex
	ledger := map[int64]bool{}
	refused := 0
	var firstRefusal error
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				res, err := rs.Add(context.Background(), []store.AddParams{{Type: "full", Data: []byte(fmt.Sprintf(`{"p":%d,"i":%d}`, p, i))}})
				mu.Lock()
				if err == nil {
					ledger[res[0].Job.ID] = true
				} else {
					refused++
					if firstRefusal == nil {
						firstRefusal = err
					}
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	limit := func(n uint64) {
		t.Helper()
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: n, Max: unix.RLIM_INFINITY}, nil); err != nil {
			t.Skipf("cannot set the server's file size limit: %v", err)
		}
	}
	time.Sleep(time.Second)
	count := func() (int, int) { mu.Lock(); defer mu.Unlock(); return len(ledger), refused }
	before, refusedBefore := count()
	limit(0) // the disk is full
	time.Sleep(2 * time.Second)
	during, refusedDuring := count()
	limit(unix.RLIM_INFINITY) // and freed
	time.Sleep(2 * time.Second)
	stopProducers()
	wg.Wait()
	after, _ := count()
	if refusedDuring == refusedBefore {
		t.Errorf("no add was refused while the disk was full")
	} else if !errors.Is(firstRefusal, store.ErrUnavailable) {
		t.Errorf("an add on a full disk: %v, want a 503 (store unavailable, try again)", firstRefusal)
	}
	if after == during {
		t.Errorf("no add was acknowledged after the disk was freed")
	}
	if s.cmd.ProcessState != nil {
		t.Fatalf("the server exited on a full disk:\n%s", s.log)
	}

	ids := make([]int64, 0, len(ledger))
	for id := range ledger {
		ids = append(ids, id)
	}
	missing, unfinished := checkLedger(t, rs, ids, 60*time.Second)
	fmt.Printf("chaos: disk full for 2s under load; %d jobs acknowledged (%d before, %d while full, %d after it was freed), %d adds refused while full; lost = %d, unfinished = %d\n",
		len(ids), before, during-before, after-during, refusedDuring-refusedBefore, len(missing), len(unfinished))
}
