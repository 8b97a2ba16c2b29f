package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/store"
)

// The accept answer is written and read through JobWire, which must give
// the same bytes as store.Job's own JSON methods, and read back the same
// jobs.
func TestJobWireMatchesJobJSON(t *testing.T) {
	now := time.Date(2026, 11, 21, 7, 9, 7, 123456000, time.UTC)
	jobs := []store.Job{
		{},
		{ID: 1, Type: "email.send", Group: "acme", State: store.Running, RunAt: now, Data: json.RawMessage(`{"to":"a<b>&c@example.com","n":[1,2]}`),
			Attempt: 2, MaxAttempts: 20, BackoffBase: time.Second, BackoffMax: time.Hour, Token: "tok", Worker: "host:1",
			LeaseUntil: now.Add(time.Minute), CreatedAt: now, StartedAt: now, UpdatedAt: now},
		{ID: 2, Type: "t", Key: "k\u2028é", State: store.Failed, Progress: 12.5, LastError: "boom <x>", Resubmit: true, CancelRequested: true,
			Errors: []store.AttemptError{{Attempt: 1, At: now, Error: "first & last"}}, Result: json.RawMessage(`"é\"\\"`),
			BackoffBase: 1500 * time.Millisecond, FinishedAt: now, Data: json.RawMessage(`{}`)},
		{ID: 3, Type: "t", State: store.Cancelled, ExpiresAt: now.Add(time.Second), Expired: true, LastError: "expired at …",
			Timeout: time.Minute, FinishedAt: now, Data: json.RawMessage(`{}`)},
		{ID: 4, Type: "t", State: store.Pending, ExpiresAt: now.Add(time.Hour), Schedule: "DAILY", Slot: now, Data: json.RawMessage(`{}`)},
		{ID: 5, Type: "t", Key: "k", State: store.Pending, UniqueFor: time.Hour, Debounce: 90 * time.Second, Data: json.RawMessage(`{}`)},
	}
	encode := func(v any) []byte {
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(v); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	aw := wire.AcceptWire{Jobs: make([]wire.JobWire, len(jobs))}
	for i, j := range jobs {
		aw.Jobs[i] = wire.NewJobWire(j)
	}
	want, got := encode(wire.AcceptResponse{Jobs: jobs}), encode(aw)
	if !bytes.Equal(want, got) {
		t.Fatalf("JobWire writes\n%s\nstore.Job writes\n%s", got, want)
	}
	var back wire.AcceptWire
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	var ref wire.AcceptResponse
	if err := json.Unmarshal(want, &ref); err != nil {
		t.Fatal(err)
	}
	for i, w := range back.Jobs {
		j, err := w.Job()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(j, ref.Jobs[i]) {
			t.Errorf("job %d: JobWire reads %s\nstore.Job reads %s", i, fmt.Sprintf("%+v", j), fmt.Sprintf("%+v", ref.Jobs[i]))
		}
	}
}

// BenchmarkAcceptAnswer encodes and decodes an accept answer of 100 jobs,
// as store.Job and as JobWire; one op is one job.
func BenchmarkAcceptAnswer(b *testing.B) {
	now := time.Now().UTC()
	jobs := make([]store.Job, 100)
	for i := range jobs {
		jobs[i] = store.Job{ID: int64(i + 1), Type: "bench.drain", State: store.Running, RunAt: now, Data: json.RawMessage(`{"n":1}`),
			Attempt: 1, MaxAttempts: 20, BackoffBase: time.Second, BackoffMax: time.Hour, Token: "0123456789abcdef0123456789abcdef",
			Worker: "host:1234", LeaseUntil: now, CreatedAt: now, StartedAt: now, UpdatedAt: now}
	}
	b.Run("store.Job", func(b *testing.B) {
		for i := 0; i < b.N; i += len(jobs) {
			data, _ := json.Marshal(wire.AcceptResponse{Jobs: jobs})
			var back wire.AcceptResponse
			if err := json.Unmarshal(data, &back); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("JobWire", func(b *testing.B) {
		for i := 0; i < b.N; i += len(jobs) {
			aw := wire.AcceptWire{Jobs: make([]wire.JobWire, len(jobs))}
			for k, j := range jobs {
				aw.Jobs[k] = wire.NewJobWire(j)
			}
			data, _ := json.Marshal(aw)
			var back wire.AcceptWire
			if err := json.Unmarshal(data, &back); err != nil {
				b.Fatal(err)
			}
			for _, w := range back.Jobs {
				if _, err := w.Job(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	// What the server and a remote worker run: AppendAccept, ParseAccept.
	b.Run("AppendAccept+ParseAccept", func(b *testing.B) {
		var buf []byte
		for i := 0; i < b.N; i += len(jobs) {
			buf = wire.AppendAccept(buf[:0], jobs)
			back, err := wire.ParseAccept(buf)
			if err != nil || len(back) != len(jobs) {
				b.Fatal(len(back), err)
			}
		}
	})
}
