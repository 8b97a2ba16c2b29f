package postgres

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

func TestPayloadRoundTrip(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	in := []store.Event{
		{ID: 1, Type: "email.send", Group: "tenant 1", State: store.Pending, RunAt: at},
		{ID: 2, Type: "a,b;c", Group: "", State: store.Running, Progress: 42.5, Lease: store.LeaseTag("tok")},
		{ID: 3, Type: "x", Group: "g", State: store.Completed, Removed: true},
		{ID: 4, Type: "x", Group: "g", State: store.Pending, Failed: true, RunAt: at}, // a failed run, retried
	}
	payloads := encode("node1", in, 16)
	if len(payloads) != 1 {
		t.Fatalf("encode made %d payloads, want 1", len(payloads))
	}
	node, out, ok := decode(payloads[0])
	if !ok || node != "node1" {
		t.Fatalf("decode: node %q ok %v", node, ok)
	}
	if !slices.EqualFunc(in, out, func(a, b store.Event) bool {
		return a.ID == b.ID && a.Type == b.Type && a.Group == b.Group && a.State == b.State &&
			a.Removed == b.Removed && a.Failed == b.Failed && a.Progress == b.Progress && a.RunAt.Equal(b.RunAt) && a.Lease == b.Lease
	}) {
		t.Errorf("round trip = %+v, want %+v", out, in)
	}
	for _, bad := range []string{"", "nonsense", "rota1 n\nc\tx\t0\t0\t-\t0\tt\tg", "rota1 n\nc\t1\t99\t0\t-\t0\tt\tg"} {
		if _, cs, _ := decode(bad); len(cs) != 0 {
			t.Errorf("decode(%q) = %+v, want nothing", bad, cs)
		}
	}
}

// TestPayloadLimits: payloads stay under PostgreSQL's 8000 bytes, and
// changes beyond the payload budget become one hint per type.
func TestPayloadLimits(t *testing.T) {
	long := strings.Repeat("g", store.MaxNameLen)
	var in []store.Event
	for i := range 5000 {
		in = append(in, store.Event{ID: int64(i + 1), Type: fmt.Sprintf("type.%d", i%7), Group: long, State: store.Pending, RunAt: time.Now()})
	}
	payloads := encode("n", in, 4)
	if len(payloads) > 4+1 {
		t.Errorf("encode made %d payloads with a budget of 4", len(payloads))
	}
	changes, hints := 0, map[string]bool{}
	for _, p := range payloads {
		if len(p) >= 8000 {
			t.Errorf("payload of %d bytes, want under 8000", len(p))
		}
		_, cs, ok := decode(p)
		if !ok {
			t.Fatalf("payload does not decode")
		}
		for _, c := range cs {
			if c.ID == 0 {
				hints[c.Type] = true
			} else {
				changes++
			}
		}
	}
	if changes == 0 || changes == len(in) || len(hints) != 7 {
		t.Errorf("%d changes and hints for %d types, want some changes and the rest as hints for all 7 types", changes, len(hints))
	}
}
