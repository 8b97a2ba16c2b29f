package rota_test

import (
	"context"
	"testing"

	"github.com/rotajobs/rota"
)

// TestQuotePattern: a type whose name holds pattern characters is
// accepted alone through its quoted pattern, while the name itself, as a
// pattern, selects its neighbours too (docs/concepts.md, "Type patterns").
func TestQuotePattern(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	for _, typ := range []string{"a?b", "axb"} {
		if _, err := c.Add(ctx, rota.AddParams{Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	if got := rota.QuotePattern("a?b"); got != "a[?]b" {
		t.Fatalf("QuotePattern(a?b) = %q", got)
	}
	jobs, err := c.Accept(ctx, rota.AcceptParams{Types: []string{rota.QuotePattern("a?b")}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Type != "a?b" {
		t.Fatalf("the quoted pattern took %+v, want the one job of type a?b", jobs)
	}
	jobs, err = c.Accept(ctx, rota.AcceptParams{Types: []string{"a?b"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Type != "axb" {
		t.Fatalf("the pattern a?b took %+v, want the job of type axb left", jobs)
	}
}
