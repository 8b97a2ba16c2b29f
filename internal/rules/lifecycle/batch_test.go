package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rotajobs/rota/store"
)

// TestBatchMove: every move between states counts in a batch as an
// ending (by its outcome), a run again after one, or nothing.
func TestBatchMove(t *testing.T) {
	at := func(s store.State) *Place { return &Place{Type: "t", State: s} }
	for _, c := range []struct {
		name     string
		from, to *Place
		want     store.BatchCounts
		ok       bool
	}{
		{"complete", at(store.Running), at(store.Completed), store.BatchCounts{Remaining: -1, Completed: 1}, true},
		{"fail for good", at(store.Running), at(store.Failed), store.BatchCounts{Remaining: -1, Failed: 1}, true},
		{"cancel a pending job", at(store.Pending), at(store.Cancelled), store.BatchCounts{Remaining: -1, Cancelled: 1}, true},
		{"cancel a paused job", at(store.Paused), at(store.Cancelled), store.BatchCounts{Remaining: -1, Cancelled: 1}, true},
		{"remove before it ended", at(store.Running), nil, store.BatchCounts{Remaining: -1, Removed: 1}, true},
		{"remove after it ended", at(store.Completed), nil, store.BatchCounts{}, false},
		{"retry", at(store.Running), at(store.Pending), store.BatchCounts{}, false},
		{"claim", at(store.Pending), at(store.Running), store.BatchCounts{}, false},
		{"wait for children", at(store.Running), at(store.Paused), store.BatchCounts{}, false},
		{"run again after completing", at(store.Completed), at(store.Pending), store.BatchCounts{Remaining: 1, Completed: -1}, true},
		{"run again after failing", at(store.Failed), at(store.Pending), store.BatchCounts{Remaining: 1, Failed: -1}, true},
		{"run again after a cancel", at(store.Cancelled), at(store.Pending), store.BatchCounts{Remaining: 1, Cancelled: -1}, true},
		{"no move", nil, nil, store.BatchCounts{}, false},
	} {
		got, ok := BatchMove(c.from, c.to)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if got := BatchCompleted(3); got != (store.BatchCounts{Remaining: -3, Completed: 3}) {
		t.Errorf("BatchCompleted(3) = %+v", got)
	}
}

func TestBatchDoneAndJoin(t *testing.T) {
	for _, c := range []struct {
		b    store.Batch
		done bool
	}{
		{store.Batch{}, true}, // no members, closed
		{store.Batch{Counts: store.BatchCounts{Total: 2, Completed: 2}}, true},
		{store.Batch{Counts: store.BatchCounts{Total: 2, Remaining: 1, Completed: 1}}, false},
		{store.Batch{Open: true, Counts: store.BatchCounts{Total: 2, Completed: 2}}, false},
		{store.Batch{Done: true}, false}, // done before: not again
	} {
		if got := BatchDone(&c.b); got != c.done {
			t.Errorf("BatchDone(%+v) = %v, want %v", c.b, got, c.done)
		}
	}
	if err := JoinBatch(4, nil, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("joining a batch that does not exist: %v", err)
	}
	if err := JoinBatch(4, &store.Batch{Done: true}, nil); !errors.Is(err, store.ErrFinished) {
		t.Errorf("joining a done batch: %v", err)
	}
	if err := JoinBatch(4, &store.Batch{Open: true}, nil); err != nil {
		t.Errorf("joining an open batch: %v", err)
	}
}

// TestBatchReach: a batch keeps the distinct groups and types of its
// members and callbacks, up to store.MaxBatchReach, past which it is wide
// and in no scoped reach; a join out of reach finds no batch.
func TestBatchReach(t *testing.T) {
	acme, err := store.NewReach([]string{"acme-*"}, []string{"mail.*"})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatchReach(&store.NewBatch{OnComplete: &store.AddParams{Type: "mail.report", Group: "acme-1"}}, acme)
	if !slices.Equal(b.Groups, []string{"acme-1"}) || !slices.Equal(b.Types, []string{"mail.report"}) || b.Wide {
		t.Fatalf("a new batch's reach: %v %v %v; want its callback's", b.Groups, b.Types, b.Wide)
	}
	if !BatchWiden(&b, "mail.send", "acme-1") || BatchWiden(&b, "mail.send", "acme-1") {
		t.Error("BatchWiden reports a change only for what the batch did not have")
	}
	if !acme.HasBatch(&b) || JoinBatch(1, &b, acme) != nil {
		t.Errorf("a batch of acme's mails is out of acme's reach: %v %v", b.Groups, b.Types)
	}
	BatchWiden(&b, "mail.send", "globex-1")
	if acme.HasBatch(&b) {
		t.Error("a batch with a globex member is in acme's reach")
	}
	if err := JoinBatch(1, &b, acme); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("acme joining a batch with a globex member: %v; want ErrNotFound", err)
	}
	if !(*store.Reach)(nil).HasBatch(&b) {
		t.Error("an unscoped reach does not hold every batch")
	}
	w := store.Batch{}
	for i := range store.MaxBatchReach + 1 {
		BatchWiden(&w, "mail.send", fmt.Sprintf("acme-%d", i))
	}
	if !w.Wide || w.Groups != nil || acme.HasBatch(&w) || !(*store.Reach)(nil).HasBatch(&w) {
		t.Errorf("a batch over %d groups: wide %v, groups %d; want wide, in no scoped reach", store.MaxBatchReach, w.Wide, len(w.Groups))
	}
}

