package postgres_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/internal/expiry"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

const nodeEnv = "ROTA_PG_NODE"

// nodeConfig is what TestMultiNode tells each node process.
type nodeConfig struct {
	Name      string
	Schema    string
	Lease     time.Duration
	WorkDelay time.Duration // how long a batch "runs" between accept and finish
	Type      string        // the type it works on; "" means "mn"
}

// TestNodeChild is one rota node, run as a process of its own by
// TestMultiNode. It accepts jobs of type "mn" in batches with a few
// workers, completes them, and runs the lease monitor, until its stdin
// closes. A line "hold" on stdin makes its workers stop before finishing
// the batch in hand, as a hung node would. It prints, each line only after
// the call it reports returned:
//
//	L            it became the sweep leader
//	A id token   it accepted the job under token
//	F id         its completion of the job was acknowledged
//	X id error   its completion was rejected
//	H            a worker holds its batch and will not finish it
//	S id slot    the acknowledged completion was of a recurring job's slot
//	             (Unix nanoseconds)
func TestNodeChild(t *testing.T) {
	raw := os.Getenv(nodeEnv)
	if raw == "" {
		t.Skip("a node process run by TestMultiNode")
	}
	var cfg nodeConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := postgres.Open(ctx, testDSN(t), postgres.Config{Schema: cfg.Schema, MaxConns: 6, LeaderRetry: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var outMu sync.Mutex
	say := func(s string) {
		outMu.Lock()
		os.Stdout.WriteString(s) // one write per call: whole lines
		outMu.Unlock()
	}
	hold := make(chan struct{})
	go func() { // the parent closes stdin to stop the node
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "hold" {
				close(hold)
			}
		}
		cancel()
	}()
	var wg sync.WaitGroup
	wg.Go(func() {
		m := &expiry.Monitor{Store: st, Interval: 100 * time.Millisecond}
		m.Run(ctx)
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			if st.IsLeader() {
				say("L\n")
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	typ := cmp.Or(cfg.Type, "mn")
	for w := range 4 {
		wg.Go(func() {
			worker := fmt.Sprintf("%s-w%d", cfg.Name, w)
			for ctx.Err() == nil {
				res, err := st.Accept(ctx, store.AcceptParams{Types: []string{typ}, Limit: 50, Worker: worker, LeaseTimeout: cfg.Lease})
				if err != nil {
					if ctx.Err() == nil {
						fmt.Fprintln(os.Stderr, worker, "accept:", err)
						time.Sleep(50 * time.Millisecond)
					}
					continue
				}
				if len(res.Jobs) == 0 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				var b strings.Builder
				ps := make([]store.FinishParams, len(res.Jobs))
				slots := make([]time.Time, len(res.Jobs))
				for i, j := range res.Jobs {
					slots[i] = j.Slot
					fmt.Fprintf(&b, "A %d %s\n", j.ID, j.Token)
					ps[i] = store.FinishParams{Lease: j.Lease(), As: store.Complete, Result: []byte(`{"by":"` + worker + `"}`)}
				}
				say(b.String())
				select {
				case <-hold:
					say("H\n")
					<-ctx.Done()
					return
				case <-time.After(cfg.WorkDelay):
				}
				errs, err := st.Finish(context.Background(), ps)
				if err != nil {
					fmt.Fprintln(os.Stderr, worker, "finish:", err)
					continue
				}
				b.Reset()
				for i, e := range errs {
					if e == nil {
						fmt.Fprintf(&b, "F %d\n", ps[i].ID)
						if !slots[i].IsZero() {
							fmt.Fprintf(&b, "S %d %d\n", ps[i].ID, slots[i].UnixNano())
						}
					} else {
						fmt.Fprintf(&b, "X %d %v\n", ps[i].ID, strings.ReplaceAll(e.Error(), "\n", " "))
					}
				}
				say(b.String())
			}
		})
	}
	wg.Wait()
}

// node is a running node process, as the parent sees it.
type node struct {
	name     string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	mu       sync.Mutex
	leader   bool
	holding  bool
	accepted map[int64][]string // job → tokens it got
	finished map[int64]int      // job → acknowledged completions
	slots    []time.Time        // the slots of acknowledged completions of recurring jobs
	rejected int
	done     chan struct{} // output fully read
}

func startNode(t *testing.T, cfg nodeConfig) *node {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^TestNodeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), nodeEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &node{name: cfg.Name, cmd: cmd, stdin: stdin, accepted: map[int64][]string{}, finished: map[int64]int{}, done: make(chan struct{})}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		defer close(n.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			n.mu.Lock()
			switch {
			case f[0] == "L" && len(f) == 1:
				n.leader = true
			case f[0] == "A" && len(f) == 3:
				if id, err := strconv.ParseInt(f[1], 10, 64); err == nil && len(f[2]) == 32 {
					n.accepted[id] = append(n.accepted[id], f[2])
				}
			case f[0] == "F" && len(f) == 2:
				if id, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					n.finished[id]++
				}
			case f[0] == "S" && len(f) == 3:
				if ns, err := strconv.ParseInt(f[2], 10, 64); err == nil {
					n.slots = append(n.slots, time.Unix(0, ns).UTC())
				}
			case f[0] == "X":
				n.rejected++
			case f[0] == "H":
				n.holding = true
			}
			n.mu.Unlock()
		}
	}()
	return n
}

// inFlight counts the jobs the node accepted and has not reported
// finished.
func (n *node) inFlight() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for id := range n.accepted {
		if n.finished[id] == 0 {
			c++
		}
	}
	return c
}

