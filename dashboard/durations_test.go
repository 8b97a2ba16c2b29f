package dashboard

import (
	"errors"
	"testing"
	"time"

	"github.com/rotajobs/rota"
)

// TestDuration: a setting's duration reads as people write it, and reads
// back to the same value.
func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{168 * time.Hour, "7 days"},
		{24 * time.Hour, "1 day"},
		{time.Hour, "1 h"},
		{90 * time.Second, "90 s"},
		{90 * time.Minute, "1 h 30 min"},
		{5 * time.Minute, "5 min"},
		{125 * time.Second, "2 min 5 s"},
		{36 * time.Hour, "1 day 12 h"},
		{30 * time.Second, "30 s"},
		{1500 * time.Millisecond, "1.5 s"},
		{250 * time.Millisecond, "250 ms"},
		{0, "0 s"},
	} {
		if got := duration(c.d); got != c.want {
			t.Errorf("duration(%v) = %q, want %q", c.d, got, c.want)
		}
		back, err := parseDuration(c.want)
		if err != nil || back != c.d {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", c.want, back, err, c.d)
		}
	}
	if got := dur(0); got != "" {
		t.Errorf("an unset setting shows %q, want blank", got)
	}
}

// TestParseDuration: the Types form takes the dashboard's own style and
// Go's, and names what it cannot read.
func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"168h": 168 * time.Hour, "1h30m": 90 * time.Minute, "7 days": 7 * day, "2d": 2 * day,
		"1 hour 30 minutes": 90 * time.Minute, "90s": 90 * time.Second, " 5 min ": 5 * time.Minute, "1 week": 7 * day,
	} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "5", "5 fortnights", "h", "1 h x"} {
		_, err := parseDuration(in)
		if !errors.Is(err, rota.ErrInvalid) {
			t.Errorf("parseDuration(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

// TestRelativeTime: times relative to now use the same units and spacing
// whatever their size, by their two largest parts.
func TestRelativeTime(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{49 * time.Second, "in 49 s"},
		{70 * time.Second, "in 1 min 10 s"},
		{60 * time.Second, "in 1 min"},
		{2*time.Minute + 400*time.Millisecond, "in 2 min"},
		{-3 * time.Minute, "3 min ago"},
		{-(2*time.Hour + 5*time.Minute + 9*time.Second), "2 h 5 min ago"},
		{time.Hour + 5*time.Second, "in 1 h"},
		{3*day + 4*time.Hour + 7*time.Minute, "in 3 days 4 h"},
		{-day, "1 day ago"},
		{300 * time.Millisecond, "just now"},
		{100 * 365 * day, "never"},
	} {
		if got := relTo(now.Add(c.d), now); got != c.want {
			t.Errorf("relTo(now%+v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := rel(time.Time{}); got != "—" {
		t.Errorf("rel(zero) = %q, want —", got)
	}
}
