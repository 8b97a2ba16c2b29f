package storetest

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- unique adds (Bedrock's unique by name) ----

func testUnique(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("FindsAnyStateButCompleted", func(t *testing.T) {
		s := open(t)
		for _, st := range []store.State{store.Pending, store.Running, store.Failed, store.Cancelled} {
			typ := "u." + st.String()
			var j store.Job
			if st == store.Pending {
				j = addOne(t, s, store.AddParams{Type: typ, Data: raw(`{"a":1}`)})
			} else if st == store.Running {
				j = start(t, s, store.AddParams{Type: typ, Data: raw(`{"a":1}`)})
			} else {
				j = ended(t, s, store.AddParams{Type: typ, Data: raw(`{"a":1}`)}, st)
			}
			r := add(t, s, store.AddParams{Type: typ, Unique: true, Data: raw(`{"a":1}`)})[0]
			if r.Job.ID != j.ID || r.Outcome != store.Unchanged {
				t.Errorf("unique add over a %v job: id %d outcome %v, want %d unchanged", st, r.Job.ID, r.Outcome, j.ID)
			}
			// Different data without overwrite: still the same job, unchanged.
			r = add(t, s, store.AddParams{Type: typ, Unique: true, Data: raw(`{"a":2}`)})[0]
			if r.Job.ID != j.ID || r.Outcome != store.Unchanged {
				t.Errorf("unique add without overwrite: id %d outcome %v", r.Job.ID, r.Outcome)
			}
			wantJSON(t, "data after a unique add without overwrite", get(t, s, j.ID).Data, `{"a":1}`)
			if got := get(t, s, j.ID); got.State != st {
				t.Errorf("a unique add moved a %v job to %v", st, got.State)
			}
		}
		// A completed job is not found: Bedrock would have deleted it.
		done := ended(t, s, store.AddParams{Type: "u.done"}, store.Completed)
		r := add(t, s, store.AddParams{Type: "u.done", Unique: true})[0]
		if r.Job.ID == done.ID || r.Outcome != store.Inserted {
			t.Errorf("unique add over a completed job: id %d outcome %v, want a new job", r.Job.ID, r.Outcome)
		}
		// Two unique adds in one batch: the second finds the first.
		res := add(t, s, store.AddParams{Type: "u.batch", Unique: true}, store.AddParams{Type: "u.batch", Unique: true})
		if res[0].Outcome != store.Inserted || res[1].Outcome != store.Unchanged || res[0].Job.ID != res[1].Job.ID {
			t.Errorf("two unique adds in a batch: %v %d, %v %d", res[0].Outcome, res[0].Job.ID, res[1].Outcome, res[1].Job.ID)
		}
	})

	t.Run("Overwrite", func(t *testing.T) {
		s := open(t)
		runAt := time.Now().Add(time.Hour)
		j := addOne(t, s, store.AddParams{Type: "u", Data: raw(`{"z":1,"a":{"y":2,"b":3},"m":[1,2]}`), Priority: 7,
			Schedule: "FINISHED, +1 HOUR", RunAt: runAt})
		r := add(t, s, store.AddParams{Type: "u", Unique: true, Overwrite: true, Data: raw(`{"new":true,"a":{"b":null,"c":4},"z":9}`)})[0]
		if r.Job.ID != j.ID || r.Outcome != store.Updated {
			t.Fatalf("overwrite: id %d outcome %v, want %d updated", r.Job.ID, r.Outcome, j.ID)
		}
		got := get(t, s, j.ID)
		// Merge patch, keys in their order, new ones appended.
		if string(got.Data) != `{"z":9,"a":{"y":2,"c":4},"m":[1,2],"new":true}` {
			t.Errorf("overwritten data %s, want the merge patch with key order kept", got.Data)
		}
		// Priority and schedule become the add's (none given: cleared);
		// state and run time stay.
		if got.Priority != 0 || got.Schedule != "" || got.State != store.Pending {
			t.Errorf("after overwrite: priority %d schedule %q state %v, want 0, none, pending", got.Priority, got.Schedule, got.State)
		}
		sameTime(t, "run_at after overwrite", got.RunAt, runAt)
		// The same data again changes nothing.
		r = add(t, s, store.AddParams{Type: "u", Unique: true, Overwrite: true, Data: got.Data})[0]
		if r.Outcome != store.Unchanged {
			t.Errorf("overwrite with the same data: outcome %v, want unchanged", r.Outcome)
		}
		// Overwrite sets a schedule and priority when given.
		add(t, s, store.AddParams{Type: "u", Unique: true, Overwrite: true, Data: raw(`{"v":2}`), Priority: 3, Schedule: "daily"})
		got = get(t, s, j.ID)
		if got.Priority != 3 || got.Schedule != "DAILY" || got.Slot.IsZero() {
			t.Errorf("after overwrite with a schedule: priority %d schedule %q slot %v", got.Priority, got.Schedule, got.Slot)
		}
		// A running job is overwritten too.
		k := start(t, s, store.AddParams{Type: "w", Data: raw(`{"a":1}`)})
		add(t, s, store.AddParams{Type: "w", Unique: true, Overwrite: true, Data: raw(`{"b":2}`)})
		if got := get(t, s, k.ID); got.State != store.Running || string(got.Data) != `{"a":1,"b":2}` {
			t.Errorf("overwrite of a running job: %v %s", got.State, got.Data)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := open(t)
		_, err := s.Add(t.Context(), []store.AddParams{{Type: "u", Unique: true, Key: "k"}})
		wantErr(t, "unique with a key", err, store.ErrInvalid)
		_, err = s.Add(t.Context(), []store.AddParams{{Type: "u", Overwrite: true}})
		wantErr(t, "overwrite without unique", err, store.ErrInvalid)
	})
}