func (n *node) finishedCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.finished)
}

func (n *node) isLeader() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leader
}

func (n *node) isHolding() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.holding
}

// TestMultiNode runs three node processes on one database: 20,000 jobs,
// each completed exactly once. Then again, killing the sweep leader with
// SIGKILL mid-run, while it holds jobs (it is told to stop finishing, as a
// hung node would, so that it surely dies with jobs in hand): every job
// still completes, the dead node's jobs run again on the others after their
// leases expire, and its stale tokens are rejected.
func TestMultiNode(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	testDSN(t)
	const jobs = 20_000
	t.Run("ThreeNodes", func(t *testing.T) {
		runNodes(t, jobs, nodeConfig{Lease: 30 * time.Second, WorkDelay: 2 * time.Millisecond}, false)
	})
	t.Run("LeaderKilled", func(t *testing.T) {
		runNodes(t, jobs, nodeConfig{Lease: 2 * time.Second, WorkDelay: 5 * time.Millisecond}, true)
	})
}

func runNodes(t *testing.T, total int, cfg nodeConfig, kill bool) {
	cfg.Schema = newSchema(t)
	st := openIn(t, cfg.Schema, postgres.Config{NoListen: true})
	ctx := t.Context()
	ids := map[int64]bool{}
	for len(ids) < total {
		ps := make([]store.AddParams, min(2000, total-len(ids)))
		for i := range ps {
			ps[i] = store.AddParams{Type: "mn", Data: []byte(fmt.Sprintf(`{"n":%d}`, len(ids)+i))}
		}
		res, err := st.Add(ctx, ps)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			ids[r.Job.ID] = true
		}
	}
	start := time.Now()
	var nodes []*node
	for i := range 3 {
		c := cfg
		c.Name = fmt.Sprintf("node%d", i)
		nodes = append(nodes, startNode(t, c))
	}

	var victim, holder *node
	remaining := func() (hot, completed int) {
		q := `SELECT (SELECT count(*) FROM ` + pgx.Identifier{cfg.Schema, "jobs"}.Sanitize() + `),
			(SELECT count(*) FROM ` + pgx.Identifier{cfg.Schema, "jobs_ended"}.Sanitize() + ` WHERE state = 3)`
		if err := st.Pool().QueryRow(ctx, q).Scan(&hot, &completed); err != nil {
			t.Fatal(err)
		}
		return hot, completed
	}
	deadline := time.Now().Add(150 * time.Second)
	for {
		if time.Now().After(deadline) {
			hot, done := remaining()
			t.Fatalf("after 150s: %d jobs completed, %d not ended", done, hot)
		}
		if kill && holder == nil {
			sum := 0
			for _, n := range nodes {
				sum += n.finishedCount()
			}
			// Mid-run: a quarter done, and the leader known.
			for _, n := range nodes {
				if sum >= total/4 && n.isLeader() {
					if _, err := io.WriteString(n.stdin, "hold\n"); err != nil {
						t.Fatal(err)
					}
					holder = n
					break
				}
			}
		}
		if holder != nil && victim == nil && holder.isHolding() {
			if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			victim = holder
			t.Logf("killed the leader %s with %d jobs in hand", victim.name, victim.inFlight())
		}
		if hot, done := remaining(); hot == 0 && done == total {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d jobs completed by 3 node processes in %v", total, time.Since(start).Round(time.Millisecond))
	if kill && victim == nil {
		t.Fatal("the run ended before the leader could be killed")
	}
	for _, n := range nodes {
		n.stdin.Close()
	}
	for _, n := range nodes {
		err := n.cmd.Wait()
		<-n.done
		if n == victim {
			if ws, ok := n.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Errorf("%s ended with %v, want killed by SIGKILL", n.name, n.cmd.ProcessState)
			}
		} else if err != nil {
			t.Errorf("%s exited with %v", n.name, err)
		}
	}

	// What the nodes acknowledged: each job completed once, by one node.
	acked := map[int64]int{}
	for _, n := range nodes {
		for id, c := range n.finished {
			acked[id] += c
		}
	}
	final := readAll(t, st, ids)
	var rerun, unacked int
	for id := range ids {
		j := final[id]
		if j.State != store.Completed {
			t.Errorf("job %d is %v, want completed", id, j.State)
			continue
		}
		switch acked[id] {
		case 1:
		case 0:
			// Only the dead node may have completed a job and died before
			// saying so; the job then carries one of its tokens.
			if victim == nil || !contains(victim.accepted[id], j.Token) {
				t.Errorf("job %d is completed but no node acknowledged it", id)
			}
			unacked++
		default:
			t.Errorf("job %d was acknowledged as completed %d times, want once", id, acked[id])
		}
		if j.Attempt > 1 {
			rerun++
			if victim == nil {
				t.Errorf("job %d ran %d times with no node killed, want once", id, j.Attempt)
			}
		}
	}
	if !kill {
		for _, n := range nodes {
			if n.rejected > 0 {
				t.Errorf("%s had %d completions rejected, want none with no node killed", n.name, n.rejected)
			}
		}
		return
	}

	// The victim's unfinished jobs ran again on the others after their
	// leases expired, and its tokens no longer work.
	var stale []store.FinishParams
	for id, tokens := range victim.accepted {
		if victim.finished[id] > 0 {
			continue
		}
		j := final[id]
		if contains(tokens, j.Token) {
			continue // completed by the victim, unacknowledged
		}
		if j.Attempt < 2 || !strings.Contains(j.Errors[0].Error, "lease expired") {
			t.Errorf("job %d, held by the killed node, completed on attempt %d with errors %v; want a rerun after its lease expired",
				id, j.Attempt, j.Errors)
		}
		stale = append(stale, store.FinishParams{Lease: store.Lease{ID: id, Token: tokens[len(tokens)-1]}, As: store.Complete})
	}
	if len(stale) == 0 {
		t.Fatal("no job held by the killed node ran again")
	}
	t.Logf("%d jobs ran again after the kill; %d completed by the killed node without acknowledgement; %d reruns in all", len(stale), unacked, rerun)
	errs, err := st.Finish(ctx, stale)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if !errors.Is(e, store.ErrWorkerConflict) {
			t.Errorf("finish of job %d with the killed node's token: %v, want ErrWorkerConflict", stale[i].ID, e)
		}
	}
	after := readAll(t, st, ids)
	for _, p := range stale {
		if a, b := final[p.ID], after[p.ID]; !a.UpdatedAt.Equal(b.UpdatedAt) || a.Token != b.Token || string(a.Result) != string(b.Result) {
			t.Errorf("a finish with a stale token changed job %d", p.ID)
		}
	}
}

