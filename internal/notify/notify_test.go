package notify

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// TestSlowSubscriberIsDropped: a reader that takes nothing does not make
// the queue grow past the bound: the subscription is lost, its channel
// closes, and the others go on.
func TestSlowSubscriberIsDropped(t *testing.T) {
	h := New()
	h.MaxQueue = 100
	all, _ := store.CompilePattern("*")
	slow := h.SubscribeTypes([]store.Pattern{all})
	fast := h.SubscribeTypes([]store.Pattern{all})
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
