package backend

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rotajobs/rota/store"
)

// TestGroupRanges: every group a reach holds is within one of its
// ranges, so a store's query narrowed by them misses none.
func TestGroupRanges(t *testing.T) {
	groups := []string{"", "a", "acme", "acme-", "acme-1", "acme-é", "acmf", "b", "beta", "beta-x", "zz\U0010FFFF", "é", "ê", "\uD7FF"}
	for _, pats := range [][]string{{"acme-*"}, {"acme-?", "beta"}, {""}, {"", "b*"}, {"é*"}, {"zz\U0010FFFF*"}, {"\uD7FF*"}, {"[ab]*"}, {"*"}} {
		r, err := store.NewReach(pats, nil)
		if err != nil {
			t.Fatal(err)
		}
		ranges := GroupRanges(r)
		for _, g := range groups {
			if !r.HasGroup(g) {
				continue
			}
			if ranges == nil {
				continue // no narrowing: every group is read
			}
			in := false
			for _, rg := range ranges {
				in = in || g >= rg[0] && (rg[1] == "" || g < rg[1])
			}
			if !in {
				t.Errorf("patterns %q: group %q in reach is outside the ranges %q", pats, g, ranges)
			}
		}
		if (pats[0] == "*" || strings.HasPrefix(pats[0], "[")) != (ranges == nil) {
			t.Errorf("patterns %q: ranges %q", pats, ranges)
		}
	}
	if got := fmt.Sprint(successor("acme-")); got != "acme." {
		t.Errorf("successor(acme-) = %q", got)
	}
	if got := successor("\U0010FFFF"); got != "" {
		t.Errorf("successor(max rune) = %q, want no bound", got)
	}
	if got := successor("a\uD7FF"); got != "a\uE000" {
		t.Errorf("successor past the surrogates = %q", got)
	}
}
