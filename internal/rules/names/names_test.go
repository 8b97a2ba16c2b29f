package names_test

import (
	"strings"
	"testing"

	"github.com/rotajobs/rota/internal/rules/names"
	"github.com/rotajobs/rota/store"
)

// TestMaxLenIsStores: the limit users read in store's documentation is
// the one the rule applies.
func TestMaxLenIsStores(t *testing.T) {
	if names.MaxLen != store.MaxNameLen {
		t.Fatalf("names.MaxLen %d, store.MaxNameLen %d", names.MaxLen, store.MaxNameLen)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		s        string
		required bool
		wrong    string // "" when the name is good
	}{
		{"email.send", true, ""},
		{"", false, ""},
		{"", true, "key is required"},
		{strings.Repeat("x", names.MaxLen), true, ""},
		{strings.Repeat("x", names.MaxLen+1), true, "key is 256 bytes long, more than 255"},
		{"a\xffb", true, "key is not valid UTF-8"},
		{"a\x00b", true, `key "a\x00b" contains a control character`},
		{"a\x7fb", true, `key "a\x7fb" contains a control character`},
	} {
		err := names.Check("key", c.s, c.required)
		if c.wrong == "" && err != nil || c.wrong != "" && (err == nil || err.Error() != c.wrong) {
			t.Errorf("Check(%q, %v) = %v, want %q", c.s, c.required, err, c.wrong)
		}
	}
}
