// Package names holds the rule for the names a job and its callers carry
// (types, keys, groups, meta keys, workers, tokens): 1..MaxLen bytes of
// UTF-8 without control characters. It is a leaf, below the store
// package, so that the store's own types (Reach) and the validation of
// every request (internal/rules/check) share one rule; its errors are
// plain, and each caller makes them match store.ErrInvalid.
package names

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxLen bounds a name's length in bytes; store.MaxNameLen documents it
// for users (TestMaxLenIsStores).
const MaxLen = 255

// Check reports what is wrong with s as a what ("type", "key", …): too
// long, not UTF-8, a control character, or empty when required.
func Check(what, s string, required bool) error {
	if s == "" {
		if required {
			return errors.New(what + " is required")
		}
		return nil
	}
	if len(s) > MaxLen {
		return fmt.Errorf("%s is %d bytes long, more than %d", what, len(s), MaxLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%s %q contains a control character", what, s)
		}
	}
	return nil
}
