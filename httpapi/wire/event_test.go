package wire_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// AppendEvent writes what json.Marshal writes, and ParseEvent reads what
// json.Unmarshal reads, for ordinary and odd events alike.
func TestEventCodecMatchesEncodingJSON(t *testing.T) {
	now := time.Date(2026, 11, 21, 7, 9, 7, 123456789, time.UTC)
	events := []wire.Event{
		{},
		{ID: 1, Type: "email.send", State: store.Running, Lease: "abc123", At: now},
		{ID: 2, Type: "t", Group: "acme", State: store.Pending, RunAt: now.Add(time.Hour), At: now},
		{ID: 6, Type: "t", State: store.Pending, Failed: true, Lease: "abc", RunAt: now, At: now},
		{ID: 7, Type: "t", State: store.Cancelled, Expired: true, Lease: "abc", RunAt: now, At: now},
		{ID: 8, Type: "t", State: store.Pending, Failed: true, Expired: true, RunAt: now, At: now},
		{ID: 3, Type: "t", Group: "a<b>&\"c\\", State: store.Completed, Removed: true, Progress: 42.5, At: now},
		{ID: 4, Type: "t", Group: "é\u2028\x01", State: store.Failed, Progress: 1e-7, At: now.In(time.FixedZone("x", 3600))},
		{ID: 5, Type: "t", State: store.Cancelled, Progress: 1e21, At: time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: math.MaxInt64, Type: "t", State: store.Paused, Progress: -0.000001, At: now},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		b := make([]byte, rng.IntN(8))
		for k := range b {
			b[k] = byte(rng.IntN(256))
		}
		events = append(events, wire.Event{ID: int64(i), Type: "t", Group: string(b), State: store.State(rng.IntN(6)),
			Progress: rng.Float64() * 100, Lease: string(b[:len(b)/2]), At: now.Add(time.Duration(rng.Int64N(1e15)))})
	}
	for i, ev := range events {
		want, err := json.Marshal(ev)
		if err != nil { // as the stream did before: an empty event
			if got := wire.AppendEvent(nil, ev); len(got) != 0 {
				t.Errorf("event %d: AppendEvent writes %s where json.Marshal fails (%v)", i, got, err)
			}
			continue
		}
		if got := wire.AppendEvent(nil, ev); string(got) != string(want) {
			t.Errorf("event %d: AppendEvent writes %s, json.Marshal %s", i, got, want)
		}
		var ref wire.Event
		refErr := json.Unmarshal(want, &ref)
		got, err := wire.ParseEvent(want)
		if (err != nil) != (refErr != nil) || !reflect.DeepEqual(got, ref) {
			t.Errorf("event %d (%s): ParseEvent reads %+v, %v; json.Unmarshal %+v, %v", i, want, got, err, ref, refErr)
		}
	}
	// Input that is not the usual shape goes to encoding/json.
	for _, in := range []string{
		`{"at":"2026-11-21T07:09:07Z","id":7,"type":"t","group":"","state":"running","progress":0}`,
		`{"id":7,"type":"t","group":"","state":"running","progress":Inf,"at":"2026-11-21T07:09:07Z"}`,
		`{"id":7,"type":"t","group":"","state":"nope","progress":0,"at":"2026-11-21T07:09:07Z"}`,
		`{"id":7,"type":"t\u0041","group":"","state":"running","progress":0,"at":"2026-11-21T07:09:07Z"}`,
		`{"id":7}`, `[]`, ``,
	} {
		var ref wire.Event
		refErr := json.Unmarshal([]byte(in), &ref)
		got, err := wire.ParseEvent([]byte(in))
		if (err != nil) != (refErr != nil) || !reflect.DeepEqual(got, ref) {
			t.Errorf("%s: ParseEvent reads %+v, %v; json.Unmarshal %+v, %v", in, got, err, ref, refErr)
		}
	}
}

// TestParseEventStreamIDs: events carry the last id seen; a message with
// only an id gives no name and nil data (ParseEventStream skips it);
// comments and blank lines alone give nothing.
func TestParseEventStreamIDs(t *testing.T) {
	lines := []string{": hello", "", "id: 1", "event: job", "data: {}", "", "id: 2", "", "", ": keep-alive", "", "event: end", "data: x", ""}
	type msg struct {
		event, id string
		data      []byte
	}
	var got []msg
	i := 0
	next := func() (string, bool) {
		if i == len(lines) {
			return "", false
		}
		i++
		return lines[i-1], true
	}
	wire.ParseEventStreamIDs(next, func(event, id string, data []byte) bool {
		got = append(got, msg{event, id, data})
		return true
	})
	want := []msg{{"job", "1", []byte("{}")}, {"", "2", nil}, {"end", "2", []byte("x")}}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) || got[1].data != nil {
		t.Errorf("got %q, want %q", got, want)
	}
	i = 0
	var names []string
	wire.ParseEventStream(next, func(event string, data []byte) bool {
		names = append(names, event)
		return true
	})
	if fmt.Sprint(names) != "[job end]" {
		t.Errorf("ParseEventStream gave %v, want [job end]", names)
	}
}