func readAll(t *testing.T, st store.Store, ids map[int64]bool) map[int64]store.Job {
	t.Helper()
	list := make([]int64, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	jobs, err := st.Get(t.Context(), list)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int64]store.Job, len(jobs))
	for _, j := range jobs {
		out[j.ID] = j
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRecurringLeaderKilled: a recurring job on two node processes keeps
// its phase when the sweep leader is killed with SIGKILL while it runs the
// job: the other node takes the lease back, becomes the leader, and the job
// goes on, each slot completed once.
func TestRecurringLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	testDSN(t)
	cfg := nodeConfig{Schema: newSchema(t), Lease: time.Second, WorkDelay: 50 * time.Millisecond, Type: "rec"}
	st := openIn(t, cfg.Schema, postgres.Config{NoListen: true})
	const interval = time.Second
	t0 := time.Now().Add(time.Second).UTC().Truncate(time.Second)
	res, err := st.Add(t.Context(), []store.AddParams{{Type: "rec", Schedule: "SCHEDULED, +1 SECOND", RunAt: t0}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	var nodes []*node
	for i := range 2 {
		c := cfg
		c.Name = fmt.Sprintf("node%d", i)
		nodes = append(nodes, startNode(t, c))
	}
	count := func() int {
		c := 0
		for _, n := range nodes {
			n.mu.Lock()
			c += len(n.slots)
			n.mu.Unlock()
		}
		return c
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("3 slots completed", func() bool { return count() >= 3 })
	var leader *node
	wait("a leader", func() bool {
		for _, n := range nodes {
			if n.isLeader() {
				leader = n
				return true
			}
		}
		return false
	})
	if _, err := io.WriteString(leader.stdin, "hold\n"); err != nil {
		t.Fatal(err)
	}
	// Kill the leader once it holds the job (or after a few slots, if the
	// other node keeps winning it).
	before := count()
	wait("the leader to hold the job", func() bool { return leader.isHolding() || count() >= before+5 })
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := count()
	var other *node
	for _, n := range nodes {
		if n != leader {
			other = n
		}
	}
	wait("the other node to lead", other.isLeader)
	wait("3 more slots completed after the kill", func() bool { return count() >= killed+3 })
	for _, n := range nodes {
		n.stdin.Close()
	}
	for _, n := range nodes {
		n.cmd.Wait()
		<-n.done
	}

	var slots []time.Time
	for _, n := range nodes {
		slots = append(slots, n.slots...)
	}
	seen := map[time.Time]bool{}
	for _, s := range slots {
		if seen[s] {
			t.Errorf("slot %v completed twice", s)
		}
		seen[s] = true
		if s.Sub(t0)%interval != 0 {
			t.Errorf("slot %v is off the phase of %v every %v", s, t0, interval)
		}
	}
	j := readAll(t, st, map[int64]bool{id: true})[id]
	if j.State != store.Pending || j.Slot.Sub(t0)%interval != 0 || !j.Slot.After(slots[0]) {
		t.Errorf("at the end the job is %v with slot %v, want pending on the phase of %v", j.State, j.Slot, t0)
	}
	t.Logf("%d slots completed by 2 nodes, the leader killed after %d", len(slots), killed)
}
