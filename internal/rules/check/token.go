package check

import (
	"fmt"

	"github.com/rotajobs/rota/store"
)

// Token reports whether t can be stored: a name of 1..255 bytes
// without control characters, and patterns that compile.
func Token(t store.Token) error {
	if err := checkName("token name", t.Name, true); err != nil {
		return err
	}
	for _, list := range [][]string{t.Groups, t.Types} {
		if len(list) > 100 {
			return Invalidf("token %q has %d patterns in one list, more than 100", t.Name, len(list))
		}
		for _, p := range list {
			if _, err := CompilePattern(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// TokenNotFound is the error of a token name or secret that is no
// token's; it matches store.ErrNotFound.
func TokenNotFound(name string) error {
	if name == "" {
		return &noToken{"no such token (unknown, or revoked)"}
	}
	return &noToken{fmt.Sprintf("no token named %q", name)}
}

type noToken struct{ msg string }

func (e *noToken) Error() string        { return e.msg }
func (e *noToken) Is(target error) bool { return target == store.ErrNotFound }
