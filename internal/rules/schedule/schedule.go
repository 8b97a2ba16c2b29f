// Package schedule computes when a recurring job runs next. It reads two
// notations: Bedrock::Jobs' repeat grammar ("SCHEDULED, +1 HOUR", "DAILY"),
// with the exact date arithmetic Bedrock gets from SQLite, and cron
// expressions ("*/5 * * * *", "@daily", "CRON_TZ=Europe/Paris 0 9 * * 1-5"),
// parsed by github.com/robfig/cron/v3.
//
// The package is pure: it reads no clock. The job's rules
// (internal/rules/lifecycle) pass the times a repeat is computed from and apply
// the missed-slot policy.
package schedule

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxLength bounds a schedule's text.
const MaxLength = 1024

// Base is what a repeat is computed from.
type Base uint8

const (
	// Scheduled: the time the job was due (its previous slot), which keeps
	// a fixed phase.
	Scheduled Base = iota + 1
	// Started: the time its last run started.
	Started
	// Finished: the time its last run finished (now).
	Finished
)

// canned are Bedrock's whole-string repeats, as its code implements them
// (not as its documentation describes them): all count from now.
type canned uint8

const (
	hourly canned = iota + 1 // the top of the next hour
	daily                    // the next midnight, UTC
	weekly                   // the next Sunday midnight strictly after today, UTC
)

// Schedule is a parsed repeat or cron expression. The zero value is no
// schedule.
type Schedule struct {
	text   string
	canned canned
	base   Base
	mods   []modifier
	// offsets: every modifier is a signed offset, so the interval is fixed
	// and a missed SCHEDULED slot may be re-anchored (see Next).
	offsets bool
	cron    cron.Schedule // a cronSchedule
}

// Times are the instants a next run is computed from.
type Times struct {
	// Scheduled is the slot the job last stood for: the run time it had
	// when it was accepted.
	Scheduled time.Time
	// Started is when its last run started; zero means Now.
	Started time.Time
	// Now is when the run finished.
	Now time.Time
}

// IsZero reports whether s is no schedule.
func (s Schedule) IsZero() bool { return s.text == "" }

// String returns the schedule as stored: a repeat upper-cased, as Bedrock
// stores it; a cron expression as written.
func (s Schedule) String() string { return s.text }

// IsCron reports whether s is a cron expression rather than a repeat.
func (s Schedule) IsCron() bool { return s.cron != nil }

// Parse reads a repeat or a cron expression; "" is no schedule. An error
// names the part that is wrong.
func Parse(text string) (Schedule, error) {
	if text == "" {
		return Schedule{}, nil
	}
	if len(text) > MaxLength {
		return Schedule{}, fmt.Errorf("schedule is %d bytes, more than the limit of %d", len(text), MaxLength)
	}
	if looksLikeRepeat(text) {
		return ParseRepeat(text)
	}
	c, err := parseCron(text)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q is neither a repeat (SCHEDULED|STARTED|FINISHED followed by modifiers such as +1 HOUR, or HOURLY|DAILY|WEEKLY) nor a cron expression: %v", text, err)
	}
	return Schedule{text: text, cron: cronSchedule{c}}, nil
}

// cronParser reads standard 5-field expressions and @ descriptors
// (@daily, @every 90s), with an optional CRON_TZ=Zone prefix.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseCron is cronParser.Parse, which panics on some malformed time zone
// prefixes ("TZ=" alone): such a panic is a parse error.
func parseCron(text string) (c cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("malformed expression (%v)", r)
		}
	}()
	return cronParser.Parse(text)
}

// looksLikeRepeat tells the two notations apart by the first word: a repeat
// starts with a base or is a canned name; cron never does.
func looksLikeRepeat(text string) bool {
	parts := splitList(strings.ToUpper(text))
	if len(parts) == 0 {
		return false
	}
	first := parts[0]
	if i := strings.IndexByte(first, ' '); i >= 0 {
		first = first[:i]
	}
	switch first {
	case "SCHEDULED", "STARTED", "FINISHED", "HOURLY", "DAILY", "WEEKLY":
		return true
	}
	return false
}

