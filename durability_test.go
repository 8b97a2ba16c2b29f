package rota_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

const childEnv = "ROTA_DURABILITY_CHILD_DB"

// TestDurabilityChild is the process that TestDurabilityAfterSIGKILL
// kills. It adds jobs in batches and completes them, and prints a line for
// every add and finish only after the call returned: "A id seq" and "F id".
func TestDurabilityChild(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("run by TestDurabilityAfterSIGKILL")
	}
	c, err := rota.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...) // unbuffered: one write per line
		mu.Unlock()
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for p := range 4 { // producers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := p * 1_000_000; ; {
				n := 1 + rand.IntN(20)
				batch := make([]rota.AddParams, n)
				for i := range batch {
					seq++
					batch[i] = rota.AddParams{Type: "durable", Data: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq))}
				}
				res, err := c.AddMany(ctx, batch)
				if err != nil {
					fmt.Fprintln(os.Stderr, "add:", err)
					os.Exit(2)
				}
				for i, r := range res {
					say("A %d %d", r.Job.ID, seq-n+1+i)
				}
			}
		}()
	}
	for range 4 { // workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{"durable"}, Limit: 8, Wait: time.Second})
				if err != nil {
					fmt.Fprintln(os.Stderr, "accept:", err)
					os.Exit(2)
				}
				for _, j := range jobs {
					if err := c.Complete(ctx, j.Lease(), json.RawMessage(`{"done":true}`)); err != nil {
						fmt.Fprintln(os.Stderr, "complete:", err)
						os.Exit(2)
					}
					say("F %d", j.ID)
				}
			}
		}()
	}
	wg.Wait()
}

// TestDurabilityAfterSIGKILL kills a process that adds and finishes jobs
// and checks, after reopening its database, that every acknowledged add
// and finish is there and nothing else changed.
func TestDurabilityAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for round := range 3 {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "durable.db")
			added, finished := runAndKill(t, path, 200+round*300)
			audit(t, path, added, finished)
		})
	}
}

func runAndKill(t *testing.T, path string, afterFinishes int) (added map[int64]int, finished map[int64]bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDurabilityChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	added, finished = map[int64]int{}, map[int64]bool{}
	killed := false
	deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "A":
			id, _ := strconv.ParseInt(f[1], 10, 64)
			seq, _ := strconv.Atoi(f[2])
			added[id] = seq
		case len(f) == 2 && f[0] == "F":
			id, _ := strconv.ParseInt(f[1], 10, 64)
			finished[id] = true
		}
		if !killed && len(finished) >= afterFinishes {
			// Mid-run: producers and workers are all busy.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child exited before it was killed: %v", err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL", cmd.ProcessState)
	}
	t.Logf("killed after %d acknowledged adds and %d acknowledged finishes", len(added), len(finished))
	return added, finished
}

func audit(t *testing.T, path string, added map[int64]int, finished map[int64]bool) {
	t.Helper()
	st, err := sqlite.Open(path, sqlite.Config{})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer st.Close()
	db, err := st.DB()
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
	ctx := context.Background()
	all := map[int64]store.Job{}
	for cursor := int64(0); ; {
		page, err := st.List(ctx, store.ListParams{After: cursor, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			all[j.ID] = j
		}
		if cursor = page.Next; cursor == 0 {
			break
		}
	}
	seqs := map[int]int64{}
	for id, j := range all {
		var d struct{ Seq int }
		if err := json.Unmarshal(j.Data, &d); err != nil || j.Type != "durable" {
			t.Fatalf("job %d has type %q data %s: not something the child added", id, j.Type, j.Data)
		}
		if other, dup := seqs[d.Seq]; dup {
			t.Fatalf("jobs %d and %d both carry seq %d", id, other, d.Seq)
		}
		seqs[d.Seq] = id
		switch j.State {
		case store.Pending, store.Running:
		case store.Completed:
			if string(j.Result) != `{"done":true}` {
				t.Errorf("completed job %d has result %s", id, j.Result)
			}
		default:
			t.Errorf("job %d is %s; the child never failed or cancelled anything", id, j.State)
		}
	}
	for id, seq := range added {
		j, ok := all[id]
		if !ok {
			t.Fatalf("acknowledged add of job %d (seq %d) is lost", id, seq)
		}
		var d struct{ Seq int }
		json.Unmarshal(j.Data, &d)
		if d.Seq != seq {
			t.Errorf("job %d has seq %d, acknowledged with %d", id, d.Seq, seq)
		}
	}
	for id := range finished {
		if j := all[id]; j.State != store.Completed {
			t.Errorf("acknowledged finish of job %d is lost: it is %s", id, j.State)
		}
	}
	if len(all) < len(added) {
		t.Errorf("%d jobs on disk, %d acknowledged", len(all), len(added))
	}

	// Everything still runs to completion: running jobs come back when
	// their leases expire (here: at once, by sweeping in the future).
	if _, _, err := st.ExpireLeases(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for {
		res, err := st.Accept(ctx, store.AcceptParams{Types: []string{"durable"}, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) == 0 {
			break
		}
		ps := make([]store.FinishParams, len(res.Jobs))
		for i, j := range res.Jobs {
			ps[i] = store.FinishParams{Lease: j.Lease(), As: store.Complete}
		}
		errs, err := st.Finish(ctx, ps)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errs {
			if e != nil {
				t.Fatal(e)
			}
		}
	}
	left, err := st.List(ctx, store.ListParams{States: []store.State{store.Pending, store.Running}})
	if err != nil || len(left.Jobs) != 0 {
		t.Errorf("%d jobs left unfinished after recovery (%v)", len(left.Jobs), err)
	}
}
