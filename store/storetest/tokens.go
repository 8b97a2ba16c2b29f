package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// ---- named tokens ----

func testTokens(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ts, ok := s.(store.Tokens)
	if !ok {
		t.Skip("the store keeps no tokens")
	}
	ctx := t.Context()
	if list, err := ts.Tokens(ctx); err != nil || len(list) != 0 {
		t.Fatalf("Tokens of a new store = %v, %v; want none", list, err)
	}
	acme := store.Token{Name: "acme", Groups: []string{"acme-*", "acme"}, Types: []string{"mail.*"}, ReadOnly: true}
	if err := ts.CreateToken(ctx, acme, []byte("hash-acme")); err != nil {
		t.Fatal(err)
	}
	if err := ts.CreateToken(ctx, store.Token{Name: "all"}, []byte("hash-all")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		tok  store.Token
		hash string
	}{
		{store.Token{Name: "acme"}, "other"},                    // the name is taken
		{store.Token{Name: "other"}, "hash-acme"},               // the hash is taken
		{store.Token{Name: ""}, "x"},                            // no name
		{store.Token{Name: "p", Groups: []string{"a\tb"}}, "y"}, // a bad pattern
	} {
		if err := ts.CreateToken(ctx, bad.tok, []byte(bad.hash)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateToken(%+v) = %v, want ErrInvalid", bad.tok, err)
		}
	}
	got, err := ts.TokenByHash(ctx, []byte("hash-acme"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "acme" || !slices.Equal(got.Groups, acme.Groups) || !slices.Equal(got.Types, acme.Types) || !got.ReadOnly {
		t.Errorf("TokenByHash = %+v, want %+v", got, acme)
	}
	if d := time.Since(got.CreatedAt); d < -slack || d > slack {
		t.Errorf("created_at %v is not about now", got.CreatedAt)
	}
	if all, _ := ts.TokenByHash(ctx, []byte("hash-all")); all.Groups != nil || all.Types != nil || all.ReadOnly {
		t.Errorf("an unscoped token reads back as %+v", all)
	}
	if _, err := ts.TokenByHash(ctx, []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TokenByHash of an unknown hash = %v, want ErrNotFound", err)
	}
	list, err := ts.Tokens(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "acme" || list[1].Name != "all" {
		t.Errorf("Tokens = %+v, %v; want acme, all", list, err)
	}
	if err := ts.RevokeToken(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := ts.RevokeToken(ctx, "acme"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking twice = %v, want ErrNotFound", err)
	}
	if _, err := ts.TokenByHash(ctx, []byte("hash-acme")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a revoked token is still found: %v", err)
	}
}

// testAcceptGroups: an accept limited to some groups takes only their
// jobs, in the fair order among them.
func testAcceptGroups(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	for _, g := range []string{"acme-1", "acme-2", "beta", ""} {
		add(t, s, store.AddParams{Type: "t", Group: g}, store.AddParams{Type: "t", Group: g})
	}
	res := accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10, Groups: []string{"acme-*"}})
	if len(res.Jobs) != 4 {
		t.Fatalf("accept of groups acme-* took %d jobs, want 4", len(res.Jobs))
	}
	for _, j := range res.Jobs {
		if j.Group != "acme-1" && j.Group != "acme-2" {
			t.Errorf("accept of groups acme-* took a job of group %q", j.Group)
		}
	}
	if res.Jobs[0].Group == res.Jobs[1].Group {
		t.Errorf("the groups did not take turns: %q then %q", res.Jobs[0].Group, res.Jobs[1].Group)
	}
	res = accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10, Groups: []string{""}})
	if len(res.Jobs) != 2 || res.Jobs[0].Group != "" {
		t.Errorf("accept of the default group took %d jobs", len(res.Jobs))
	}
	res = accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10, Groups: []string{"nobody"}})
	if len(res.Jobs) != 0 {
		t.Errorf("accept of a group with no jobs took %d", len(res.Jobs))
	}
	if _, err := s.Accept(t.Context(), store.AcceptParams{Types: []string{"t"}, Groups: []string{"a\x01"}}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a bad group pattern: %v, want ErrInvalid", err)
	}
	res = accept(t, s, store.AcceptParams{Types: []string{"t"}, Limit: 10})
	if len(res.Jobs) != 2 || res.Jobs[0].Group != "beta" {
		t.Errorf("an accept of every group took %d jobs, want beta's 2", len(res.Jobs))
	}
}
