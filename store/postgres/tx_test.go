package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// The store works with the engine's transactional forms (database/sql).
var _ rota.TxStore = (*postgres.Store)(nil)

// userTx abstracts the caller's transaction, database/sql or pgx, so that
// each test runs with both.
type userTx struct {
	exec     func(ctx context.Context, sql string, args ...any) error
	add      func(ctx context.Context, jobs []store.AddParams) ([]store.AddResult, error)
	finish   func(ctx context.Context, ps []store.FinishParams) ([]error, error)
	commit   func() error
	rollback func() error
}

var txKinds = []struct {
	name  string
	begin func(t *testing.T, s *postgres.Store) userTx
}{
	{"database/sql", func(t *testing.T, s *postgres.Store) userTx {
		tx, err := s.DB().BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return userTx{
			exec: func(ctx context.Context, q string, args ...any) error {
				_, err := tx.ExecContext(ctx, q, args...)
				return err
			},
			add: func(ctx context.Context, jobs []store.AddParams) ([]store.AddResult, error) {
				return s.AddTx(ctx, tx, jobs)
			},
			finish: func(ctx context.Context, ps []store.FinishParams) ([]error, error) {
				return s.FinishTx(ctx, tx, ps)
			},
			commit: tx.Commit, rollback: tx.Rollback,
		}
	}},
	{"pgx", func(t *testing.T, s *postgres.Store) userTx {
		tx, err := s.Pool().Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return userTx{
			exec: func(ctx context.Context, q string, args ...any) error { _, err := tx.Exec(ctx, q, args...); return err },
			add: func(ctx context.Context, jobs []store.AddParams) ([]store.AddResult, error) {
				return s.AddPgxTx(ctx, tx, jobs)
			},
			finish: func(ctx context.Context, ps []store.FinishParams) ([]error, error) {
				return s.FinishPgxTx(ctx, tx, ps)
			},
			commit:   func() error { return tx.Commit(context.Background()) },
			rollback: func() error { return tx.Rollback(context.Background()) },
		}
	}},
}

