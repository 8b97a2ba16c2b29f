package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// spy passes every call to its store and reports each Accept that
// returned no jobs, so that a test knows when an acceptor has gone to
// sleep.
type spy struct {
	store.Store
	empty chan struct{}
}

func (s *spy) Accept(ctx context.Context, p store.AcceptParams) (store.AcceptResult, error) {
	res, err := s.Store.Accept(ctx, p)
	if err == nil && len(res.Jobs) == 0 {
		select {
		case s.empty <- struct{}{}:
		default:
		}
	}
	return res, err
}

// TestCrossNodeWakeup: an acceptor waiting on node B wakes when node A adds
// a job, by A's notification: B's poll interval is far longer than the
// wait, so without the notification the accept would come back empty.
func TestCrossNodeWakeup(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   postgres.Config
		batch int
	}{
		{"change", postgres.Config{}, 1},
		// A flush too big for one payload sends a hint per type instead.
		{"hint", postgres.Config{NotifyMaxPayloads: 1}, 2000},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := newSchema(t)
			a := openIn(t, schema, c.cfg)
			b := &spy{Store: openIn(t, schema, postgres.Config{}), empty: make(chan struct{}, 1)}
			client, err := rota.NewClient(b, rota.Config{PollInterval: time.Hour, NoMaintenance: true})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			ctx := t.Context()
			got := make(chan []store.Job, 1)
			go func() {
				jobs, err := client.Accept(ctx, rota.AcceptParams{Types: []string{"wake.*"}, Wait: time.Minute})
				if err != nil {
					t.Errorf("Accept on node B: %v", err)
				}
				got <- jobs
			}()
			<-b.empty // B looked, found nothing, and sleeps
			// A type B has never seen, so B must also learn it from A.
			ps := make([]store.AddParams, c.batch)
			for i := range ps {
				ps[i] = store.AddParams{Type: "wake.up", Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}
			}
			res, err := a.Add(ctx, ps)
			if err != nil {
				t.Fatal(err)
			}
			jobs := <-got
			if len(jobs) != 1 || jobs[0].ID != res[0].Job.ID {
				t.Errorf("Accept with Wait on node B = %v, want job %d added on node A", jobIDs(jobs), res[0].Job.ID)
			}
		})
	}
}

