package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// The event stream carries one or two events per job, so its encoding is
// on the hot path of a remote worker (which follows the stream to learn of
// cancellations). AppendEvent and ParseEvent write and read the JSON that
// encoding/json gives for an Event, byte for byte, without reflection; for
// anything out of the ordinary (characters that need escaping, times
// outside years 0-9999, a different field order) they fall back to
// encoding/json.

// AppendEvent appends ev's JSON, as json.Marshal writes it, to buf.
func AppendEvent(buf []byte, ev Event) []byte {
	start := len(buf)
	ok := true
	str := func(s string) {
		if ok = ok && plainJSON(s); ok {
			buf = append(buf, '"')
			buf = append(buf, s...)
			buf = append(buf, '"')
		}
	}
	tm := func(t time.Time) {
		if y := t.Year(); y < 0 || y > 9999 {
			ok = false
			return
		}
		buf = append(buf, '"')
		buf = t.AppendFormat(buf, time.RFC3339Nano)
		buf = append(buf, '"')
	}
	c := ev
	buf = append(buf, `{"id":`...)
	buf = strconv.AppendInt(buf, c.ID, 10)
	buf = append(buf, `,"type":`...)
	str(c.Type)
	buf = append(buf, `,"group":`...)
	str(c.Group)
	buf = append(buf, `,"state":`...)
	name, err := c.State.MarshalText()
	ok = ok && err == nil
	str(string(name))
	if c.Removed {
		buf = append(buf, `,"removed":true`...)
	}
	buf = append(buf, `,"progress":`...)
	if f := c.Progress; math.IsInf(f, 0) || math.IsNaN(f) {
		ok = false
	} else {
		buf = appendJSONFloat(buf, f)
	}
	if c.Lease != "" {
		buf = append(buf, `,"lease":`...)
		str(c.Lease)
	}
	if !c.RunAt.IsZero() {
		buf = append(buf, `,"run_at":`...)
		tm(c.RunAt)
	}
	buf = append(buf, `,"at":`...)
	tm(ev.At)
	buf = append(buf, '}')
	if !ok {
		b, _ := json.Marshal(ev)
		return append(buf[:start], b...)
	}
	return buf
}

// plainJSON reports whether s is written as is inside JSON quotes by
// encoding/json (which also escapes <, > and &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// appendJSONFloat formats f as encoding/json does.
func appendJSONFloat(buf []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(buf)
		if n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf
}

var errShape = errors.New("not the usual shape")

// ParseEvent reads an event as json.Unmarshal would.
func ParseEvent(data []byte) (Event, error) {
	if ev, err := parseEventFast(data); err == nil {
		return ev, nil
	}
	var ev Event
	err := json.Unmarshal(data, &ev)
	return ev, err
}

// parseEventFast reads the exact shape AppendEvent writes, with no escapes
// in strings; anything else is errShape.
func parseEventFast(d []byte) (Event, error) {
	var ev Event
	p := eventParser{d: d, ok: true}
	p.lit(`{"id":`)
	ev.ID = p.int()
	p.lit(`,"type":`)
	ev.Type = p.str()
	p.lit(`,"group":`)
	ev.Group = p.str()
	p.lit(`,"state":`)
	if p.ok && ev.State.UnmarshalText([]byte(p.str())) != nil {
		p.ok = false
	}
	if p.opt(`,"removed":true`) {
		ev.Removed = true
	}
	p.lit(`,"progress":`)
	ev.Progress = p.float()
	if p.opt(`,"lease":`) {
		ev.Lease = p.str()
	}
	if p.opt(`,"run_at":`) {
		ev.RunAt = p.time()
	}
	p.lit(`,"at":`)
	ev.At = p.time()
	p.lit(`}`)
	if !p.ok || len(p.d) != 0 {
		return Event{}, errShape
	}
	return ev, nil
}

type eventParser struct {
	d  []byte
	ok bool
}

func (p *eventParser) lit(s string) {
	if p.ok && bytes.HasPrefix(p.d, []byte(s)) {
		p.d = p.d[len(s):]
		return
	}
	p.ok = false
}

func (p *eventParser) opt(s string) bool {
	if p.ok && bytes.HasPrefix(p.d, []byte(s)) {
		p.d = p.d[len(s):]
		return true
	}
	return false
}

// token returns the bytes up to the first of , } or end.
func (p *eventParser) token() []byte {
	i := bytes.IndexAny(p.d, ",}")
	if i < 0 {
		i = len(p.d)
	}
	t := p.d[:i]
	p.d = p.d[i:]
	return t
}

func (p *eventParser) int() int64 {
	if !p.ok {
		return 0
	}
	v, err := strconv.ParseInt(string(p.token()), 10, 64)
	p.ok = err == nil
	return v
}

func (p *eventParser) float() float64 {
	if !p.ok {
		return 0
	}
	t := p.token()
	for _, c := range t {
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			p.ok = false // not a JSON number (ParseFloat takes "Inf", hex, ...)
			return 0
		}
	}
	v, err := strconv.ParseFloat(string(t), 64)
	p.ok = err == nil
	return v
}

func (p *eventParser) str() string {
	if !p.ok || len(p.d) == 0 || p.d[0] != '"' {
		p.ok = false
		return ""
	}
	i := bytes.IndexByte(p.d[1:], '"')
	if i < 0 {
		p.ok = false
		return ""
	}
	raw := p.d[1 : 1+i]
	for _, c := range raw {
		if c < 0x20 || c == '\\' || c >= 0x80 {
			p.ok = false // escapes, controls and non-ASCII: encoding/json decides
			return ""
		}
	}
	s := string(raw)
	p.d = p.d[2+i:]
	return s
}

func (p *eventParser) time() time.Time {
	s := p.str()
	if !p.ok {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalText([]byte(s)); err != nil {
		p.ok = false
	}
	return t
}

// ParseEventStream reads Server-Sent Events from next (one line per call,
// without its line ending) and calls fn with each event's name and data,
// until next or fn returns false. Comments are skipped.
func ParseEventStream(next func() (string, bool), fn func(event string, data []byte) bool) {
	ParseEventStreamIDs(next, func(event, _ string, data []byte) bool { return fn(event, data) })
}

// ParseEventStreamIDs is ParseEventStream that also gives each event's
// id: the last id field seen, as the SSE standard keeps it, which a
// client sends back as Last-Event-ID when it reconnects.
func ParseEventStreamIDs(next func() (string, bool), fn func(event, id string, data []byte) bool) {
	var name, id string
	var data []string
	for {
		line, ok := next()
		if !ok {
			return
		}
		switch {
		case line == "":
			if len(data) > 0 || name != "" {
				if !fn(name, id, []byte(strings.Join(data, "\n"))) {
					return
				}
			}
			name, data = "", data[:0]
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimPrefix(strings.TrimPrefix(line, "id:"), " ")
		}
	}
}
