package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
	"github.com/rotajobs/rota/store/storetest"
)

func openAt(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path, sqlite.Config{})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func open(t *testing.T) *sqlite.Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "rota.db"))
}

// TestConformance runs the conformance suite, and checks after each of
// its tests that the group counts accept relies on match the jobs.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := open(t)
		t.Cleanup(func() { checkGroupCounts(t, s) })
		return s
	})
}

func TestSchemaVersion(t *testing.T) {
	s := open(t)
	v, err := s.SchemaVersion(t.Context())
	if err != nil {
		t.Fatalf("SchemaVersion: %v", err)
	}
	if v <= 0 {
		t.Errorf("SchemaVersion = %d, want > 0 after Open ran the migrations", v)
	}
}

func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	s := openAt(t, path)
	ctx := t.Context()
	if err := s.SetTypeConfig(ctx, store.TypeConfig{Type: "report.build", LeaseTimeout: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Add(ctx, []store.AddParams{
		{Type: "email.send", Key: "welcome", Data: raw(`{"to":"a@example.com"}`)},
		{Type: "report.build", Priority: 5},
		{Type: "email.digest", RunAt: time.Now().Add(time.Hour)},
	})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := s.Accept(ctx, store.AcceptParams{Types: []string{"report.build"}})
	if err != nil || len(acc.Jobs) != 1 {
		t.Fatalf("Accept = %v, %v", acc.Jobs, err)
	}
	running := acc.Jobs[0]
	ids := []int64{res[0].Job.ID, res[1].Job.ID, res[2].Job.ID}
	before, err := s.Get(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = openAt(t, path)
	after, err := s.Get(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if after[i].ID == 0 {
			t.Fatalf("job %d is gone after reopening the database", ids[i])
		}
		if after[i].State != before[i].State || after[i].Token != before[i].Token ||
			string(after[i].Data) != string(before[i].Data) || !after[i].RunAt.Equal(before[i].RunAt) {
			t.Errorf("job %d after reopen = %+v, want %+v", ids[i], after[i], before[i])
		}
	}
	if j, err := s.GetByKey(ctx, "email.send", "", "welcome"); err != nil || j.ID != ids[0] {
		t.Errorf("GetByKey after reopen = %d, %v; want job %d", j.ID, err, ids[0])
	}
	cfgs, err := s.TypeConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cfgs {
		if c.Type == "report.build" && c.LeaseTimeout == 10*time.Minute {
			found = true
		}
	}
	if !found {
		t.Errorf("TypeConfigs after reopen = %+v, want report.build with 10m", cfgs)
	}
	// Types are known again, so patterns find their jobs.
	acc, err = s.Accept(ctx, store.AcceptParams{Types: []string{"email.*"}, Limit: 10, DueBy: time.Now().Add(2 * time.Hour)})
	if err != nil || len(acc.Jobs) != 2 {
		t.Errorf("Accept(email.*) after reopen took %d jobs (%v), want 2", len(acc.Jobs), err)
	}
	// The lease taken before the restart still holds.
	errs, err := s.Finish(ctx, []store.FinishParams{{Lease: store.Lease{ID: running.ID, Token: running.Token}, As: store.Complete}})
	if err != nil || errs[0] != nil {
		t.Errorf("Finish of a job accepted before reopen = %v, %v; want success", errs, err)
	}
}

// TestTypesPersistAfterRollback: a type first seen in a rolled-back AddTx
// must still be recorded when a later add commits, or patterns stop
// matching it after a restart.
func TestTypesPersistAfterRollback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	s := openAt(t, path)
	ctx := t.Context()
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddTx(ctx, tx, []store.AddParams{{Type: "ghost.type"}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, []store.AddParams{{Type: "ghost.type"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openAt(t, path)
	acc, err := s.Accept(ctx, store.AcceptParams{Types: []string{"ghost.*"}})
	if err != nil || len(acc.Jobs) != 1 {
		t.Errorf("Accept(ghost.*) after reopen took %d jobs (%v), want 1", len(acc.Jobs), err)
	}
}

func raw(s string) []byte { return []byte(s) }

// orders is the caller's own table, written in the same transactions as
// the jobs.
func setupOrders(t *testing.T, s *sqlite.Store) *sql.DB {
	t.Helper()
	db, err := s.DB()
	if err != nil {
		t.Fatalf("DB: %v", err)
	}
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)`); err != nil {
		t.Fatalf("create table: %v", err)
	}
	return db
}

func orderExists(t *testing.T, db *sql.DB, id int) bool {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM orders WHERE id = ?`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func getJob(t *testing.T, s *sqlite.Store, id int64) store.Job {
	t.Helper()
	jobs, err := s.Get(t.Context(), []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	return jobs[0]
}

func TestAddTx(t *testing.T) {
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "Commit", false: "Rollback"}[commit]
		t.Run(name, func(t *testing.T) {
			s := open(t)
			db := setupOrders(t, s)
			ctx := t.Context()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, note) VALUES (1, 'paid')`); err != nil {
				t.Fatal(err)
			}
			res, err := s.AddTx(ctx, tx, []store.AddParams{{Type: "order.ship", Key: "order-1", Data: raw(`{"order":1}`)}})
			if err != nil {
				t.Fatalf("AddTx: %v", err)
			}
			if len(res) != 1 || res[0].Outcome != store.Inserted || res[0].Job.ID == 0 {
				t.Fatalf("AddTx = %+v, want one inserted job", res)
			}
			id := res[0].Job.ID
			if j := getJob(t, s, id); j.ID != 0 {
				t.Errorf("job %d is visible before the caller's transaction committed", id)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			j := getJob(t, s, id)
			if commit {
				if j.ID != id || j.State != store.Pending || string(j.Data) != `{"order":1}` {
					t.Errorf("after commit job = %+v, want pending job %d with the data", j, id)
				}
				if !orderExists(t, db, 1) {
					t.Errorf("after commit the caller's row is missing")
				}
				acc, err := s.Accept(ctx, store.AcceptParams{Types: []string{"order.*"}})
				if err != nil || len(acc.Jobs) != 1 || acc.Jobs[0].ID != id {
					t.Errorf("Accept(order.*) after commit = %v, %v; want job %d", acc.Jobs, err, id)
				}
			} else {
				if j.ID != 0 {
					t.Errorf("after rollback job %d exists, want it gone", id)
				}
				if _, err := s.GetByKey(ctx, "order.ship", "", "order-1"); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("GetByKey after rollback: %v, want ErrNotFound", err)
				}
				if orderExists(t, db, 1) {
					t.Errorf("after rollback the caller's row exists")
				}
			}
		})
	}
}

func TestFinishTx(t *testing.T) {
	start := func(t *testing.T, s *sqlite.Store) store.Job {
		t.Helper()
		if _, err := s.Add(t.Context(), []store.AddParams{{Type: "pay"}}); err != nil {
			t.Fatal(err)
		}
		acc, err := s.Accept(t.Context(), store.AcceptParams{Types: []string{"pay"}})
		if err != nil || len(acc.Jobs) != 1 {
			t.Fatalf("Accept = %v, %v", acc.Jobs, err)
		}
		return acc.Jobs[0]
	}
	lease := func(j store.Job) store.Lease { return store.Lease{ID: j.ID, Token: j.Token} }

	t.Run("Commit", func(t *testing.T) {
		s := open(t)
		db := setupOrders(t, s)
		ctx := t.Context()
		j := start(t, s)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, note) VALUES (7, 'charged')`); err != nil {
			t.Fatal(err)
		}
		errs, err := s.FinishTx(ctx, tx, []store.FinishParams{{Lease: lease(j), As: store.Complete, Result: raw(`{"charged":true}`)}})
		if err != nil || len(errs) != 1 || errs[0] != nil {
			t.Fatalf("FinishTx = %v, %v; want success", errs, err)
		}
		if got := getJob(t, s, j.ID); got.State != store.Running {
			t.Errorf("job is %v before the caller committed, want still running", got.State)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		done := getJob(t, s, j.ID)
		if done.State != store.Completed || string(done.Result) != `{"charged":true}` {
			t.Errorf("after commit job is %v with result %s, want completed with the result", done.State, done.Result)
		}
		if !orderExists(t, db, 7) {
			t.Errorf("after commit the caller's row is missing")
		}
		// The runtime reports the same finish again; it agrees.
		errs, err = s.Finish(ctx, []store.FinishParams{{Lease: lease(j), As: store.Complete}})
		if err != nil || errs[0] != nil {
			t.Errorf("Finish after FinishTx with the same token = %v, %v; want success", errs, err)
		}
		if again := getJob(t, s, j.ID); again.State != store.Completed || string(again.Result) != `{"charged":true}` ||
			!again.UpdatedAt.Equal(done.UpdatedAt) {
			t.Errorf("the repeated finish changed the job: %+v, want %+v", again, done)
		}
	})

	t.Run("Rollback", func(t *testing.T) {
		s := open(t)
		db := setupOrders(t, s)
		ctx := t.Context()
		j := start(t, s)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, note) VALUES (7, 'charged')`); err != nil {
			t.Fatal(err)
		}
		errs, err := s.FinishTx(ctx, tx, []store.FinishParams{{Lease: lease(j), As: store.Complete}})
		if err != nil || errs[0] != nil {
			t.Fatalf("FinishTx = %v, %v; want success", errs, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		got := getJob(t, s, j.ID)
		if got.State != store.Running || got.Token != j.Token {
			t.Errorf("after rollback job is %v (token kept %v), want still running under the same lease", got.State, got.Token == j.Token)
		}
		if orderExists(t, db, 7) {
			t.Errorf("after rollback the caller's row exists")
		}
		errs, err = s.Finish(ctx, []store.FinishParams{{Lease: lease(j), As: store.Fail, Error: "rolled back"}})
		if err != nil || errs[0] != nil {
			t.Errorf("Finish after a rolled-back FinishTx = %v, %v; want success", errs, err)
		}
	})

	t.Run("StaleToken", func(t *testing.T) {
		s := open(t)
		db := setupOrders(t, s)
		ctx := t.Context()
		j := start(t, s)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		errs, err := s.FinishTx(ctx, tx, []store.FinishParams{
			{Lease: store.Lease{ID: j.ID, Token: "stale"}, As: store.Complete},
		})
		if err != nil {
			t.Fatalf("FinishTx: the call failed: %v", err)
		}
		if len(errs) != 1 || !errors.Is(errs[0], store.ErrWorkerConflict) {
			t.Errorf("FinishTx with a stale token = %v, want [ErrWorkerConflict]", errs)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if got := getJob(t, s, j.ID); got.State != store.Running {
			t.Errorf("job is %v after a stale FinishTx, want still running", got.State)
		}
	})
}

// A failed fsync of the log must not acknowledge anything: the add whose
// sync failed gets the error, and the store refuses writes from then on,
// since what reached the disk is unknown.
func TestSyncFailureStopsWrites(t *testing.T) {
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if _, err := s.Add(ctx, []store.AddParams{{Type: "t", Data: []byte(`{}`)}}); err != nil {
		t.Fatalf("Add before the failure: %v", err)
	}
	sqlite.BreakWAL(s)
	_, err = s.Add(ctx, []store.AddParams{{Type: "t", Data: []byte(`{}`)}})
	if err == nil || !strings.Contains(err.Error(), "sync") {
		t.Fatalf("Add with a failing sync: err = %v, want a sync error", err)
	}
	if _, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t"}, Limit: 10}); err == nil {
		t.Fatal("Accept after a failed sync succeeded; want the store to refuse writes")
	}
	if _, err := s.Add(ctx, []store.AddParams{{Type: "t", Data: []byte(`{}`)}}); err == nil {
		t.Fatal("Add after a failed sync succeeded")
	}
	// Reads still work and show the first add.
	res, err := s.List(ctx, store.ListParams{Types: []string{"t"}})
	if err != nil || len(res.Jobs) == 0 {
		t.Fatalf("List after the failure: %d jobs, %v", len(res.Jobs), err)
	}
}

// TestAcceptReadsClaimedJobs: an accept's jobs are read off the writer
// after their claim commits (readClaimed); each is what Get reads of it,
// and a job no longer under the accept's lease by then is left out.
func TestAcceptReadsClaimedJobs(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	added, err := s.Add(ctx, []store.AddParams{
		{Type: "mail", Key: "k1", Priority: 3, Data: raw(`{"to":"a"}`), Meta: map[string]string{"trace": "t1"}, MaxAttempts: 7,
			BackoffBase: time.Second, BackoffMax: time.Minute},
		{Type: "mail", Data: raw(`{"to":"b"}`), Group: "g"},
		{Type: "mail", Data: raw(`{"to":"c"}`), RetryAfter: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"mail"}, Limit: 10, Worker: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != len(added) {
		t.Fatalf("accepted %d jobs, want %d", len(res.Jobs), len(added))
	}
	ids := make([]int64, len(res.Jobs))
	for i, j := range res.Jobs {
		ids[i] = j.ID
	}
	got, err := s.Get(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range res.Jobs {
		g := got[i]
		// What Get reads and an accepted job carries, field by field.
		if a.ID != g.ID || a.Type != g.Type || a.Key != g.Key || a.Group != g.Group || a.Priority != g.Priority ||
			a.State != store.Running || g.State != store.Running || !a.RunAt.Equal(g.RunAt) ||
			string(a.Data) != string(g.Data) || a.Attempt != g.Attempt || a.MaxAttempts != g.MaxAttempts ||
			a.BackoffBase != g.BackoffBase || a.BackoffMax != g.BackoffMax || a.Token != g.Token || a.Worker != g.Worker ||
			!a.LeaseUntil.Equal(g.LeaseUntil) || !a.CreatedAt.Equal(g.CreatedAt) || !a.StartedAt.Equal(g.StartedAt) ||
			a.RetryAfter != g.RetryAfter || a.Meta["trace"] != g.Meta["trace"] || len(a.Meta) != len(g.Meta) {
			t.Errorf("accepted job %d:\n%+v\nGet reads\n%+v", a.ID, a, g)
		}
	}
	if res.Jobs[0].Meta["trace"] != "t1" || string(res.Jobs[0].Data) != `{"to":"a"}` || res.Jobs[0].Key != "k1" {
		t.Errorf("first job = %+v, want the first added", res.Jobs[0])
	}
	if d := res.Jobs[2].LeaseUntil.Sub(res.Jobs[2].StartedAt); d != time.Hour {
		t.Errorf("lease of a job with a retry-after: %v, want its retry-after (1h)", d)
	}

	// Between a claim's commit and its read, another party ends one job
	// and hands another back: only the third is still the accept's.
	claimed := slices.Clone(res.Jobs)
	errs, err := s.Finish(ctx, []store.FinishParams{
		{Lease: store.Lease{ID: claimed[0].ID, Token: claimed[0].Token}, As: store.Complete},
		{Lease: store.Lease{ID: claimed[1].ID, Token: claimed[1].Token}, As: store.Release},
	})
	if err != nil || errors.Join(errs...) != nil {
		t.Fatalf("Finish: %v %v", err, errs)
	}
	kept, err := sqlite.ReadClaimed(s, ctx, claimed)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].ID != claimed[2].ID {
		t.Errorf("read after the others ended: %d jobs (%+v), want job %d alone", len(kept), kept, claimed[2].ID)
	}
	// A lease the accept did not make (another token) is not its either.
	other := slices.Clone(kept)
	other[0].Token = "0123456789abcdef0123456789abcdef"
	if kept, err := sqlite.ReadClaimed(s, ctx, other); err != nil || len(kept) != 0 {
		t.Errorf("read under another token: %d jobs, %v; want none", len(kept), err)
	}
}
