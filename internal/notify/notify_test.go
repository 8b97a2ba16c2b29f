package notify

import (
	"fmt"
	"testing"
	"time"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// TestSlowSubscriberIsDropped: a reader that takes nothing does not make
// the queue grow past the bound: the subscription is lost, its channel
// closes, and the others go on.
func TestSlowSubscriberIsDropped(t *testing.T) {
	h := New()
	h.MaxQueue = 100
	all, _ := check.CompilePattern("*")
	slow := h.SubscribeTypes([]glob.Pattern{all})
	fast := h.SubscribeTypes([]glob.Pattern{all})
	for i := range 1000 {
		h.Publish([]store.Event{{ID: int64(i + 1), Type: "t"}})
		// The fast reader keeps up: it takes each event as it comes.
		select {
		case ev := <-fast.C:
			if ev.ID != int64(i+1) {
				t.Fatalf("fast reader got event %d, want %d", ev.ID, i+1)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("fast reader did not get event %d", i+1)
		}
	}
	fast.Stop()
	// The slow one: what fit in its channel, then the end.
	n := 0
	timeout := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-slow.C:
			if open {
				n++
			}
		case <-timeout:
			t.Fatal("the slow subscription's channel did not close")
		}
	}
	if !slow.Lost() {
		t.Error("the slow subscription does not report that it was lost")
	}
	if n >= 1000 {
		t.Errorf("the slow subscriber received all %d events", n)
	}
	h.mu.Lock()
	left := len(h.typed)
	h.mu.Unlock()
	if left != 0 {
		t.Errorf("%d subscriptions still registered", left)
	}
	if fast.Lost() {
		t.Error("a subscriber that kept up was dropped")
	}
}

func patterns(t testing.TB, srcs ...string) []glob.Pattern {
	t.Helper()
	out := make([]glob.Pattern, len(srcs))
	for i, src := range srcs {
		p, err := check.CompilePattern(src)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = p
	}
	return out
}

// TestTypeMatchingIsCached: a type subscriber matches each type name
// against its patterns once, however many changes of that type come, and
// still gets exactly the changes its patterns match.
func TestTypeMatchingIsCached(t *testing.T) {
	h := New()
	pats := []string{"mail.*"}
	for i := range 100 {
		pats = append(pats, fmt.Sprintf("never-%d.{a,b}[0-9]*", i))
	}
	sub := h.SubscribeTypes(patterns(t, pats...))
	defer sub.Stop()
	id := int64(0)
	for range 50 {
		var batch []store.Event
		for _, typ := range []string{"report", "mail.send", "invoice"} {
			id++
			batch = append(batch, store.Event{ID: id, Type: typ})
		}
		h.Publish(batch)
	}
	h.pub.Lock()
	evals := sub.evals
	h.pub.Unlock()
	if evals != 3 {
		t.Errorf("the subscriber matched type names %d times for 150 changes of 3 types; want 3 (once per name)", evals)
	}
	for i := range 50 {
		select {
		case ev := <-sub.C:
			if ev.Type != "mail.send" || ev.ID != int64(3*i+2) {
				t.Fatalf("event %d: got job %d of type %q, want job %d of mail.send", i, ev.ID, ev.Type, 3*i+2)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d did not come", i)
		}
	}
}

// TestPublishMatchesOutsideTheLock holds a type subscriber in the middle of
// matching a name during a Publish, and checks that what every write and
// accept passes (the hub's lock: registering a waiter, a subscription to
// a job, another type subscription, stopping them) is not held meanwhile.
func TestPublishMatchesOutsideTheLock(t *testing.T) {
	h := New()
	entered, release := make(chan struct{}), make(chan struct{})
	h.testMatch = func() {
		entered <- struct{}{}
		<-release
	}
	sub := h.SubscribeTypes(patterns(t, "never.*"))
	defer sub.Stop()
	published := make(chan struct{})
	go func() {
		h.Publish([]store.Event{{ID: 1, Type: "report", State: store.Pending}})
		close(published)
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish never matched the subscriber's patterns")
	}
	done := make(chan struct{})
	report := patterns(t, "report")
	go func() {
		defer close(done)
		w := h.Wait(report)
		w.Stop()
		j := h.SubscribeJob(2)
		j.Stop()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("registering a waiter and a job subscription waited for a subscriber's pattern matching: it runs under the hub's lock")
	}
	close(release)
	<-published
}

// TestStopDropsBuffered: a change published before Stop and buffered in
// C is not received after Stop returns.
func TestStopDropsBuffered(t *testing.T) {
	h := New()
	all, _ := check.CompilePattern("*")
	sub := h.SubscribeTypes([]glob.Pattern{all})
	h.Publish([]store.Event{{ID: 1, Type: "t"}, {ID: 2, Type: "t"}})
	deadline := time.Now().Add(10 * time.Second)
	for len(sub.C) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	sub.Stop()
	if ev, ok := <-sub.C; ok {
		t.Errorf("received job %d after Stop returned", ev.ID)
	}
}
