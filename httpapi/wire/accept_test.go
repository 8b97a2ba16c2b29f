package wire

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// sampleJobs are jobs with every field set, none, and values that need
// encoding/json's care: escapes, HTML characters, non-ASCII, U+2028,
// spaced and nested data, odd floats and times.
func sampleJobs() []store.Job {
	now := time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.UTC)
	paris := time.FixedZone("CET", 3600)
	full := store.Job{ID: 7, Type: "t", Key: "k", Group: "g", Priority: -3, State: store.Running, RunAt: now, Data: json.RawMessage(`{"a":[1,{"b":"c"}]}`),
		Attempt: 1, MaxAttempts: 20, BackoffBase: time.Second, BackoffMax: time.Hour, Token: "tok", Worker: "w", LeaseUntil: now.In(paris),
		CancelRequested: true, Resubmit: true, Progress: 0.5, LastError: "e", Errors: []store.AttemptError{{Attempt: 1, At: now, Error: "x"}},
		Result: json.RawMessage(`[1]`), Meta: map[string]string{"a": "b"}, Schedule: "DAILY", Missed: store.MissedSkip, Slot: now, RetryAfter: 1500 * time.Millisecond,
		Parent: 3, HasChildren: true, BedrockID: 9, ParentData: json.RawMessage(`{}`), Children: []store.Child{{ID: 1, State: store.Completed, Data: json.RawMessage(`{}`)}},
		CreatedAt: now, StartedAt: now, PrevStartedAt: now, FinishedAt: now, UpdatedAt: now}
	plain := store.Job{ID: 1, Type: "bench.drain", State: store.Running, RunAt: now, Data: json.RawMessage(`{"i":1}`), Attempt: 1, MaxAttempts: 25,
		Token: "0123456789abcdef0123456789abcdef", LeaseUntil: now, CreatedAt: now, StartedAt: now, UpdatedAt: now}
	odd := plain
	odd.Type, odd.Group, odd.Key, odd.LastError = "a<b>&c", "é", `q"uote\`, "line\nbreak\u2028"
	odd.Data = json.RawMessage("{ \"s\": \"x < y\",\n \"u\": \"\u2028\" }")
	odd.Result = json.RawMessage(`"<script>"`)
	odd.Progress = 1e-7
	odd.Schedule = "CRON_TZ=Europe/Paris 0 9 * * 1-5"
	big := plain
	big.Progress, big.Priority, big.ID = 1e21, 1<<40, 1<<62
	big.RunAt = time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC) // encoding/json refuses it: the whole answer fails
	noData := store.Job{ID: 2, Type: "t", CreatedAt: now, UpdatedAt: now}
	return []store.Job{full, plain, odd, noData, big}
}

func encodingJSON(t *testing.T, jobs []store.Job) ([]byte, error) {
	t.Helper()
	w := AcceptWire{Jobs: make([]JobWire, len(jobs))}
	for i, j := range jobs {
		w.Jobs[i] = NewJobWire(j)
	}
	return json.Marshal(w)
}

// TestAppendAccept: AppendAccept writes what encoding/json writes, byte for
// byte, for each sample job, alone and together.
func TestAppendAccept(t *testing.T) {
	jobs := sampleJobs()
	var cases [][]store.Job
	for i := range jobs {
		cases = append(cases, jobs[i:i+1])
	}
	cases = append(cases, jobs[:len(jobs)-1], nil)
	for _, c := range cases {
		want, err := encodingJSON(t, c)
		got := AppendAccept(nil, c)
		if err != nil {
			// The job encoding/json cannot write is written as null.
			if !bytes.Contains(got, []byte("null")) {
				t.Errorf("encoding/json fails (%v); AppendAccept wrote %s", err, got)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("AppendAccept differs from encoding/json:\n got %s\nwant %s", got, want)
		}
	}
}

// TestParseAccept: what AppendAccept writes, ParseAccept reads back as
// encoding/json does, on its fast path.
func TestParseAccept(t *testing.T) {
	jobs := sampleJobs()[:2] // every field, and a drain's job
	data := AppendAccept(nil, jobs)
	fast, err := parseAcceptFast(append(data, '\n'))
	if err != nil {
		t.Fatalf("the fast path refused the usual answer: %v\n%s", err, data)
	}
	slow := decodeEncodingJSON(t, data)
	if !reflect.DeepEqual(fast, slow) {
		t.Errorf("fast path differs from encoding/json:\n%+v\n%+v", fast, slow)
	}
	// Escapes and null take the slow path.
	data = AppendAccept(nil, sampleJobs()[:4])
	if _, err := parseAcceptFast(data); err == nil {
		t.Errorf("the fast path read escapes or null")
	}
	if got, err := ParseAccept(data); err != nil || !reflect.DeepEqual(got, decodeEncodingJSON(t, data)) {
		t.Errorf("ParseAccept differs from encoding/json (%v)", err)
	}
	// Reordered keys, escapes and null take the slow path, with the same result.
	for _, in := range []string{
		`{"jobs":[{"type":"t","id":1,"created_at":"2026-01-01T00:00:00Z"}]}`,
		`{"jobs":[{"id":1,"type":"t\u00e9","data":null}]}`,
		`{"jobs":[{"ID":1,"Type":"t"}]}`,
		`{"jobs":[{"id":1,"id":2}]}`,
		`{"jobs":[]}`,
		`{ "jobs" : [ { "id" : 1 } ] }`,
	} {
		got, err := ParseAccept([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if want := decodeEncodingJSON(t, []byte(in)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", in, got, want)
		}
	}
}

func decodeEncodingJSON(t testing.TB, data []byte) []store.Job {
	t.Helper()
	var w AcceptWire
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	jobs := make([]store.Job, len(w.Jobs))
	for i, jw := range w.Jobs {
		var err error
		if jobs[i], err = jw.Job(); err != nil {
			t.Fatal(err)
		}
	}
	return jobs
}

// TestAcceptRandom: random jobs written by AppendAccept match encoding/json
// and read back the same on the fast path.
func TestAcceptRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "a", "bench.drain", "é", "<&>", "tab\t", `"`, "\u2028", "x y"}
	datas := []string{`{}`, `{"a":1}`, `[1,2]`, `"s"`, `{"a": 1}`, `{"s":"<"}`, `123`, `true`}
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	tm := func() time.Time {
		if r.IntN(3) == 0 {
			return time.Time{}
		}
		return time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC()
	}
	for range 2000 {
		j := store.Job{ID: r.Int64N(1 << 50), Type: pick(strs), Key: pick(strs), Group: pick(strs), Priority: r.IntN(2000) - 1000,
			State: store.State(r.IntN(6)), RunAt: tm(), Attempt: r.IntN(5), MaxAttempts: r.IntN(30),
			BackoffBase: time.Duration(r.Int64N(1e12)), BackoffMax: time.Duration(r.Int64N(1e13)), Token: pick(strs), Worker: pick(strs),
			LeaseUntil: tm(), CancelRequested: r.IntN(2) == 0, Resubmit: r.IntN(2) == 0, Progress: r.Float64() * float64(r.IntN(3)),
			LastError: pick(strs), Schedule: pick(strs), Missed: store.Missed(r.IntN(3)), Slot: tm(), RetryAfter: time.Duration(r.Int64N(3) * 1e9),
			Parent: r.Int64N(3), HasChildren: r.IntN(2) == 0, BedrockID: r.Int64N(3), CreatedAt: tm(), StartedAt: tm(),
			PrevStartedAt: tm(), FinishedAt: tm(), UpdatedAt: tm()}
		if r.IntN(4) > 0 {
			j.Data = json.RawMessage(pick(datas))
		}
		if r.IntN(3) == 0 {
			j.Result = json.RawMessage(pick(datas))
		}
		if r.IntN(5) == 0 {
			j.ParentData = json.RawMessage(pick(datas))
		}
		jobs := []store.Job{j}
		want, err := encodingJSON(t, jobs)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendAccept(nil, jobs)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendAccept differs from encoding/json:\n got %s\nwant %s", got, want)
		}
		back, err := ParseAccept(got)
		if err != nil {
			t.Fatal(err)
		}
		if slow := decodeEncodingJSON(t, got); !reflect.DeepEqual(back, slow) {
			t.Fatalf("ParseAccept differs from encoding/json for %s:\n%+v\n%+v", got, back, slow)
		}
	}
}

// FuzzParseAccept: whatever the fast path accepts, encoding/json accepts
// too and reads the same.
func FuzzParseAccept(f *testing.F) {
	for _, j := range sampleJobs()[:4] {
		f.Add(AppendAccept(nil, []store.Job{j}))
	}
	f.Add([]byte(`{"jobs":[{"id":01}]}`))
	f.Add([]byte(`{"jobs":[{"id":1,"progress":+1}]}`))
	f.Add([]byte(`{"jobs":[{"data": {"a":1} }]}`))
	f.Add([]byte(`{"jobs":[{"type":"\xff"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, err := parseAcceptFast(data)
		if err != nil {
			return
		}
		var w AcceptWire
		if err := json.Unmarshal(data, &w); err != nil {
			t.Fatalf("the fast path read %q, which encoding/json refuses: %v", data, err)
		}
		slow := make([]store.Job, len(w.Jobs))
		for i, jw := range w.Jobs {
			if slow[i], err = jw.Job(); err != nil {
				t.Fatalf("the fast path read %q, whose job %d encoding/json refuses: %v", data, i, err)
			}
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast path %+v, encoding/json %+v", data, fast, slow)
		}
	})
}
