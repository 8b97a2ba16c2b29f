package wire

import (
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
	o := &jsonOut{buf: buf, ok: true}
	o.lit(`{"id":`)
	o.int(ev.ID)
	o.lit(`,"type":`)
	o.str(ev.Type)
	o.lit(`,"group":`)
	o.str(ev.Group)
	o.lit(`,"state":`)
	o.text(ev.State)
	if ev.Removed {
		o.lit(`,"removed":true`)
	}
	o.lit(`,"progress":`)
	o.float(ev.Progress)
	if ev.Failed {
		o.lit(`,"failed":true`)
	}
	if ev.Expired {
		o.lit(`,"expired":true`)
	}
	if ev.Lease != "" {
		o.lit(`,"lease":`)
		o.str(ev.Lease)
	}
	if !ev.RunAt.IsZero() {
		o.lit(`,"run_at":`)
		o.time(ev.RunAt)
	}
	o.lit(`,"at":`)
	o.time(ev.At)
	o.lit(`}`)
	if !o.ok {
		b, _ := json.Marshal(ev)
		return append(o.buf[:start], b...)
	}
	return o.buf
}

// jsonOut appends JSON as encoding/json writes it, for AppendEvent and
// AppendAccept. ok turns false at the first value it does not write the
// way encoding/json would (escapes, times outside years 0-9999, NaN); the
// caller then writes the whole value with encoding/json instead.
type jsonOut struct {
	buf []byte
	ok  bool
}

func (o *jsonOut) lit(s string) { o.buf = append(o.buf, s...) }

func (o *jsonOut) int(v int64) { o.buf = strconv.AppendInt(o.buf, v, 10) }

func (o *jsonOut) str(s string) {
	if o.ok = o.ok && plainJSON(s); o.ok {
		o.buf = append(o.buf, '"')
		o.buf = append(o.buf, s...)
		o.buf = append(o.buf, '"')
	}
}

func (o *jsonOut) text(v interface{ MarshalText() ([]byte, error) }) {
	b, err := v.MarshalText()
	o.ok = o.ok && err == nil
	o.str(string(b))
}

func (o *jsonOut) time(t time.Time) {
	if y := t.Year(); y < 0 || y > 9999 {
		o.ok = false
		return
	}
	o.buf = append(o.buf, '"')
	o.buf = t.AppendFormat(o.buf, time.RFC3339Nano)
	o.buf = append(o.buf, '"')
}

func (o *jsonOut) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		o.ok = false
		return
	}
	o.buf = appendJSONFloat(o.buf, f)
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
	p := &jsonScan{d: d}
	ok := p.lit(`{"id":`)
	if ok {
		ev.ID, ok = p.int()
	}
	ok = ok && p.lit(`,"type":`)
	if ok {
		ev.Type, ok = p.str()
	}
	ok = ok && p.lit(`,"group":`)
	if ok {
		ev.Group, ok = p.str()
	}
	ok = ok && p.lit(`,"state":`)
	if ok {
		var s []byte
		s, ok = p.strBytes()
		ok = ok && ev.State.UnmarshalText(s) == nil
	}
	if ok && p.lit(`,"removed":true`) {
		ev.Removed = true
	}
	ok = ok && p.lit(`,"progress":`)
	if ok {
		ev.Progress, ok = p.float()
	}
	if ok && p.lit(`,"failed":true`) {
		ev.Failed = true
	}
	if ok && p.lit(`,"expired":true`) {
		ev.Expired = true
	}
	if ok && p.lit(`,"lease":`) {
		ev.Lease, ok = p.str()
	}
	if ok && p.lit(`,"run_at":`) {
		ev.RunAt, ok = p.time()
	}
	ok = ok && p.lit(`,"at":`)
	if ok {
		ev.At, ok = p.time()
	}
	if !ok || !p.lit(`}`) || len(p.d) != 0 {
		return Event{}, errShape
	}
	return ev, nil
}

// ParseEventStream reads Server-Sent Events from next (one line per call,
// without its line ending) and calls fn with each event's name and data,
// until next or fn returns false. Comments are skipped.
func ParseEventStream(next func() (string, bool), fn func(event string, data []byte) bool) {
	ParseEventStreamIDs(next, func(event, _ string, data []byte) bool {
		if event == "" && data == nil {
			return true // an id alone
		}
		return fn(event, data)
	})
}

// ParseEventStreamIDs is ParseEventStream that also gives each event's
// id: the last id field seen, as the SSE standard keeps it, which a
// client sends back as Last-Event-ID when it reconnects.
func ParseEventStreamIDs(next func() (string, bool), fn func(event, id string, data []byte) bool) {
	var name, id string
	var data []string
	idOnly := false // the message has an id field (and, if nothing else, is only that)
	for {
		line, ok := next()
		if !ok {
			return
		}
		switch {
		case line == "":
			switch {
			case len(data) > 0 || name != "":
				if !fn(name, id, []byte(strings.Join(data, "\n"))) {
					return
				}
			case idOnly:
				// A message with only an id moves the id on without an
				// event (a stream that leaves changes out says how far it
				// has got): fn gets no name and nil data.
				if !fn("", id, nil) {
					return
				}
			}
			name, data, idOnly = "", data[:0], false
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimPrefix(strings.TrimPrefix(line, "id:"), " ")
			idOnly = true
		}
	}
}
