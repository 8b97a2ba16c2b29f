package engine

import (
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// TestSettingChange: a change of settings names every field that changed,
// by reflection, so that a setting added later (a rate, a burst) is
// recorded without a word in this package; a pause or resume names the
// action, and a change of nothing is no change.
func TestSettingChange(t *testing.T) {
	type settings struct {
		Type          string
		RatePerSecond float64
		Burst         int
		Rate          store.Rate
		Paused        bool
	}
	for _, c := range []struct {
		old, new       settings
		action, detail string
	}{
		{settings{Type: "a"}, settings{Type: "a", RatePerSecond: 2.5, Paused: true}, "pause type", "rate_per_second 0 → 2.5"},
		{settings{Type: "a", Paused: true}, settings{Type: "a"}, "resume type", ""},
		{settings{Type: "a", Burst: 3}, settings{Type: "a", Burst: 5}, "set type", "burst 3 → 5"},
		{settings{Type: "a", Burst: 3}, settings{Type: "a", Burst: 3}, "", ""},
		{settings{Type: "a"}, settings{Type: "a", Rate: store.Rate{N: 10, Per: time.Second}}, "set type", "rate none → 10/s"},
	} {
		action, detail := settingChange(c.old, c.new, c.old.Paused, c.new.Paused, "type")
		if action != c.action || detail != c.detail {
			t.Errorf("%+v → %+v: %q %q, want %q %q", c.old, c.new, action, detail, c.action, c.detail)
		}
	}
}
