package bedrock_test

import (
	"context"
	"strings"
	"testing"
)

// TestAuditActor: the changes a Bedrock connection makes are recorded
// with its peer's address (Bedrock names no user), on both stores.
func TestAuditActor(t *testing.T) {
	forEachStore(t, func(t *testing.T, tr *tester) {
		bid := tr.create("name", "audit.job", "data", `{"a":1}`)
		id := tr.rotaID(bid)
		tr.ok("UpdateJob", "jobID", bid, "data", `{"a":2}`)
		tr.ok("DeleteJob", "jobID", bid)
		h, err := tr.c.History(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range h {
			if e.Audited {
				if !strings.HasPrefix(e.Actor, "bedrock 127.0.0.1:") {
					t.Errorf("%s recorded by %q, want the connection's peer", e.Action, e.Actor)
				}
				got = append(got, e.Action+": "+e.Detail)
			}
		}
		if want := "update: data replaced, remove: removed while pending"; strings.Join(got, ", ") != want {
			t.Errorf("records of a Bedrock connection: %q, want %q", strings.Join(got, ", "), want)
		}
	})
}
