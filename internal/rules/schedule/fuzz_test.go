package schedule

import (
	"strings"
	"testing"
	"time"
)

// FuzzParse: any text parses or fails with an error, never panics; what
// parses computes next runs that keep moving forward, and parses again to
// the same schedule from its stored text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SCHEDULED, +1 HOUR", "finished, +90 seconds, start of hour", "STARTED, -1 DAY, WEEKDAY 3",
		"HOURLY", "daily", "WEEKLY", "*/5 * * * *", "@every 1h30m", "CRON_TZ=Europe/Paris 0 9 * * 1-5",
		"SCHEDULED", ",,,", "FINISHED ,+1 HOUR", "SCHEDULED, +12 MONTHS, START OF YEAR",
	} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 24, 15, 42, 17, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if text == "" {
			return
		}
		again, err := Parse(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("stored text %q of %q does not parse back: %v", s.String(), text, err)
		}
		next := s.Next(Times{Scheduled: now.Add(-time.Hour), Started: now.Add(-time.Minute), Now: now})
		if s.IsCron() && !next.IsZero() && !next.After(now.Add(-time.Hour)) {
			t.Fatalf("%q: cron next %v is not after its slot", text, next)
		}
		if after := s.After(now.Add(-24*time.Hour), now); !after.After(now) {
			t.Fatalf("%q: After gave %v, not after %v", text, after, now)
		}
		if !s.IsCron() && strings.ToUpper(text) != s.String() {
			t.Fatalf("repeat %q stored as %q", text, s.String())
		}
	})
}
