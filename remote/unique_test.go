package remote_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// TestAddUniqueFor: a unique window, its states and debounce cross the
// wire, and the answer says the add was deduplicated.
func TestAddUniqueFor(t *testing.T) {
	_, url := serve(t)
	rs, err := remote.New(url, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	data := json.RawMessage(`{"to":"a"}`)
	p := store.AddParams{Type: "mail", UniqueFor: time.Hour, Data: data}
	res, err := rs.Add(t.Context(), []store.AddParams{p, p})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != store.Inserted || res[1].Outcome != store.Unchanged || res[1].Job.ID != res[0].Job.ID {
		t.Errorf("two adds in a window: %d %v, %d %v", res[0].Job.ID, res[0].Outcome, res[1].Job.ID, res[1].Outcome)
	}
	p.UniqueStates = []store.State{store.Completed}
	res, err = rs.Add(t.Context(), []store.AddParams{p})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != store.Inserted {
		t.Errorf("an add counting completed jobs only: %v, want inserted (unique_states lost on the wire?)", res[0].Outcome)
	}
	// Debounce crosses the wire too: the job runs an hour after the add.
	res, err = rs.Add(t.Context(), []store.AddParams{{Type: "index", Key: "doc", Debounce: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if until := time.Until(res[0].Job.RunAt); until < 59*time.Minute {
		t.Errorf("a debounced add runs in %v, want about an hour (debounce lost on the wire?)", until)
	}
}
