package postgres

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// TestPeers: who counts as listening, and for how long.
func TestPeers(t *testing.T) {
	var p peers
	t0 := time.Now()
	if !p.present(t0) {
		t.Fatal("with its LISTEN connection down a node cannot hear the others: it must notify")
	}
	p.listening(true)
	if p.present(t0) {
		t.Fatal("a node that heard no one notified")
	}
	if !p.hear("b", "hello", t0) {
		t.Fatal("the first node heard was not reported as the first")
	}
	if p.hear("c", "here", t0) {
		t.Fatal("a second node was reported as the first")
	}
	if !p.present(t0.Add(peerTTL - time.Second)) {
		t.Fatal("a node that said here within peerTTL did not count")
	}
	if p.present(t0.Add(peerTTL + time.Second)) {
		t.Fatal("nodes silent for longer than peerTTL still counted")
	}
	// A node older than presence lines only sends changes.
	p.hear("old", "", t0)
	if !p.present(t0.Add(olderNodeTTL - time.Minute)) {
		t.Fatal("a node without presence lines stopped counting before olderNodeTTL")
	}
	p.hear("old", "here", t0) // it was a new node after all: peerTTL
	if p.present(t0.Add(peerTTL + time.Second)) {
		t.Fatal("a node that says here counted for olderNodeTTL")
	}
	p.hear("b", "here", t0)
	p.hear("b", "bye", t0)
	if p.present(t0) {
		t.Fatal("a node that said bye still counted")
	}
	p.always = true // NoListen
	if !p.present(t0) {
		t.Fatal("a node without LISTEN must always notify")
	}
}

// TestOutboxReplay: changes flushed while no node listened go out in the
// first send after them, before those queued since, once.
func TestOutboxReplay(t *testing.T) {
	o := &outbox{wake: make(chan struct{}, 1)}
	t0 := time.Now()
	o.pending = []store.Event{{ID: 1}, {ID: 2}}
	if got := o.take(false, t0); len(got) != 0 {
		t.Fatalf("a node alone sent %d changes", len(got))
	}
	o.pending = []store.Event{{ID: 3}}
	o.replay()
	select {
	case <-o.wake:
	default:
		t.Fatal("replay did not wake the sender")
	}
	var ids []int64
	for _, c := range o.take(true, t0.Add(time.Second)) {
		ids = append(ids, c.ID)
	}
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 2 || ids[2] != 3 {
		t.Fatalf("sent after the replay: %v, want [1 2 3]", ids)
	}
	if got := o.take(true, t0.Add(time.Second)); len(got) != 0 {
		t.Fatalf("a second send sent %d changes again", len(got))
	}
	// Kept changes older than replayWindow are dropped, not sent.
	o.pending = []store.Event{{ID: 4}}
	o.take(false, t0)
	o.pending = []store.Event{{ID: 5}}
	if got := o.take(true, t0.Add(replayWindow+time.Second)); len(got) != 1 || got[0].ID != 5 {
		t.Fatalf("sent %v, want only [5]: 4 was kept longer than replayWindow", got)
	}
}