// ParseRepeat reads Bedrock's repeat grammar exactly: the whole string
// HOURLY, DAILY or WEEKLY; or, upper-cased and split on commas (empty parts
// dropped, leading spaces trimmed, trailing ones kept), a base SCHEDULED,
// STARTED or FINISHED followed by at least one modifier:
//
//	+N|-N SECOND(S)   (N of 1 to 8 digits)
//	+N|-N MINUTE(S)|HOUR(S)|DAY(S)|MONTH(S)|YEAR(S)   (N of 1 to 3 digits)
//	START OF HOUR|DAY|MONTH|YEAR
//	WEEKDAY N   (0 is Sunday)
func ParseRepeat(text string) (Schedule, error) {
	upper := strings.ToUpper(text)
	switch upper {
	case "HOURLY":
		return Schedule{text: upper, canned: hourly}, nil
	case "DAILY":
		return Schedule{text: upper, canned: daily}, nil
	case "WEEKLY":
		return Schedule{text: upper, canned: weekly}, nil
	}
	parts := splitList(upper)
	if len(parts) < 2 {
		return Schedule{}, fmt.Errorf("repeat %q: want a base (SCHEDULED, STARTED or FINISHED) and at least one modifier, separated by commas", text)
	}
	s := Schedule{text: upper, offsets: true}
	switch parts[0] {
	case "SCHEDULED":
		s.base = Scheduled
	case "STARTED":
		s.base = Started
	case "FINISHED":
		s.base = Finished
	default:
		return Schedule{}, fmt.Errorf("repeat %q: base %q is not SCHEDULED, STARTED or FINISHED", text, parts[0])
	}
	for _, p := range parts[1:] {
		m, err := parseModifier(p, true)
		if err != nil {
			return Schedule{}, fmt.Errorf("repeat %q: %w", text, err)
		}
		if m.kind != offset {
			s.offsets = false
		}
		s.mods = append(s.mods, m)
	}
	return s, nil
}

// ValidModifiers reports whether text is a list of date modifiers that
// Bedrock accepts for retryAfter: the modifiers of a repeat, without START
// OF HOUR (which only repeats know).
func ValidModifiers(text string) error {
	parts := splitList(strings.ToUpper(text))
	if len(parts) == 0 {
		return fmt.Errorf("%q has no modifier", text)
	}
	for _, p := range parts {
		if _, err := parseModifier(p, false); err != nil {
			return fmt.Errorf("%q: %w", text, err)
		}
	}
	return nil
}

// Modify applies date modifiers (as ValidModifiers accepts) to t, as
// SQLite's DATETIME(t, modifier, ...) would: the result has whole seconds.
func Modify(t time.Time, text string) (time.Time, error) {
	t = t.UTC().Truncate(time.Second)
	for _, p := range splitList(strings.ToUpper(text)) {
		m, err := parseModifier(p, false)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: %w", text, err)
		}
		t = m.apply(t)
	}
	return t, nil
}

// splitList is Bedrock's SParseList: split on commas, drop empty items,
// trim leading spaces only.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimLeft(p, " ")
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

type modKind uint8

const (
	offset modKind = iota + 1
	startOf
	weekday
)

type unit uint8

const (
	second unit = iota + 1
	minute
	hour
	day
	month
	year
)

type modifier struct {
	kind modKind
	n    int  // offset: signed count; weekday: 0..6
	unit unit // offset: the unit; startOf: hour, day, month or year
}

// The modifier patterns Bedrock checks (libstuff's SIsValidSQLiteDateModifier),
// anchored, on the upper-cased part.
var (
	secondsRE = regexp.MustCompile(`^([+-])(\d{1,8}) SECONDS?$`)
	offsetRE  = regexp.MustCompile(`^([+-])(\d{1,3}) (YEAR|MONTH|DAY|HOUR|MINUTE)S?$`)
	startRE   = regexp.MustCompile(`^START OF (DAY|MONTH|YEAR)$`)
	weekdayRE = regexp.MustCompile(`^WEEKDAY ([0-6])$`)
)

var errModifier = errors.New("want +N or -N SECONDS, MINUTES, HOURS, DAYS, MONTHS or YEARS, START OF HOUR, DAY, MONTH or YEAR, or WEEKDAY 0-6 (0 is Sunday)")

func parseModifier(p string, hourOK bool) (modifier, error) {
	if p == "START OF HOUR" && hourOK {
		return modifier{kind: startOf, unit: hour}, nil
	}
	if m := secondsRE.FindStringSubmatch(p); m != nil {
		return modifier{kind: offset, n: signed(m[1], m[2]), unit: second}, nil
	}
	if m := offsetRE.FindStringSubmatch(p); m != nil {
		u := map[string]unit{"YEAR": year, "MONTH": month, "DAY": day, "HOUR": hour, "MINUTE": minute}[m[3]]
		return modifier{kind: offset, n: signed(m[1], m[2]), unit: u}, nil
	}
	if m := startRE.FindStringSubmatch(p); m != nil {
		u := map[string]unit{"DAY": day, "MONTH": month, "YEAR": year}[m[1]]
		return modifier{kind: startOf, unit: u}, nil
	}
	if m := weekdayRE.FindStringSubmatch(p); m != nil {
		return modifier{kind: weekday, n: int(m[1][0] - '0')}, nil
	}
	if p == "START OF HOUR" {
		return modifier{}, fmt.Errorf("modifier %q is valid in a repeat only", p)
	}
	return modifier{}, fmt.Errorf("modifier %q: %w", p, errModifier)
}

