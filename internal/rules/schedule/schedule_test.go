package schedule

import (
	"strings"
	"testing"
	"time"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.DateTime, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustParse(t *testing.T, s string) Schedule {
	t.Helper()
	sc, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return sc
}

// TestNextRepeat covers the grammar with the examples of the reference
// (bedrock-jobs-protocol.md §4.1) and SQLite's date arithmetic.
func TestNextRepeat(t *testing.T) {
	now := ts("2026-11-24 15:42:17")
	for _, c := range []struct {
		repeat    string
		scheduled string // the slot the job stood for; "" means none
		started   string
		want      string
	}{
		// The reference's examples.
		{"SCHEDULED, START OF DAY, +5 MINUTES, START OF HOUR", "2026-11-24 13:10:00", "", "2026-11-24 00:00:00"},
		{"SCHEDULED, START OF DAY, +30 MINUTES, START OF HOUR, +5 MINUTES", "2026-11-24 13:10:00", "", "2026-11-24 00:05:00"},
		// +30 SECONDS from an hour ago (plus 5 s of phase): the first
		// future 30-s slot on that phase.
		{"SCHEDULED, +30 SECONDS", "2026-11-24 14:42:22", "", "2026-11-24 15:42:22"},
		{"SCHEDULED, +30 SECONDS", "2026-11-24 14:42:17", "", "2026-11-24 15:42:47"},
		// +5 HOURS from 10 h ago: not re-anchored (interval ≥ 4 h), in the past.
		{"SCHEDULED, +5 HOURS", "2026-11-24 05:42:17", "", "2026-11-24 10:42:17"},
		// +1 HOUR, START OF HOUR from (now−2h):30: snapping modifiers are
		// never re-anchored.
		{"SCHEDULED, +1 HOUR, START OF HOUR", "2026-11-24 13:30:00", "", "2026-11-24 14:00:00"},
		// Sub-second parts are dropped, as DATETIME drops them.
		{"SCHEDULED, +1 DAY", "2026-11-24 15:00:00.750", "", "2026-11-25 15:00:00"},
		// Month overflow normalises as SQLite does.
		{"SCHEDULED, +1 MONTH", "2023-01-31 09:00:00", "", "2023-03-03 09:00:00"},
		{"SCHEDULED, +1 MONTH", "2024-01-31 09:00:00", "", "2024-03-02 09:00:00"},
		{"SCHEDULED, -1 MONTH", "2024-03-31 09:00:00", "", "2024-03-02 09:00:00"},
		{"SCHEDULED, +1 YEAR", "2024-02-29 09:00:00", "", "2025-03-01 09:00:00"},
		{"SCHEDULED, +12 MONTHS, START OF MONTH", "2026-01-15 09:00:00", "", "2027-01-01 00:00:00"},
		{"SCHEDULED, START OF YEAR, +1 YEAR", "2026-06-15 09:00:00", "", "2027-01-01 00:00:00"},
		// WEEKDAY advances to the day, or stays on it.
		{"SCHEDULED, WEEKDAY 1", "2026-11-24 08:00:00", "", "2026-11-30 08:00:00"}, // a Tuesday → Monday
		{"SCHEDULED, WEEKDAY 2", "2026-11-24 08:00:00", "", "2026-11-24 08:00:00"}, // already Tuesday
		{"SCHEDULED, +1 DAY, WEEKDAY 0, START OF DAY", "2026-11-28 08:00:00", "", "2026-11-29 00:00:00"},
		// STARTED and FINISHED.
		{"STARTED, +1 HOUR", "2026-11-20 00:00:00", "2026-11-24 15:40:00", "2026-11-24 16:40:00"},
		{"FINISHED, +1 HOUR", "2026-11-20 00:00:00", "2026-11-24 15:40:00", "2026-11-24 16:42:17"},
		{"FINISHED, +90 SECONDS, START OF HOUR", "", "", "2026-11-24 15:00:00"},
		{"FINISHED, -1 DAY", "", "", "2026-11-23 15:42:17"},
		// Case, spaces and empty parts as Bedrock tolerates them.
		{"finished, +1 hour", "", "", "2026-11-24 16:42:17"},
		{"FINISHED,  +1 HOUR,,", "", "", "2026-11-24 16:42:17"},
		{",FINISHED,+2 MINUTE", "", "", "2026-11-24 15:44:17"},
		{"FINISHED, +99999999 SECONDS", "", "", now.Add(99999999 * time.Second).Format(time.DateTime)},
		// Canned repeats, all from now.
		{"HOURLY", "2020-01-01 00:00:00", "", "2026-11-24 16:00:00"},
		{"daily", "", "", "2026-11-25 00:00:00"},
		{"WEEKLY", "", "", "2026-11-29 00:00:00"}, // the next Sunday
		// Re-anchoring needs base SCHEDULED, a positive interval under 4 h
		// and offsets only.
		{"SCHEDULED, +3 HOURS, +59 MINUTES", "2026-11-24 01:00:00", "", "2026-11-24 16:56:00"},
		{"SCHEDULED, +4 HOURS", "2026-11-24 01:00:00", "", "2026-11-24 05:00:00"},
		{"SCHEDULED, -1 HOUR", "2026-11-24 01:00:00", "", "2026-11-24 00:00:00"},
		{"SCHEDULED, +1 MINUTE", "2026-11-24 15:41:17", "", "2026-11-24 15:43:17"}, // exactly now is not future
		{"SCHEDULED, +1 MINUTE", "2026-11-24 15:41:18", "", "2026-11-24 15:42:18"},
	} {
		s := mustParse(t, c.repeat)
		var tm Times
		tm.Now = now
		if c.scheduled != "" {
			tm.Scheduled = ts(c.scheduled)
		}
		if c.started != "" {
			tm.Started = ts(c.started)
		}
		if got := s.Next(tm).Format(time.DateTime); got != c.want {
			t.Errorf("%q from %q: next = %s, want %s", c.repeat, c.scheduled, got, c.want)
		}
	}
}

func TestParseRepeatErrors(t *testing.T) {
	for _, c := range []struct{ repeat, names string }{
		{"SCHEDULED", "at least one modifier"},
		{"FINISHED ,+1 HOUR", `base "FINISHED "`},
		{"NOW, +1 HOUR", "neither a repeat"},
		{"FINISHED, +1 WEEK", `modifier "+1 WEEK"`},
		{"FINISHED, 1 HOUR", `modifier "1 HOUR"`},
		{"FINISHED, +1 HOUR ", `modifier "+1 HOUR "`},
		{"FINISHED, +1  HOUR", `modifier "+1  HOUR"`},
		{"FINISHED, +1000 DAYS", `modifier "+1000 DAYS"`},
		{"FINISHED, +123456789 SECONDS", `modifier "+123456789 SECONDS"`},
		{"FINISHED, +1.5 HOURS", `modifier "+1.5 HOURS"`},
		{"FINISHED, WEEKDAY 7", `modifier "WEEKDAY 7"`},
		{"FINISHED, START OF WEEK", `modifier "START OF WEEK"`},
		{"HOURLY, +1 HOUR", `base "HOURLY"`}, // canned names stand alone
		{" DAILY", "at least one modifier"},
		{"SCHEDULED, +1 HOUR, bogus", `modifier "BOGUS"`},
		{strings.Repeat("x", MaxLength+1), "limit"},
	} {
		_, err := Parse(c.repeat)
		if err == nil {
			t.Errorf("Parse(%q) accepted", c.repeat)
			continue
		}
		if !strings.Contains(err.Error(), c.names) {
			t.Errorf("Parse(%q) = %v, want it to name %s", c.repeat, err, c.names)
		}
	}
}

func TestStoredText(t *testing.T) {
	for in, want := range map[string]string{
		"finished, +1 hour":           "FINISHED, +1 HOUR",
		"hourly":                      "HOURLY",
		"*/5 * * * *":                 "*/5 * * * *",
		"CRON_TZ=Europe/Paris @daily": "CRON_TZ=Europe/Paris @daily",
	} {
		if got := mustParse(t, in).String(); got != want {
			t.Errorf("Parse(%q).String() = %q, want %q", in, got, want)
		}
	}
	if !(Schedule{}).IsZero() || mustParse(t, "").String() != "" {
		t.Error("the empty schedule is not zero")
	}
}

func TestModifiers(t *testing.T) {
	for _, ok := range []string{"+5 MINUTES", "+1 hour", "-3 DAYS", "WEEKDAY 3", "+1 DAY, START OF DAY"} {
		if err := ValidModifiers(ok); err != nil {
			t.Errorf("ValidModifiers(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "10", "START OF HOUR", "+1 WEEK", ","} {
		if err := ValidModifiers(bad); err == nil {
			t.Errorf("ValidModifiers(%q) accepted", bad)
		}
	}
	got, err := Modify(ts("2026-11-24 15:42:17").Add(400*time.Millisecond), "+5 MINUTES")
	if err != nil || got.Format(time.DateTime) != "2026-11-24 15:47:17" {
		t.Errorf("Modify = %v, %v", got, err)
	}
}

func TestCron(t *testing.T) {
	utc := func(s string) string { return ts(s).Format(time.RFC3339) }
	for _, c := range []struct{ expr, from, want string }{
		{"*/5 * * * *", "2026-11-24 15:42:17", utc("2026-11-24 15:45:00")},
		{"0 9 * * 1-5", "2026-11-27 10:00:00", utc("2026-11-30 09:00:00")}, // Friday → Monday
		{"@daily", "2026-11-24 15:42:17", utc("2026-11-25 00:00:00")},
		{"@hourly", "2026-11-24 15:42:17", utc("2026-11-24 16:00:00")},
		{"@every 90s", "2026-11-24 15:42:00", utc("2026-11-24 15:43:30")},
		{"CRON_TZ=Europe/Paris 0 9 * * *", "2026-11-24 09:00:00", utc("2026-11-25 08:00:00")}, // CET = UTC+1
		{"CRON_TZ=Asia/Kolkata 30 0 * * *", "2026-11-24 12:00:00", utc("2026-11-24 19:00:00")},
	} {
		s := mustParse(t, c.expr)
		if !s.IsCron() {
			t.Errorf("%q is not read as cron", c.expr)
		}
		got := s.Next(Times{Scheduled: ts(c.from), Now: ts(c.from)}).Format(time.RFC3339)
		if got != c.want {
			t.Errorf("%q after %s = %s, want %s", c.expr, c.from, got, c.want)
		}
	}
	for _, bad := range []string{"* * * *", "61 * * * *", "CRON_TZ=Nowhere/City 0 9 * * *", "@fortnightly", "every day"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "cron") {
			t.Errorf("Parse(%q) = %v, want a cron error", bad, err)
		}
	}
}

// TestCronDST: a daily job in a zone with daylight saving time runs once
// each local day across both transitions: at the same wall-clock time, an
// hour that does not exist moves to the next that does, and an hour that
// happens twice runs once.
func TestCronDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	runs := func(expr string, from time.Time, n int) []time.Time {
		s := mustParse(t, expr)
		var out []time.Time
		slot := from
		for range n {
			slot = s.Next(Times{Scheduled: slot, Now: slot})
			out = append(out, slot)
		}
		return out
	}
	// 2026-03-08 02:00 does not exist in New York (clocks jump to 03:00).
	spring := runs("CRON_TZ=America/New_York 30 2 * * *", time.Date(2026, 3, 6, 12, 0, 0, 0, ny), 4)
	days := map[int]int{}
	for _, r := range spring {
		days[r.In(ny).YearDay()]++
	}
	for _, r := range spring {
		if days[r.In(ny).YearDay()] != 1 {
			t.Errorf("spring forward: runs %v: two runs on one local day", spring)
		}
	}
	if d := spring[len(spring)-1].Sub(spring[0]); d < 60*time.Hour || d > 74*time.Hour {
		t.Errorf("spring forward: runs %v span %v, want about three days", spring, d)
	}
	// 2026-11-01 01:00–02:00 happens twice in New York.
	fall := runs("CRON_TZ=America/New_York 30 1 * * *", time.Date(2026, 10, 30, 12, 0, 0, 0, ny), 4)
	for i := 1; i < len(fall); i++ {
		if fall[i].In(ny).YearDay() == fall[i-1].In(ny).YearDay() {
			t.Errorf("fall back: runs %v: two runs on one local day", fall)
		}
		if fall[i].In(ny).Hour() != 1 || fall[i].In(ny).Minute() != 30 {
			t.Errorf("fall back: run %v is not at 01:30 local", fall[i].In(ny))
		}
	}
	// UTC fixed intervals ignore local time.
	every := runs("CRON_TZ=America/New_York @every 1h", time.Date(2026, 11, 1, 0, 0, 0, 0, ny), 3)
	for i := 1; i < len(every); i++ {
		if every[i].Sub(every[i-1]) != time.Hour {
			t.Errorf("@every 1h across fall back: %v", every)
		}
	}
}

func TestAfter(t *testing.T) {
	now := ts("2026-11-24 15:42:17")
	for _, c := range []struct{ expr, slot, want string }{
		{"SCHEDULED, +5 HOURS", "2026-11-24 05:42:17", "2026-11-24 20:42:17"},
		{"SCHEDULED, +1 HOUR, START OF HOUR", "2026-11-24 13:30:00", "2026-11-24 16:00:00"},
		{"SCHEDULED, +1 MONTH", "2025-01-31 09:00:00", "2026-12-03 09:00:00"},
		{"0 * * * *", "2026-11-20 00:00:00", "2026-11-24 16:00:00"},
		{"FINISHED, +1 DAY", "2026-11-20 00:00:00", "2026-11-25 00:00:00"},
		{"FINISHED, -1 DAY", "2026-11-20 00:00:00", "2026-11-24 15:42:18"},
		{"SCHEDULED, +1 HOUR", "2026-11-24 17:00:00", "2026-11-24 17:00:00"}, // already future
	} {
		got := mustParse(t, c.expr).After(ts(c.slot), now).Format(time.DateTime)
		if got != c.want {
			t.Errorf("%q after %s: %s, want %s", c.expr, c.slot, got, c.want)
		}
	}
}