// TestBatchCallbacks: on_complete always, on_success only when every
// member completed; each gets the batch in its data, after its own
// fields, and is no member of a batch.
func TestBatchCallbacks(t *testing.T) {
	b := &store.Batch{ID: 9, Counts: store.BatchCounts{Total: 2, Completed: 1, Failed: 1},
		OnComplete: &store.AddParams{Type: "merge", Data: json.RawMessage(`{"report":"q3"}`), Batch: 3},
		OnSuccess:  &store.AddParams{Type: "mail"}}
	adds, which, err := BatchCallbacks(b)
	if err != nil || len(adds) != 1 || which[0] != CallbackComplete || adds[0].Batch != 0 {
		t.Fatalf("a batch with a failure: %+v %v %v, want on_complete only", adds, which, err)
	}
	want := `{"report":"q3","batch":{"id":9,"counts":{"total":2,"remaining":0,"completed":1,"failed":1,"cancelled":0,"removed":0},"callback":"complete"}}`
	if string(adds[0].Data) != want {
		t.Errorf("on_complete's data %s, want %s", adds[0].Data, want)
	}
	b.Counts = store.BatchCounts{Total: 2, Completed: 2}
	adds, which, err = BatchCallbacks(b)
	if err != nil || len(adds) != 2 || which[1] != CallbackSuccess || string(adds[1].Data) !=
		`{"batch":{"id":9,"counts":{"total":2,"remaining":0,"completed":2,"failed":0,"cancelled":0,"removed":0},"callback":"success"}}` {
		t.Errorf("every member completed: %+v %v %v", adds, which, err)
	}
	for data, want := range map[string]string{
		` { } `:      `{"batch":`,
		`null`:       `{"batch":`,
		`{"a":[1]} `: `{"a":[1],"batch":`,
	} {
		got, err := withBatch([]byte(data), b, CallbackComplete)
		if err != nil || string(got[:len(want)]) != want || !json.Valid(got) {
			t.Errorf("withBatch(%s) = %s, %v", data, got, err)
		}
	}
	if _, err := withBatch([]byte(`[1]`), b, CallbackComplete); err == nil {
		t.Error("withBatch of an array: no error")
	}
}

// TestBatchOwner: a scoped caller's batch with nothing in it is in the
// reach of callers with its patterns (or all of that kind) only, until
// its first job joins, whose group and type then replace them.
func TestBatchOwner(t *testing.T) {
	reach := func(groups, types []string) *store.Reach {
		r, err := store.NewReach(groups, types)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	acme := reach([]string{"acme-*"}, nil)
	b := NewBatchReach(&store.NewBatch{Open: true}, acme)
	for _, c := range []struct {
		name  string
		r     *store.Reach
		wants bool
	}{
		{"acme", acme, true},
		{"acme, and more", reach([]string{"acme-*", "beta"}, nil), true},
		{"unscoped", nil, true},
		{"every group, some types", reach(nil, []string{"mail.*"}), false},
		{"beta", reach([]string{"beta"}, nil), false},
		{"one of acme's groups", reach([]string{"acme-1"}, nil), false},
		{"acme's groups, some types", reach([]string{"acme-*"}, []string{"mail.*"}), false},
	} {
		if got := c.r.HasBatch(&b); got != c.wants {
			t.Errorf("%s reaches acme's empty batch: %v, want %v", c.name, got, c.wants)
		}
	}
	if !BatchWiden(&b, "report", "acme-1") || !slices.Equal(b.Groups, []string{"acme-1"}) || !slices.Equal(b.Types, []string{"report"}) {
		t.Errorf("after the first job: %q %q, want its group and type alone", b.Groups, b.Types)
	}
	if !reach([]string{"acme-1"}, nil).HasBatch(&b) {
		t.Error("a batch of acme-1's job is out of acme-1's reach")
	}
	if nb := NewBatchReach(&store.NewBatch{}, nil); nb.Groups != nil || nb.Types != nil {
		t.Errorf("an unscoped caller's empty batch keeps %q %q, want nothing", nb.Groups, nb.Types)
	}
}
