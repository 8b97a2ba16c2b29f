package lifecycle_test

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/internal/rules/lifecycle"
	"github.com/rotajobs/rota/store"
)

func TestInUniqueWindow(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	active := []store.State{store.Pending, store.Running}
	for _, c := range []struct {
		name    string
		window  time.Duration
		states  []store.State
		state   store.State
		created time.Time
		want    bool
	}{
		{"pending, just created", time.Minute, nil, store.Pending, now, true},
		{"pending, within", time.Minute, nil, store.Pending, now.Add(-59 * time.Second), true},
		{"pending, at the window's start", time.Minute, nil, store.Pending, now.Add(-time.Minute), false},
		{"pending, before", time.Minute, nil, store.Pending, now.Add(-2 * time.Minute), false},
		{"running", time.Minute, nil, store.Running, now, true},
		{"paused", time.Minute, nil, store.Paused, now, true},
		{"completed still throttles", time.Minute, nil, store.Completed, now, true},
		{"failed", time.Minute, nil, store.Failed, now, true},
		{"cancelled does not count", time.Minute, nil, store.Cancelled, now, false},
		{"states: running counts", time.Minute, active, store.Running, now, true},
		{"states: completed does not", time.Minute, active, store.Completed, now, false},
		{"states: cancelled when asked", time.Minute, []store.State{store.Cancelled}, store.Cancelled, now, true},
		{"no window", 0, nil, store.Pending, now, false},
	} {
		p := &store.AddParams{UniqueFor: c.window, UniqueStates: c.states}
		if got := lifecycle.InUniqueWindow(p, &lifecycle.Row{State: c.state}, c.created, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if lifecycle.InUniqueWindow(&store.AddParams{UniqueFor: time.Minute}, nil, now, now) {
		t.Error("a job that is gone is in the window")
	}
}

func TestDebouncedRunAt(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if got := lifecycle.DebouncedRunAt(&store.AddParams{Debounce: 5 * time.Second}, now); !got.Equal(now.Add(5 * time.Second)) {
		t.Errorf("debounce 5s: %v, want %v", got, now.Add(5*time.Second))
	}
	if got := lifecycle.DebouncedRunAt(&store.AddParams{}, now); !got.IsZero() {
		t.Errorf("no debounce: %v, want zero (now, as any add)", got)
	}
}
