package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// channelListener counts the payloads of changes sent on a schema's
// channel (not presence lines), as a session that only listens: it says
// nothing, so no node counts it as a peer.
type channelListener struct {
	mu      sync.Mutex
	changes int
}

func listenTo(t *testing.T, schema string) *channelListener {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{"rota:" + schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	l := &channelListener{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			if strings.Contains(n.Payload, "\nc\t") || strings.Contains(n.Payload, "\nh\t") {
				l.mu.Lock()
				l.changes++
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		<-done // ctx ends with the test
		conn.Close(context.Background())
	})
	return l
}

func (l *channelListener) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changes
}

// work adds, accepts and completes a job on st and returns its id.
func work(t *testing.T, st store.Store, typ string) int64 {
	t.Helper()
	ctx := t.Context()
	res, err := st.Add(ctx, []store.AddParams{{Type: typ}})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := st.Accept(ctx, store.AcceptParams{Types: []string{typ}, Limit: 1})
	if err != nil || len(acc.Jobs) != 1 {
		t.Fatalf("accept: %d jobs, %v", len(acc.Jobs), err)
	}
	if _, err := st.Finish(ctx, []store.FinishParams{{Lease: acc.Jobs[0].Lease(), As: store.Complete}}); err != nil {
		t.Fatal(err)
	}
	return res[0].Job.ID
}

// TestNotifyOnlyForOtherNodes: a node alone sends no NOTIFY for its
// changes (it delivers them at commit; its own listener would only drop
// them); once another node listens, that node's watchers get every change
// at once, from the first commit after its Open; once it closes, the first
// node stops notifying again.
func TestNotifyOnlyForOtherNodes(t *testing.T) {
	schema := newSchema(t)
	a := openIn(t, schema, postgres.Config{})
	heard := listenTo(t, schema)
	for range 20 {
		work(t, a, "alone")
	}
	time.Sleep(200 * time.Millisecond) // what was sent has arrived
	if n := heard.count(); n != 0 {
		t.Fatalf("a node alone sent %d notifications of changes, want none", n)
	}

	b := openIn(t, schema, postgres.Config{})
	seen := make(chan store.Event, 100)
	defer b.Watch(func(evs []store.Event) {
		for _, ev := range evs {
			if ev.Type == "together" {
				seen <- ev
			}
		}
	})()
	id := work(t, a, "together") // at once after B's Open
	deadline := time.After(5 * time.Second)
	for states := map[store.State]bool{}; !states[store.Pending] || !states[store.Running] || !states[store.Completed]; {
		select {
		case ev := <-seen:
			if ev.ID == id {
				states[ev.State] = true
			}
		case <-deadline:
			t.Fatalf("the other node's watchers saw states %v of job %d, want pending, running and completed", states, id)
		}
	}
	if heard.count() == 0 {
		t.Fatal("with another node listening, no change was sent")
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // B's bye has arrived
	before := heard.count()
	for range 20 {
		work(t, a, "alone")
	}
	time.Sleep(200 * time.Millisecond)
	if n := heard.count() - before; n != 0 {
		t.Fatalf("after the other node closed, %d notifications of changes were sent, want none", n)
	}
}

// TestSubscriberOnAnotherNode: a subscription to types on a node that
// just opened (what the HTTP event stream and the dashboard's live updates
// use) gets the changes of a job another node, alone until then, adds,
// runs and completes.
func TestSubscriberOnAnotherNode(t *testing.T) {
	schema := newSchema(t)
	a := openIn(t, schema, postgres.Config{})
	for range 5 {
		work(t, a, "before") // a alone: sent to no one
	}
	b := openIn(t, schema, postgres.Config{})
	cb, err := rota.NewClient(b, rota.Config{NoMaintenance: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	ctx := t.Context()
	sub, err := cb.SubscribeTypes(ctx, "stream.*")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	id := work(t, a, "stream.job")
	deadline := time.After(5 * time.Second)
	for states := map[store.State]bool{}; !states[store.Pending] || !states[store.Running] || !states[store.Completed]; {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatal("the subscription ended")
			}
			if ev.ID == id {
				states[ev.State] = true
			}
		case <-deadline:
			t.Fatalf("the subscriber on the other node saw states %v of job %d, want pending, running and completed", states, id)
		}
	}
}

// TestKeptChangesGoOutFirst: changes a node kept while alone reach the
// other nodes before any later change of the same job, even when a commit
// is flushed between the moment another node's presence counts and the
// replay its listener then asks for: a subscriber there saw the job
// completed, then pending again (e2e TestChaosPostgres's "completed jobs
// changed again").
func TestKeptChangesGoOutFirst(t *testing.T) {
	schema := newSchema(t)
	a := openIn(t, schema, postgres.Config{})
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{"rota:" + schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}

	res, err := a.Add(ctx, []store.AddParams{{Type: "kept"}}) // alone: kept, not sent
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	time.Sleep(200 * time.Millisecond) // the add is flushed (kept)
	postgres.HearPeer(a, "b")          // another node's here counts; its replay comes later
	acc, err := a.Accept(ctx, store.AcceptParams{Types: []string{"kept"}, Limit: 1})
	if err != nil || len(acc.Jobs) != 1 {
		t.Fatalf("accept: %d jobs, %v", len(acc.Jobs), err)
	}
	if _, err := a.Finish(ctx, []store.FinishParams{{Lease: acc.Jobs[0].Lease(), As: store.Complete}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the claim and the finish are flushed
	postgres.Replay(a)

	var states []string
	deadline := time.Now().Add(2 * time.Second)
	for {
		wctx, cancel := context.WithDeadline(ctx, deadline)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			break // nothing more within the deadline
		}
		for line := range strings.SplitSeq(n.Payload, "\n") {
			f := strings.Split(line, "\t")
			if len(f) > 3 && f[0] == "c" && f[1] == strconv.FormatInt(id, 10) {
				states = append(states, f[2])
			}
		}
	}
	want := []string{
		strconv.Itoa(int(store.Pending)),
		strconv.Itoa(int(store.Running)),
		strconv.Itoa(int(store.Completed)),
	}
	if !slices.Equal(states, want) {
		t.Fatalf("job %d's changes were sent with states %v, want %v (added, claimed, completed, in that order)", id, states, want)
	}
}
