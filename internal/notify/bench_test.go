package notify

import (
	"fmt"
	"testing"

	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// BenchmarkPublishPatternSubscribers publishes batches of 300 changes (the
// issue's batch) of a handful of types while three type subscribers each
// hold 120 GLOB patterns that never match: what a read-only token's event
// streams cost every write.
func BenchmarkPublishPatternSubscribers(b *testing.B) {
	h := New()
	for s := range 3 {
		pats := make([]glob.Pattern, 120)
		for i := range pats {
			p, err := check.CompilePattern(fmt.Sprintf("never-%d-%d.*.{x,y}[0-9]?", s, i))
			if err != nil {
				b.Fatal(err)
			}
			pats[i] = p
		}
		sub := h.SubscribeTypes(pats)
		defer sub.Stop()
	}
	batch := make([]store.Event, 300)
	for i := range batch {
		batch[i] = store.Event{ID: int64(i + 1), Type: fmt.Sprintf("report.monthly.%d", i%8), State: store.Pending}
	}
	b.ResetTimer()
	for range b.N {
		h.Publish(batch)
	}
}
