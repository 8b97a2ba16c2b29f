package postgres_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
	"github.com/rotajobs/rota/store/sqlite"
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

// TestFoldsInOrder: changes of several transactions folded at once give
// the turns of applying each at its commit, as SQLite does. Group a ran
// out at turn 0 (its turn is 1, the type's clock 0); then a job is added
// to a and then one to a new group b. Applied in turn, a starts again at
// its turn, 1, and b at the clock of the backlogged groups, a's 1: a goes
// first (ties go by name). Applied together, both would read the clock
// before either, 0, and b would go first. Then the same with a cancel in
// between, which the plain fold leaves to the function.
func TestFoldsInOrder(t *testing.T) {
	pg := openIn(t, newSchema(t), postgres.Config{})
	lite, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	ctx := t.Context()
	for _, s := range []store.Store{pg, lite} {
		add := func(grp string) int64 {
			t.Helper()
			res, err := s.Add(ctx, []store.AddParams{{Type: "mail", Group: grp, Data: []byte(`{}`)}})
			if err != nil {
				t.Fatal(err)
			}
			return res[0].Job.ID
		}
		accept := func() string {
			t.Helper()
			res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"mail"}, Limit: 1, Worker: "w"})
			if err != nil || len(res.Jobs) != 1 {
				t.Fatalf("accept = %+v, %v; want one job", res.Jobs, err)
			}
			return res.Jobs[0].Group
		}
		add("a")
		if g := accept(); g != "a" {
			t.Fatalf("accepted from %q, want a", g)
		}
		add("a")
		add("b")
		if got := accept() + accept(); got != "ab" {
			t.Errorf("%T: groups served in order %q, want ab", s, got)
		}
		add("c")
		gone := add("c")
		add("d")
		if _, err := s.Cancel(ctx, []int64{gone}); err != nil {
			t.Fatal(err)
		}
		add("e")
		var got string
		for range 3 {
			got += accept()
		}
		if got != "cde" {
			t.Errorf("%T: groups served in order %q, want cde", s, got)
		}
	}
}

// TestSweepFolds: the lease sweep folds every type's pending changes, so
// that nodes that do not fold (an older version during a rolling
// upgrade) see jobs that no newer node's claim has folded.
func TestSweepFolds(t *testing.T) {
	schema := newSchema(t)
	s := openIn(t, schema, postgres.Config{})
	ctx := t.Context()
	if _, err := s.Add(ctx, []store.AddParams{{Type: "mail", Group: "a", Data: []byte(`{}`)}, {Type: "sms", Group: "b", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	tbl := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	var left, pending int64
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+tbl("pending_changes")).Scan(&left); err != nil || left == 0 {
		t.Fatalf("%d pending changes after the adds (%v), want some to fold", left, err)
	}
	if _, _, err := s.ExpireLeases(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM `+tbl("pending_changes")+`), (SELECT sum(pending) FROM `+tbl("groups")+`)`).Scan(&left, &pending); err != nil {
		t.Fatal(err)
	}
	if left != 0 || pending != 2 {
		t.Errorf("after the sweep: %d pending changes, %d pending counted in groups; want 0 and 2", left, pending)
	}
}
