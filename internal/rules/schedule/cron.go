package schedule

import (
	"math/bits"
	"time"

	"github.com/robfig/cron/v3"
)

// cronSchedule is a cron expression with the daylight-saving rules people
// expect of cron (those of Vixie cron), which robfig/cron leaves out: a job
// at a fixed hour whose local time is skipped when clocks go forward runs
// at the transition instead of not at all that day, and one whose local
// time happens twice when clocks go back runs once. Expressions that run
// every hour are left alone: they follow the instants.
type cronSchedule struct {
	cron.Schedule
}

// starBit is robfig/cron's mark of a field written as "*".
const starBit = 1 << 63

func (c cronSchedule) Next(from time.Time) time.Time {
	spec, ok := c.Schedule.(*cron.SpecSchedule)
	if !ok || bits.OnesCount64(spec.Hour&^starBit) == 24 {
		return c.Schedule.Next(from)
	}
	from = from.In(spec.Location)
	next := from
	for range 4 { // at most a duplicate or two to step over
		next = c.Schedule.Next(next)
		if next.IsZero() {
			return next
		}
		if t, ok := skipped(spec, from, next); ok {
			return t
		}
		if !repeated(next) {
			return next
		}
	}
	return next
}

// repeated reports whether t is the second occurrence of its local time,
// in the hour that clocks going back make happen twice: the job ran at the
// first one.
func repeated(t time.Time) bool {
	_, before := t.Add(-3 * time.Hour).Zone()
	_, now := t.Zone()
	if before <= now {
		return false
	}
	first := t.Add(-time.Duration(before-now) * time.Second)
	return first.Format(time.DateTime) == t.Format(time.DateTime)
}

// skipped returns the instant clocks went forward between from and next,
// when the local times the jump skipped include one the expression
// matches: the job runs then, rather than miss that day.
func skipped(spec *cron.SpecSchedule, from, next time.Time) (time.Time, bool) {
	_, off1 := from.Zone()
	_, off2 := next.Zone()
	if off2 <= off1 {
		return time.Time{}, false
	}
	// The transition: the first second with the new offset.
	lo, hi := from.Unix(), next.Unix()
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		if _, off := time.Unix(mid, 0).In(spec.Location).Zone(); off == off1 {
			lo = mid
		} else {
			hi = mid
		}
	}
	at := time.Unix(hi, 0).In(spec.Location)
	// The wall-clock minutes that did not happen, read as naive times.
	wall := time.Unix(hi+int64(off1), 0).UTC()
	for m := time.Duration(0); m < time.Duration(off2-off1)*time.Second; m += time.Minute {
		w := wall.Add(m)
		if matches(spec, w) && at.After(from) {
			return at, true
		}
	}
	return time.Time{}, false
}

// matches reports whether the naive wall-clock minute w fits the
// expression, with cron's rule for days: both of day-of-month and
// day-of-week must match when either is "*", one of them otherwise.
func matches(spec *cron.SpecSchedule, w time.Time) bool {
	if spec.Minute&(1<<uint(w.Minute())) == 0 || spec.Hour&(1<<uint(w.Hour())) == 0 || spec.Month&(1<<uint(w.Month())) == 0 {
		return false
	}
	dom := spec.Dom&(1<<uint(w.Day())) != 0
	dow := spec.Dow&(1<<uint(w.Weekday())) != 0
	if spec.Dom&starBit != 0 || spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}
