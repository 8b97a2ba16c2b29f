package check

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

	"github.com/rotajobs/rota/internal/backend"
	"github.com/rotajobs/rota/internal/rules/glob"
	"github.com/rotajobs/rota/store"
)

// The validators every store and protocol runs on input from outside.
// Each target checks a property, not only the absence of panics: what is
// accepted round-trips or is idempotent, and what is refused is
// store.ErrInvalid with a message.

func invalid(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), ": ") {
		t.Fatalf("a refusal must match store.ErrInvalid and say why: %v", err)
	}
}

func FuzzNormalizeData(f *testing.F) {
	for _, s := range []string{``, `{}`, ` {"a": [1, 2, {"b": null}]} `, `[]`, `"x"`, `{"a":`, `{"\u00e9": "\ud800"}`, "{\"a\":\"\xff\"}", `{"a":1}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Data("data", data)
		if err != nil {
			invalid(t, err)
			return
		}
		if !json.Valid(out) || out[0] != '{' || !utf8.Valid(out) {
			t.Fatalf("accepted %q as %q, not a JSON object", data, out)
		}
		again, err := Data("data", out)
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
		out, err := Result(data)
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
		if again, err := Result(out); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("normalizing %q again gave %q, %v", out, again, err)
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
		if Type(pat) == nil {
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
		p := store.AddParams{Type: typ, Key: key, Group: group, MaxAttempts: attempts,
			BackoffBase: time.Duration(base), BackoffMax: time.Duration(max)}
		if runAt != 0 {
			p.RunAt = time.Unix(0, runAt)
		}
		before := p
		out, _, err := Adds([]store.AddParams{p})
		if !reflect.DeepEqual(p, before) {
			t.Fatal("Adds changed its input")
		}
		if err != nil {
			invalid(t, err)
			return
		}
		q := out[0]
		if Type(q.Type) != nil || q.MaxAttempts <= 0 || q.BackoffBase <= 0 || q.BackoffMax < q.BackoffBase {
			t.Fatalf("accepted %+v", q)
		}
		// What was accepted, with its defaults filled in, is accepted as is.
		again, _, err := Adds(out)
		if err != nil || !reflect.DeepEqual(again[0], q) {
			t.Fatalf("checking %+v again: %+v, %v", q, again[0], err)
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
		if err := Meta(m); err != nil {
			invalid(t, err)
			return
		}
		back, err := backend.ParseMetaJSON(backend.MetaJSON(m))
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
	deep := strings.Repeat(`{"a":`, store.MaxDataDepth+1) + `1` + strings.Repeat(`}`, store.MaxDataDepth+1)
	if _, err := Data("data", []byte(deep)); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "nests 65 levels deep, more than 64") {
		t.Errorf("data nested %d deep: %v", store.MaxDataDepth+1, err)
	}
	ok := strings.Repeat(`[`, store.MaxDataDepth) + strings.Repeat(`]`, store.MaxDataDepth)
	if _, err := Result([]byte(ok)); err != nil {
		t.Errorf("a result nested %d deep: %v", store.MaxDataDepth, err)
	}
	_, _, err := Adds(make([]store.AddParams, store.MaxAddBatch+1))
	if !errors.Is(err, store.ErrTooLarge) || !errors.Is(err, store.ErrInvalid) {
		t.Errorf("an add of %d jobs: %v", store.MaxAddBatch+1, err)
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

func TestTypeNames(t *testing.T) {
	for _, bad := range []string{"", "tab\t", "nl\n", "del\x7f", string(make([]byte, 256)), "\xff",
		"..", ".", "zz/../../jobs/10/remove", "a/..", "../a", "a/./b"} {
		if err := Type(bad); err == nil {
			t.Errorf("Type(%q) accepted a bad type name", bad)
		}
	}
	// Every name Bedrock's users give their jobs, but for . and .. segments.
	for _, good := range []string{"email.send", "a/b", "Ünïcode", "a-b_c:d", "a,b", "a*", "a?", "a[b]", "{a}", "a\\b",
		"www-prod/UserActivityEvaluator?accountID=856", "a..b", "...", "a/.../b", ".hidden/x", "v1.2/..x"} {
		if err := Type(good); err != nil {
			t.Errorf("Type(%q): %v", good, err)
		}
	}
}