func signed(sign, digits string) int {
	n, _ := strconv.Atoi(digits) // at most 8 digits, checked by the pattern
	if sign == "-" {
		return -n
	}
	return n
}

// apply is SQLite's DATETIME(t, m) on a UTC time of whole seconds. Months
// and years move the calendar fields and let day overflow carry into the
// next month (2023-01-31 +1 MONTH is 2023-03-03), as SQLite and Go's
// AddDate both do.
func (m modifier) apply(t time.Time) time.Time {
	switch m.kind {
	case offset:
		switch m.unit {
		case second:
			return t.Add(time.Duration(m.n) * time.Second)
		case minute:
			return t.Add(time.Duration(m.n) * time.Minute)
		case hour:
			return t.Add(time.Duration(m.n) * time.Hour)
		case day:
			return t.Add(time.Duration(m.n) * 24 * time.Hour)
		case month:
			return t.AddDate(0, m.n, 0)
		case year:
			return t.AddDate(m.n, 0, 0)
		}
	case startOf:
		y, mo, d := t.Date()
		switch m.unit {
		case hour:
			return t.Truncate(time.Hour)
		case day:
			return time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
		case month:
			return time.Date(y, mo, 1, 0, 0, 0, 0, time.UTC)
		case year:
			return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		}
	case weekday:
		ahead := (m.n - int(t.Weekday()) + 7) % 7
		return t.AddDate(0, 0, ahead)
	}
	return t
}

// reanchorLimit is Bedrock's bound on the interval of a repeat whose
// missed slot is moved to the next future one: four hours.
const reanchorLimit = 4 * time.Hour

// Next returns the job's next run after a run described by t, exactly as
// Bedrock computes it for a repeat: the base time, then each modifier in
// turn, to whole seconds, in UTC. A SCHEDULED repeat of signed offsets
// only, whose interval is under four hours and whose next slot has passed,
// moves to the first slot after t.Now on its phase (Bedrock's guard
// against a thundering herd); other repeats may return a time in the past.
// For a cron expression it is the first time the expression matches after
// t.Scheduled (t.Now when zero).
func (s Schedule) Next(t Times) time.Time {
	now := t.Now.UTC().Truncate(time.Second)
	if s.cron != nil {
		from := t.Scheduled
		if from.IsZero() {
			from = t.Now
		}
		return s.cron.Next(from).UTC()
	}
	switch s.canned {
	case hourly:
		return now.Truncate(time.Hour).Add(time.Hour)
	case daily:
		return modifier{kind: startOf, unit: day}.apply(now.Add(24 * time.Hour))
	case weekly:
		next := modifier{kind: weekday, n: 0}.apply(now.Add(24 * time.Hour))
		return modifier{kind: startOf, unit: day}.apply(next)
	}
	var from time.Time
	switch s.base {
	case Scheduled:
		from = t.Scheduled
	case Started:
		from = t.Started
	}
	if from.IsZero() {
		from = t.Now
	}
	from = from.UTC().Truncate(time.Second)
	next := from
	for _, m := range s.mods {
		next = m.apply(next)
	}
	if s.base == Scheduled && s.offsets && !next.After(now) {
		interval := next.Sub(from)
		if interval > 0 && interval < reanchorLimit {
			behind := now.Sub(from)
			next = from.Add((behind/interval + 1) * interval)
		}
	}
	return next
}

// MaxSlots bounds how many slots After steps through before it gives up
// and returns the first slot after now that counting from now gives.
const MaxSlots = 100000

// After returns the first slot of s later than now, stepping from slot
// (a slot of s that has passed) along its phase; for repeats that count
// from the start or finish of a run, the phase is that of runs that start
// and finish on their slots.
func (s Schedule) After(slot, now time.Time) time.Time {
	for i := 0; i < MaxSlots && !slot.After(now); i++ {
		next := s.Next(Times{Scheduled: slot, Started: slot, Now: slot})
		if !next.After(slot) {
			break // a repeat that does not move forward (negative offsets)
		}
		slot = next
	}
	if !slot.After(now) {
		slot = s.Next(Times{Scheduled: now, Started: now, Now: now})
		if !slot.After(now) {
			slot = now.UTC().Truncate(time.Second).Add(time.Second)
		}
	}
	return slot
}
