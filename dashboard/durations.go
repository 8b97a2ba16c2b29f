package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/rotajobs/rota"
)

// Durations and relative times are written for people, in one style:
// a number, a space and a unit (ms, s, min, h, days), the largest units
// first: "7 days", "1 h 30 min", "90 s", "in 1 min 10 s".

const day = 24 * time.Hour

// units are the parts a duration is written in, largest first.
var units = []struct {
	d    time.Duration
	name string
}{{day, "day"}, {time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}}

// duration writes a setting's duration exactly, as its parts: "7 days",
// "1 h", "1 h 30 min", "2 min 5 s". Under two minutes it is seconds
// ("90 s"), as leases and timeouts are usually thought of; under a second,
// milliseconds. parseDuration reads it back.
func duration(d time.Duration) string {
	if d < 0 {
		return "-" + duration(-d)
	}
	switch {
	case d == 0:
		return "0 s"
	case d < time.Second:
		return trimFloat(float64(d)/float64(time.Millisecond)) + " ms"
	case d < 2*time.Minute:
		return trimFloat(d.Seconds()) + " s"
	}
	var parts []string
	rest := d
	for _, u := range units {
		if n := rest / u.d; n > 0 {
			parts = append(parts, part(int64(n), u.name))
			rest -= n * u.d
		}
	}
	if rest > 0 { // a part of a second, left after whole ones
		parts = append(parts, trimFloat(float64(rest)/float64(time.Millisecond))+" ms")
	}
	return strings.Join(parts, " ")
}

// span writes a duration roughly, by its two largest parts, truncated:
// "49 s", "1 min 10 s", "2 h 5 min", "3 days 4 h". rel uses it.
func span(d time.Duration) string {
	d = d.Abs()
	if d < time.Second {
		return "0 s"
	}
	var parts []string
	rest := d
	for _, u := range units {
		n := rest / u.d
		if n > 0 || len(parts) > 0 {
			if n > 0 {
				parts = append(parts, part(int64(n), u.name))
			}
			rest -= n * u.d
			if len(parts) == 2 || (len(parts) == 1 && n == 0) {
				break
			}
		}
	}
	return strings.Join(parts, " ")
}

func part(n int64, unit string) string {
	if unit == "day" && n != 1 {
		unit = "days"
	}
	return strconv.FormatInt(n, 10) + " " + unit
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// rel is a time relative to now: "just now", "in 49 s", "1 min 10 s ago".
func rel(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return relTo(t, time.Now())
}

func relTo(t, now time.Time) string {
	d := t.Sub(now)
	if d > 50*365*day {
		return "never"
	}
	if d.Abs() < time.Second {
		return "just now"
	}
	if d < 0 {
		return span(d) + " ago"
	}
	return "in " + span(d)
}

// parseDuration reads a duration as duration writes it ("7 days",
// "1 h 30 min", "90 s"), or as Go does ("168h", "1h30m").
func parseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		return d, nil
	}
	bad := fmt.Errorf("%w: %q is not a duration such as 90 s, 5 min, 1 h 30 min or 7 days", rota.ErrInvalid, v)
	var total time.Duration
	rest := v
	seen := false
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
		i := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
		if i <= 0 {
			return 0, bad
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, bad
		}
		rest = strings.TrimSpace(rest[i:])
		j := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) })
		if j < 0 {
			j = len(rest)
		}
		var u time.Duration
		switch strings.ToLower(rest[:j]) {
		case "ms":
			u = time.Millisecond
		case "s", "sec", "secs", "second", "seconds":
			u = time.Second
		case "m", "min", "mins", "minute", "minutes":
			u = time.Minute
		case "h", "hr", "hrs", "hour", "hours":
			u = time.Hour
		case "d", "day", "days":
			u = day
		case "w", "week", "weeks":
			u = 7 * day
		default:
			return 0, bad
		}
		total += time.Duration(n * float64(u))
		rest, seen = rest[j:], true
	}
	if !seen {
		return 0, bad
	}
	return total, nil
}
