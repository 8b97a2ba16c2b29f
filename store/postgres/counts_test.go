package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// TestAddsDoNotWaitForEachOther: an add whose transaction is held open
// (AddPgxTx in a caller's transaction) holds nothing that another add of
// the same group, a claim of the group, or a cancel waits for. The pending
// counts they change are appended (pending_changes) and folded into the
// group's row by claims, so no add holds the group's row through its
// commit. Before, the open add held the row and the others waited for it.
func TestAddsDoNotWaitForEachOther(t *testing.T) {
	schema := newSchema(t)
	s := openIn(t, schema, postgres.Config{MaxConns: 8})
	ctx := t.Context()
	job := store.AddParams{Type: "mail", Group: "acme", Data: []byte(`{}`)}
	// The group exists with a job, as on a busy queue.
	if _, err := s.Add(ctx, []store.AddParams{job}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	held, err := s.AddPgxTx(ctx, tx, []store.AddParams{job})
	if err != nil {
		t.Fatal(err)
	}
	within := func(what string, f func(context.Context) error) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := f(c); err != nil {
			t.Fatalf("%s while another add's transaction is open: %v", what, err)
		}
	}
	var added []store.AddResult
	within("an add of the same group", func(c context.Context) error {
		added, err = s.Add(c, []store.AddParams{job, job})
		return err
	})
	var got store.AcceptResult
	within("an accept of the group", func(c context.Context) error {
		got, err = s.Accept(c, store.AcceptParams{Types: []string{"mail"}, Limit: 10, Worker: "w"})
		return err
	})
	if len(got.Jobs) != 3 {
		t.Fatalf("accepted %d jobs, want the 3 committed", len(got.Jobs))
	}
	within("a cancel in the group", func(c context.Context) error {
		_, err := s.Cancel(c, []int64{got.Jobs[0].ID})
		return err
	})
	within("another add in a transaction", func(c context.Context) error {
		tx2, err := s.Pool().Begin(c)
		if err != nil {
			return err
		}
		defer tx2.Rollback(context.WithoutCancel(c))
		if _, err := s.AddPgxTx(c, tx2, []store.AddParams{job}); err != nil {
			return err
		}
		return tx2.Commit(c)
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// The held add's job and the last one are counted once committed.
	got, err = s.Accept(ctx, store.AcceptParams{Types: []string{"mail"}, Limit: 10, Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Jobs) != 2 || got.Jobs[0].ID != held[0].Job.ID {
		t.Fatalf("accepted %+v after the commit, want the held add's job %d and one more", got.Jobs, held[0].Job.ID)
	}
	_ = added
	checkCounts(t, s, schema)
}