// setupOrders creates the caller's own table, written in the same
// transactions as the jobs.
func setupOrders(t *testing.T, s *postgres.Store) string {
	t.Helper()
	table := pgx.Identifier{s.Schema(), "orders"}.Sanitize()
	if _, err := s.Pool().Exec(t.Context(), `CREATE TABLE `+table+` (id bigint PRIMARY KEY, note text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return table
}

func orderExists(t *testing.T, s *postgres.Store, table string, id int) bool {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM `+table+` WHERE id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func getJob(t *testing.T, s store.Store, id int64) store.Job {
	t.Helper()
	jobs, err := s.Get(t.Context(), []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	return jobs[0]
}

func TestAddTx(t *testing.T) {
	for _, kind := range txKinds {
		for _, commit := range []bool{true, false} {
			t.Run(kind.name+"/"+map[bool]string{true: "Commit", false: "Rollback"}[commit], func(t *testing.T) {
				s := open(t)
				orders := setupOrders(t, s)
				ctx := t.Context()
				tx := kind.begin(t, s)
				if err := tx.exec(ctx, `INSERT INTO `+orders+` (id, note) VALUES (1, 'paid')`); err != nil {
					t.Fatal(err)
				}
				res, err := tx.add(ctx, []store.AddParams{{Type: "order.ship", Key: "order-1", Data: []byte(`{"order":1}`)}})
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
					err = tx.commit()
				} else {
					err = tx.rollback()
				}
				if err != nil {
					t.Fatal(err)
				}
				j := getJob(t, s, id)
				if !commit {
					if j.ID != 0 || orderExists(t, s, orders, 1) {
						t.Errorf("after rollback: job %d exists %v, order exists %v; want neither", id, j.ID != 0, orderExists(t, s, orders, 1))
					}
					if _, err := s.GetByKey(ctx, "order.ship", "", "order-1"); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("GetByKey after rollback: %v, want ErrNotFound", err)
					}
					return
				}
				if j.ID != id || j.State != store.Pending || string(j.Data) != `{"order":1}` || !orderExists(t, s, orders, 1) {
					t.Errorf("after commit job = %+v, order exists %v; want the pending job and the order", j, orderExists(t, s, orders, 1))
				}
				// The type was registered in the same transaction: a pattern finds it.
				acc, err := s.Accept(ctx, store.AcceptParams{Types: []string{"order.*"}})
				if err != nil || len(acc.Jobs) != 1 || acc.Jobs[0].ID != id {
					t.Errorf("Accept(order.*) after commit = %v, %v; want job %d", acc.Jobs, err, id)
				}
			})
		}
	}
}

// TestAddTxTypesAfterRollback: a type first seen in a rolled-back AddTx is
// registered by a later add, and another node's pattern then finds it.
func TestAddTxTypesAfterRollback(t *testing.T) {
	schema := newSchema(t)
	a := openIn(t, schema, postgres.Config{})
	ctx := t.Context()
	tx, err := a.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddPgxTx(ctx, tx, []store.AddParams{{Type: "ghost.type"}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Add(ctx, []store.AddParams{{Type: "ghost.type"}}); err != nil {
		t.Fatal(err)
	}
	b := openIn(t, schema, postgres.Config{NoListen: true})
	acc, err := b.Accept(ctx, store.AcceptParams{Types: []string{"ghost.*"}})
	if err != nil || len(acc.Jobs) != 1 {
		t.Errorf("Accept(ghost.*) on a new node took %d jobs (%v), want 1", len(acc.Jobs), err)
	}
}

func TestFinishTx(t *testing.T) {
	start := func(t *testing.T, s *postgres.Store) store.Job {
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
	for _, kind := range txKinds {
		t.Run(kind.name+"/Commit", func(t *testing.T) {
			s := open(t)
			orders := setupOrders(t, s)
			ctx := t.Context()
			j := start(t, s)
			tx := kind.begin(t, s)
			if err := tx.exec(ctx, `INSERT INTO `+orders+` (id, note) VALUES (7, 'charged')`); err != nil {
				t.Fatal(err)
			}
			errs, err := tx.finish(ctx, []store.FinishParams{{Lease: j.Lease(), As: store.Complete, Result: []byte(`{"charged":true}`)}})
			if err != nil || len(errs) != 1 || errs[0] != nil {
				t.Fatalf("FinishTx = %v, %v; want success", errs, err)
			}
			if got := getJob(t, s, j.ID); got.State != store.Running {
				t.Errorf("job is %v before the caller committed, want still running", got.State)
			}
			if err := tx.commit(); err != nil {
				t.Fatal(err)
			}
			done := getJob(t, s, j.ID)
			if done.State != store.Completed || string(done.Result) != `{"charged":true}` || !orderExists(t, s, orders, 7) {
				t.Errorf("after commit job is %v with result %s (order exists %v), want completed with the result and the order",
					done.State, done.Result, orderExists(t, s, orders, 7))
			}
			// The runtime reports the same finish again; it agrees and changes nothing.
			errs, err = s.Finish(ctx, []store.FinishParams{{Lease: j.Lease(), As: store.Complete}})
			if err != nil || errs[0] != nil {
				t.Errorf("Finish after FinishTx with the same token = %v, %v; want success", errs, err)
			}
			if again := getJob(t, s, j.ID); !again.UpdatedAt.Equal(done.UpdatedAt) || string(again.Result) != `{"charged":true}` {
				t.Errorf("the repeated finish changed the job: %+v, want %+v", again, done)
			}
		})

		t.Run(kind.name+"/Rollback", func(t *testing.T) {
			s := open(t)
			orders := setupOrders(t, s)
			ctx := t.Context()
			j := start(t, s)
			tx := kind.begin(t, s)
			if err := tx.exec(ctx, `INSERT INTO `+orders+` (id, note) VALUES (7, 'charged')`); err != nil {
				t.Fatal(err)
			}
			if errs, err := tx.finish(ctx, []store.FinishParams{{Lease: j.Lease(), As: store.Complete}}); err != nil || errs[0] != nil {
				t.Fatalf("FinishTx = %v, %v; want success", errs, err)
			}
			if err := tx.rollback(); err != nil {
				t.Fatal(err)
			}
			if got := getJob(t, s, j.ID); got.State != store.Running || got.Token != j.Token || orderExists(t, s, orders, 7) {
				t.Errorf("after rollback job is %v (same token %v), order exists %v; want still running under the lease, no order",
					got.State, got.Token == j.Token, orderExists(t, s, orders, 7))
			}
			if errs, err := s.Finish(ctx, []store.FinishParams{{Lease: j.Lease(), As: store.Fail, Error: "rolled back"}}); err != nil || errs[0] != nil {
				t.Errorf("Finish after a rolled-back FinishTx = %v, %v; want success", errs, err)
			}
		})

		t.Run(kind.name+"/StaleToken", func(t *testing.T) {
			s := open(t)
			ctx := t.Context()
			j := start(t, s)
			tx := kind.begin(t, s)
			errs, err := tx.finish(ctx, []store.FinishParams{{Lease: store.Lease{ID: j.ID, Token: "stale"}, As: store.Complete}})
			if err != nil {
				t.Fatalf("FinishTx: the call failed: %v", err)
			}
			if len(errs) != 1 || !errors.Is(errs[0], store.ErrWorkerConflict) {
				t.Errorf("FinishTx with a stale token = %v, want [ErrWorkerConflict]", errs)
			}
			if err := tx.rollback(); err != nil {
				t.Fatal(err)
			}
			if got := getJob(t, s, j.ID); got.State != store.Running {
				t.Errorf("job is %v after a stale FinishTx, want still running", got.State)
			}
		})
	}
}

// TestTxNotifiesOnCommit: changes made in a caller's transaction reach
// other nodes (and this one) when it commits, and never when it rolls
// back.
func TestTxNotifiesOnCommit(t *testing.T) {
	schema := newSchema(t)
	a := openIn(t, schema, postgres.Config{})
	b := openIn(t, schema, postgres.Config{})
	ctx := t.Context()
	seen := make(chan store.Event, 100)
	for _, s := range []*postgres.Store{a, b} {
		stop := s.Watch(func(cs []store.Event) {
			for _, c := range cs {
				seen <- c
			}
		})
		defer stop()
	}
	add := func(commit bool) int64 {
		tx, err := a.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.AddPgxTx(ctx, tx, []store.AddParams{{Type: "tx.job"}})
		if err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Job.ID
	}
	rolledBack := add(false)
	committed := add(true)
	// Both stores hear of the committed job, and notifications arrive in
	// commit order, so by then a notification of the rolled-back one
	// would have come first.
	got := map[int64]int{}
	timeout := time.After(10 * time.Second)
	for got[committed] < 2 {
		select {
		case c := <-seen:
			got[c.ID]++
			if c.ID == committed && (c.State != store.Pending || c.Type != "tx.job") {
				t.Errorf("change of the committed job = %+v, want pending tx.job", c)
			}
		case <-timeout:
			t.Fatalf("after 10s the stores delivered %d changes of the job added in a committed transaction, want 2 (one each)", got[committed])
		}
	}
	if got[rolledBack] != 0 {
		t.Errorf("the job added in a rolled-back transaction was delivered %d times, want never", got[rolledBack])
	}
}

func TestTypesAcrossNodesWithoutNotifications(t *testing.T) {
	schema := newSchema(t)
	a := openIn(t, schema, postgres.Config{NoNotify: true})
	b := openIn(t, schema, postgres.Config{NoListen: true})
	ctx := t.Context()
	if acc, err := b.Accept(ctx, store.AcceptParams{Types: []string{"late.*"}}); err != nil || len(acc.Jobs) != 0 {
		t.Fatalf("Accept(late.*) on an empty store = %v, %v", acc.Jobs, err)
	}
	res, err := a.Add(ctx, []store.AddParams{{Type: "late.one"}, {Type: "late.two", RunAt: time.Now().Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	// b heard nothing, but a pattern that comes back short re-reads the
	// types.
	acc, err := b.Accept(ctx, store.AcceptParams{Types: []string{"late.*"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := jobIDs(acc.Jobs); !slices.Equal(got, []int64{res[0].Job.ID}) {
		t.Errorf("Accept(late.*) on the other node = %v, want the job of the new type late.one (%d)", got, res[0].Job.ID)
	}
	if !acc.NextRunAt.Equal(res[1].Job.RunAt) {
		t.Errorf("NextRunAt = %v, want the run time of the late.two job %v", acc.NextRunAt, res[1].Job.RunAt)
	}
}

func jobIDs(jobs []store.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// TestConcurrentAddsMerged: adds from many goroutines share inserts; each
// caller gets back its own jobs, in its order.
func TestConcurrentAddsMerged(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	const callers = 40
	var wg sync.WaitGroup
	seen := make(chan int64, callers*10)
	for c := range callers {
		wg.Go(func() {
			n := 1 + c%7
			ps := make([]store.AddParams, n)
			for i := range ps {
				ps[i] = store.AddParams{Type: fmt.Sprintf("merge.%d", c%3), Group: fmt.Sprint(c), Data: []byte(fmt.Sprintf(`{"c":%d,"i":%d}`, c, i))}
			}
			res, err := s.Add(ctx, ps)
			if err != nil || len(res) != n {
				t.Errorf("caller %d: Add = %d results, %v; want %d", c, len(res), err, n)
				return
			}
			for i, r := range res {
				if r.Job.Type != ps[i].Type || r.Job.Group != ps[i].Group || string(r.Job.Data) != string(ps[i].Data) {
					t.Errorf("caller %d item %d got job %+v, want its own", c, i, r.Job)
				}
				if i > 0 && r.Job.ID <= res[i-1].Job.ID {
					t.Errorf("caller %d: ids %d then %d, want increasing in batch order", c, res[i-1].Job.ID, r.Job.ID)
				}
				seen <- r.Job.ID
			}
			got := getJob(t, s, res[0].Job.ID)
			if string(got.Data) != string(ps[0].Data) {
				t.Errorf("caller %d: stored job %d has data %s, want %s", c, got.ID, got.Data, ps[0].Data)
			}
		})
	}
	wg.Wait()
	close(seen)
	ids := map[int64]bool{}
	for id := range seen {
		if ids[id] {
			t.Errorf("id %d handed to two jobs", id)
		}
		ids[id] = true
	}
}
