package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// The validators and parsers every store and protocol runs on input from
// outside. Each target checks a property, not only the absence of panics:
// what is accepted round-trips or is idempotent, and what is refused is
// ErrInvalid with a message.

func invalid(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), ": ") {
		t.Fatalf("a refusal must match ErrInvalid and say why: %v", err)
	}
}

func FuzzParseBands(f *testing.F) {
	for _, s := range []string{"", "2,1", "0,1", "1000,1000", "1001,0", "-1,2", "0,0", " 2,1", "2,1,3", "02,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBands(s)
		if err != nil {
			invalid(t, err)
			return
		}
		if s == "" {
			if !b.IsZero() {
				t.Fatalf("empty gave %v", b)
			}
			return
		}
		if b.String() != s {
			t.Fatalf("%q parsed as %v, which prints as %q", s, b, b.String())
		}
	})
}

func FuzzParseState(f *testing.F) {
	for _, s := range []string{"pending", "running", "paused", "completed", "failed", "cancelled", "Pending", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseState(s)
		if err != nil {
			invalid(t, err)
			return
		}
		if st.String() != s || !st.Valid() {
			t.Fatalf("%q parsed as %v", s, st)
		}
	})
}

func FuzzJobJSON(f *testing.F) {
	j := Job{ID: 1, Type: "t", State: Running, Data: json.RawMessage(`{}`), BackoffBase: time.Second, BackoffMax: time.Hour,
		RunAt: time.Unix(1700000000, 5).UTC(), CreatedAt: time.Unix(1700000000, 0).UTC(), UpdatedAt: time.Unix(1700000000, 0).UTC()}
	b, _ := json.Marshal(j)
	f.Add(b)
	f.Add([]byte(`{"backoff_base":"1x"}`))
	f.Add([]byte(`{"state":"nope"}`))
	f.Add([]byte(`{"id":1,"data":{"a":1},"backoff_max":"90m"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var j Job
		if err := json.Unmarshal(data, &j); err != nil {
			return
		}
		b, err := json.Marshal(j)
		if err != nil {
			return // a decoded value json cannot write (such as raw data that is not JSON)
		}
		var k Job
		if err := json.Unmarshal(b, &k); err != nil {
			t.Fatalf("a job's own JSON %s does not decode: %v", b, err)
		}
		b2, _ := json.Marshal(k)
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed the job:\n%s\n%s", b, b2)
		}
	})
}

func FuzzSchemeOf(f *testing.F) {
	for _, s := range []string{"jobs.db", "sqlite:jobs.db", "postgres://u@h/db", "./a:b/c.db", "C:\\x", ":memory:", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		s := SchemeOf(dsn)
		if s == "" || !strings.HasPrefix(dsn, s) && s != "sqlite" {
			t.Fatalf("SchemeOf(%q) = %q", dsn, s)
		}
	})
}
