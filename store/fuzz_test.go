package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rotajobs/rota/internal/rules/glob"
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

func FuzzNormalizeData(f *testing.F) {
	for _, s := range []string{``, `{}`, ` {"a": [1, 2, {"b": null}]} `, `[]`, `"x"`, `{"a":`, `{"\u00e9": "\ud800"}`, "{\"a\":\"\xff\"}", `{"a":1}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := NormalizeData("data", data)
		if err != nil {
			invalid(t, err)
			return
		}
		if !json.Valid(out) || out[0] != '{' || !utf8.Valid(out) {
			t.Fatalf("accepted %q as %q, not a JSON object", data, out)
		}
		again, err := NormalizeData("data", out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("normalizing %q again gave %q, %v", out, again, err)
		}
	})
}

func FuzzNormalizeResult(f *testing.F) {
	for _, s := range []string{``, `1`, `"x"`, `[1, 2]`, `{"a": {}}`, `nul`, ` `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := NormalizeResult(data)
		if err != nil {
			invalid(t, err)
			return
		}
		if !utf8.Valid(out) {
			t.Fatalf("accepted %q, not UTF-8", out)
		}
		if out == nil {
			if len(bytes.TrimSpace(data)) != 0 {
				t.Fatalf("%q became no result", data)
			}
			return
		}
		if again, err := NormalizeResult(out); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("normalizing %q again gave %q, %v", out, again, err)
		}
	})
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

func FuzzCompilePattern(f *testing.F) {
	for _, s := range []string{"email.send", "email.*", "*", "a?c", "[a-c]x", "{a,b}", "[", "{a", "\\", "", "a\x00b"} {
		f.Add(s, "email.send")
	}
	f.Fuzz(func(t *testing.T, pat, name string) {
		p, err := CompilePattern(pat)
		if err != nil {
			invalid(t, err)
			return
		}
		p.Match(name)
		if p.Literal() && (!p.Match(pat) || p.String() != pat) {
			t.Fatalf("literal %q does not match itself", pat)
		}
		if CheckType(pat) == nil {
			q, err := CompilePattern(glob.Quote(pat))
			if err != nil {
				t.Fatalf("quoted %q: %v", pat, err)
			}
			if exact, ok := q.Exact(); !ok || exact != pat || !q.Match(pat) || (name != pat && q.Match(name)) {
				t.Fatalf("glob.Quote(%q) = %q does not match exactly it (exact %q %v)", pat, glob.Quote(pat), exact, ok)
			}
		}
	})
}

func FuzzCheckAdd(f *testing.F) {
	f.Add("email.send", "", "", 0, int64(0), int64(0), int64(0))
	f.Add("t", "key", "tenant", 3, int64(time.Second), int64(time.Minute), int64(1e18))
	f.Add("a*b", "k", "g", -1, int64(-1), int64(0), int64(-1))
	f.Add("a,b", "\x01", "\xff", 1, int64(2), int64(1), int64(0))
	f.Fuzz(func(t *testing.T, typ, key, group string, attempts int, base, max, runAt int64) {
		p := AddParams{Type: typ, Key: key, Group: group, MaxAttempts: attempts,
			BackoffBase: time.Duration(base), BackoffMax: time.Duration(max)}
		if runAt != 0 {
			p.RunAt = time.Unix(0, runAt)
		}
		before := p
		out, _, err := CheckAdds([]AddParams{p})
		if !reflect.DeepEqual(p, before) {
			t.Fatal("CheckAdds changed its input")
		}
		if err != nil {
			invalid(t, err)
			return
		}
		q := out[0]
		if CheckType(q.Type) != nil || q.MaxAttempts <= 0 || q.BackoffBase <= 0 || q.BackoffMax < q.BackoffBase {
			t.Fatalf("accepted %+v", q)
		}
		// What was accepted, with its defaults filled in, is accepted as is.
		again, _, err := CheckAdds(out)
		if err != nil || !reflect.DeepEqual(again[0], q) {
			t.Fatalf("checking %+v again: %+v, %v", q, again[0], err)
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

func FuzzCheckMeta(f *testing.F) {
	f.Add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", 1)
	f.Add("", "v", 1)
	f.Add("k\x01", "\xff", 40)
	f.Fuzz(func(t *testing.T, key, value string, copies int) {
		m := map[string]string{}
		for i := range min(max(copies, 0), 64) {
			m[fmt.Sprint(key, i)] = value
		}
		if err := CheckMeta(m); err != nil {
			invalid(t, err)
			return
		}
		back, err := ParseMetaJSON(MetaJSON(m))
		if err != nil || !reflect.DeepEqual(back, m) && len(m) > 0 {
			t.Fatalf("meta %v came back as %v, %v", m, back, err)
		}
	})
}

func TestJSONDepthAndArrayLen(t *testing.T) {
	for s, want := range map[string]int{`1`: 0, `{}`: 1, `{"a":[1,{"b":"[[["}]}`: 3, `"{\"["`: 0, `[[[]]]`: 3} {
		if got := JSONDepth([]byte(s)); got != want {
			t.Errorf("JSONDepth(%s) = %d, want %d", s, got, want)
		}
	}
	for s, want := range map[string]int{`[]`: 0, ` [ ] `: 0, `[1]`: 1, `[1, "a,b", [2, 3], {"x": [4, 5]}]`: 4, `{"a":1}`: 0, `["\"", "]"]`: 2} {
		if got := JSONArrayLen([]byte(s)); got != want {
			t.Errorf("JSONArrayLen(%s) = %d, want %d", s, got, want)
		}
	}
	deep := strings.Repeat(`{"a":`, MaxDataDepth+1) + `1` + strings.Repeat(`}`, MaxDataDepth+1)
	if _, err := NormalizeData("data", []byte(deep)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "nests 65 levels deep, more than 64") {
		t.Errorf("data nested %d deep: %v", MaxDataDepth+1, err)
	}
	ok := strings.Repeat(`[`, MaxDataDepth) + strings.Repeat(`]`, MaxDataDepth)
	if _, err := NormalizeResult([]byte(ok)); err != nil {
		t.Errorf("a result nested %d deep: %v", MaxDataDepth, err)
	}
	_, _, err := CheckAdds(make([]AddParams, MaxAddBatch+1))
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrInvalid) {
		t.Errorf("an add of %d jobs: %v", MaxAddBatch+1, err)
	}
}

func FuzzJSONArrayLen(f *testing.F) {
	for _, s := range []string{`[]`, `[1,2]`, `[[1,2],{"a":","}]`, `["\\",",",3]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var arr []json.RawMessage
		if json.Unmarshal(b, &arr) != nil || !utf8.Valid(b) {
			return
		}
		if got := JSONArrayLen(b); got != len(arr) {
			t.Fatalf("JSONArrayLen(%s) = %d, want %d", b, got, len(arr))
		}
	})
}
