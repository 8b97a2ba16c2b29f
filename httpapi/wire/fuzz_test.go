package wire_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/httpapi/wire"
)

// FuzzParseEvent checks that what the event parser accepts is written back
// the same by AppendEvent, and read back the same again.
func FuzzParseEvent(f *testing.F) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	for _, ev := range []wire.Event{{ID: 1, Type: "t", At: now}, {ID: 2, Type: "a\"b", Group: "é", Removed: true, Progress: 12.5, Lease: "ab", RunAt: now, At: now}} {
		f.Add(wire.AppendEvent(nil, ev))
	}
	f.Add([]byte(`{"id":1}`))
	f.Add([]byte(`{"id":1,"type":"t","group":"","state":"bogus","progress":0,"at":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"id":-1,"type":"t","group":"g","state":"running","progress":1e400,"at":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := wire.ParseEvent(data)
		if err != nil {
			return
		}
		enc := wire.AppendEvent(nil, ev)
		back, err := wire.ParseEvent(enc)
		if err != nil {
			t.Fatalf("the event's own encoding %s does not parse: %v", enc, err)
		}
		if enc2 := wire.AppendEvent(nil, back); !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the event:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzDuration checks the wire's durations: accepted strings round-trip.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{`"1.5s"`, `"10m"`, `"0"`, `"-1h"`, `1`, `"1x"`, `""`, `"9999999999h"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d wire.Duration
		if err := json.Unmarshal(data, &d); err != nil {
			if json.Valid(data) && !strings.Contains(err.Error(), "duration") {
				t.Fatalf("refusal %q does not say what was wrong", err)
			}
			return
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back wire.Duration
		if err := json.Unmarshal(b, &back); err != nil || back != d {
			t.Fatalf("%s → %v → %s → %v, %v", data, time.Duration(d), b, time.Duration(back), err)
		}
	})
}

// FuzzParseEventStream checks the event-stream reader on arbitrary lines:
// it never panics and hands out only what it was given.
func FuzzParseEventStream(f *testing.F) {
	f.Add("id: 1\nevent: job\ndata: {\"id\":1}\n\n: ping\n\nevent: end\ndata: {}\n\n")
	f.Add("data: a\ndata: b\n\n\n\nevent:\n")
	f.Fuzz(func(t *testing.T, stream string) {
		lines := strings.Split(stream, "\n")
		i := 0
		wire.ParseEventStream(func() (string, bool) {
			if i >= len(lines) {
				return "", false
			}
			i++
			return lines[i-1], true
		}, func(event string, data []byte) bool {
			if !strings.Contains(stream, event) || !strings.Contains(stream, strings.SplitN(string(data), "\n", 2)[0]) {
				t.Fatalf("event %q data %q not in the stream", event, data)
			}
			return true
		})
	})
}