// TestCrossNodeWatch: a job's changes on node A reach node B's watchers,
// in order.
func TestCrossNodeWatch(t *testing.T) {
	schema := newSchema(t)
	a := openIn(t, schema, postgres.Config{})
	b := openIn(t, schema, postgres.Config{})
	var mu sync.Mutex
	var seen []store.Event
	signal := make(chan struct{}, 1)
	stop := b.Watch(func(cs []store.Event) {
		mu.Lock()
		seen = append(seen, cs...)
		mu.Unlock()
		select {
		case signal <- struct{}{}:
		default:
		}
	})
	defer stop()
	ctx := t.Context()
	res, err := a.Add(ctx, []store.AddParams{{Type: "w", Group: "g"}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	acc, err := a.Accept(ctx, store.AcceptParams{Types: []string{"w"}})
	if err != nil || len(acc.Jobs) != 1 {
		t.Fatalf("Accept = %v, %v", acc.Jobs, err)
	}
	p := 40.0
	if r, err := a.Heartbeat(ctx, []store.HeartbeatParams{{Lease: acc.Jobs[0].Lease(), Progress: &p}}); err != nil || r[0].Err != nil {
		t.Fatalf("Heartbeat = %v, %v", r, err)
	}
	if errs, err := a.Finish(ctx, []store.FinishParams{{Lease: acc.Jobs[0].Lease(), As: store.Complete}}); err != nil || errs[0] != nil {
		t.Fatalf("Finish = %v, %v", errs, err)
	}
	if errs, err := a.Remove(ctx, []int64{id}); err != nil || errs[0] != nil {
		t.Fatalf("Remove = %v, %v", errs, err)
	}
	want := []string{"pending g", "running g 0", "running g 40", "completed g", "removed completed g"}
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case <-signal:
		case <-timeout:
			t.Fatalf("node B saw %v of job %d within 10s, want %v", got, id, want)
		}
		mu.Lock()
		got = got[:0]
		for _, c := range seen {
			if c.ID != id {
				continue
			}
			d := c.State.String() + " " + c.Group
			switch {
			case c.Removed:
				d = "removed " + d
			case c.State == store.Running:
				d += fmt.Sprintf(" %v", c.Progress)
			}
			got = append(got, d)
		}
		mu.Unlock()
	}
	if !slices.Equal(got, want) {
		t.Errorf("node B saw %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range seen {
		if c.ID == id && c.State == store.Pending && !c.RunAt.Equal(res[0].Job.RunAt) {
			t.Errorf("pending change carries run_at %v, want %v", c.RunAt, res[0].Job.RunAt)
		}
	}
}

// TestLeaderElection: only one node sweeps; when it goes away (closed, or
// its session killed) another takes over.
func TestLeaderElection(t *testing.T) {
	schema := newSchema(t)
	// A leader resigns after 5 idle retry periods; A's are long, so that
	// it still leads when its session is killed however slowly a busy
	// machine runs the steps between. B retries often, to take over fast.
	a := openIn(t, schema, postgres.Config{LeaderRetry: 2 * time.Second})
	b := openIn(t, schema, postgres.Config{LeaderRetry: 20 * time.Millisecond})
	ctx := t.Context()
	future := func() time.Time { return time.Now().Add(time.Hour) }

	if _, err := a.Add(ctx, []store.AddParams{{Type: "t"}, {Type: "t"}, {Type: "t"}}); err != nil {
		t.Fatal(err)
	}
	if acc, err := a.Accept(ctx, store.AcceptParams{Types: []string{"t"}, Limit: 3}); err != nil || len(acc.Jobs) != 3 {
		t.Fatalf("Accept = %v, %v", acc.Jobs, err)
	}
	if _, _, err := a.ExpireLeases(ctx, time.Now()); err != nil || !a.IsLeader() {
		t.Fatalf("first ExpireLeases on node A: %v; leader %v, want A to lead", err, a.IsLeader())
	}
	n, next, err := b.ExpireLeases(ctx, future())
	if err != nil || n != 0 || b.IsLeader() {
		t.Fatalf("ExpireLeases on node B while A leads = %d, %v (leader %v); want nothing taken back", n, err, b.IsLeader())
	}
	if !next.After(time.Now()) {
		t.Errorf("ExpireLeases on a follower returned next %v, want a time ahead to call again", next)
	}

	// The leader's session dies (as in a crash or a network failure): the
	// lock goes with it, and B takes over and sweeps.
	killLeaderSession(t, a, schema)
	taken := 0
	deadline := time.Now().Add(20 * time.Second)
	for !b.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("node B did not take over within 20s after A's session was terminated")
		}
		n, _, err := b.ExpireLeases(ctx, future())
		if err != nil {
			t.Fatalf("ExpireLeases on node B: %v", err)
		}
		taken += n
		time.Sleep(10 * time.Millisecond)
	}
	if taken != 3 {
		t.Fatalf("the new leader took back %d jobs, want the 3 expired leases", taken)
	}
	// A finds out at its next sweep and follows.
	if _, _, err := a.ExpireLeases(ctx, future()); err == nil && a.IsLeader() {
		t.Errorf("node A still leads after its session was killed and B took over")
	}

	// Closing the leader hands over too.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for !a.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("node A did not take over within 20s after the leader closed")
		}
		a.ExpireLeases(ctx, future())
		time.Sleep(10 * time.Millisecond)
	}
}

// killLeaderSession terminates the session holding s's leader lock.
func killLeaderSession(t *testing.T, s *postgres.Store, schema string) {
	t.Helper()
	var killed int
	err := s.Pool().QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
		AND ((classid::bigint << 32) | objid::bigint) = $1`, postgres.LeaderLockKey(schema)).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminating the leader's session: %d sessions, %v; want 1", killed, err)
	}
}

func TestLeaderResignsWhenIdle(t *testing.T) {
	schema := newSchema(t)
	cfg := postgres.Config{LeaderRetry: 20 * time.Millisecond}
	a := openIn(t, schema, cfg)
	b := openIn(t, schema, cfg)
	ctx := t.Context()
	if _, _, err := a.ExpireLeases(ctx, time.Now()); err != nil || !a.IsLeader() {
		t.Fatalf("ExpireLeases on A: %v, leader %v", err, a.IsLeader())
	}
	// A stops sweeping; it lets go, and B can lead.
	deadline := time.Now().Add(20 * time.Second)
	for !b.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatalf("B did not lead within 20s after A stopped sweeping (A leads: %v)", a.IsLeader())
		}
		b.ExpireLeases(ctx, time.Now())
		time.Sleep(20 * time.Millisecond)
	}
}
