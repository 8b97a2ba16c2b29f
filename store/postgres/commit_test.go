package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// TestFailedCommitIsNotAcknowledged fails the commits of the store's
// statements after their rows came back (a deferred constraint trigger,
// as a crash between a statement and its commit does) and checks that
// no operation reports success or publishes a change that did not
// commit. The completion was answered as done, and its change published,
// when PostgreSQL crashed during its commit (TestChaosPostgres on CI: a
// job completed under two leases).
func TestFailedCommitIsNotAcknowledged(t *testing.T) {
	schema := newSchema(t)
	s := openIn(t, schema, postgres.Config{NoNotify: true})
	ctx := t.Context()
	added, err := s.Add(ctx, []store.AddParams{{Type: "t"}, {Type: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t"}, Limit: 1})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("Accept: %v, %d jobs", err, len(res.Jobs))
	}
	leased := res.Jobs[0]

	var mu sync.Mutex
	var published []store.Event
	defer s.Watch(func(cs []store.Event) {
		mu.Lock()
		published = append(published, cs...)
		mu.Unlock()
	})()

	refuse := func(on bool) {
		t.Helper()
		conn, err := pgx.Connect(ctx, testDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		q := pgx.Identifier{schema}.Sanitize()
		stmts := []string{`DROP TRIGGER refuse ON ` + q + `.jobs`, `DROP TRIGGER refuse ON ` + q + `.jobs_ended`}
		if on {
			stmts = []string{
				`CREATE FUNCTION ` + q + `.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'commit refused by the test'; END $$`,
				`CREATE CONSTRAINT TRIGGER refuse AFTER INSERT OR UPDATE OR DELETE ON ` + q + `.jobs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ` + q + `.refuse()`,
				`CREATE CONSTRAINT TRIGGER refuse AFTER INSERT OR UPDATE OR DELETE ON ` + q + `.jobs_ended DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ` + q + `.refuse()`,
			}
		}
		for _, stmt := range stmts {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	refuse(true)

	fin := []store.FinishParams{{Lease: leased.Lease(), As: store.Complete}}
	if errs, err := s.Finish(ctx, fin); err == nil && errs[0] == nil {
		t.Error("Finish reported a completion whose commit failed as done")
	}
	if _, err := s.Add(ctx, []store.AddParams{{Type: "t"}}); err == nil {
		t.Error("Add reported an add whose commit failed as done")
	}
	hb := []store.HeartbeatParams{{Lease: leased.Lease(), Data: []byte(`{"n":1}`)}}
	if rs, err := s.Heartbeat(ctx, hb); err == nil && rs[0].Err == nil {
		t.Error("Heartbeat reported data whose commit failed as saved")
	}
	if res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t"}, Limit: 1}); err == nil && len(res.Jobs) > 0 {
		t.Errorf("Accept handed out job %d under a claim whose commit failed", res.Jobs[0].ID)
	}
	refuse(false)

	mu.Lock()
	for _, ev := range published {
		t.Errorf("a change that did not commit was published: %+v", ev)
	}
	mu.Unlock()
	other := added[0].Job.ID
	if other == leased.ID {
		other = added[1].Job.ID
	}
	js, err := s.Get(ctx, []int64{leased.ID, other})
	if err != nil || len(js) != 2 {
		t.Fatalf("Get: %v, %d jobs", err, len(js))
	}
	for _, j := range js {
		switch {
		case j.ID == leased.ID && (j.State != store.Running || j.Token != leased.Token):
			t.Errorf("job %d after the failed completion: state %v, token %q (want running under %q)", j.ID, j.State, j.Token, leased.Token)
		case j.ID == other && j.State != store.Pending:
			t.Errorf("job %d after the failed claim: state %v (want pending)", j.ID, j.State)
		}
	}
	if errs, err := s.Finish(ctx, fin); err != nil || errs[0] != nil {
		t.Fatalf("Finish once commits succeed again: %v %v", err, errs)
	}
}

// TestAcceptKeepsTheRoundsThatCommitted: an accept whose later round's
// claim fails at its commit answers the jobs of the rounds that committed
// before it (they are leased), without the error, and not the failed
// round's: that job stays pending.
func TestAcceptKeepsTheRoundsThatCommitted(t *testing.T) {
	schema := newSchema(t)
	s := openIn(t, schema, postgres.Config{NoNotify: true})
	ctx := t.Context()
	if _, err := s.Add(ctx, []store.AddParams{{Type: "t", Group: "a"}, {Type: "t", Group: "b"}}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	q := pgx.Identifier{schema}.Sanitize()
	for _, stmt := range []string{
		`CREATE FUNCTION ` + q + `.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'claim of group b refused by the test'; END $$`,
		`CREATE CONSTRAINT TRIGGER refuse AFTER UPDATE ON ` + q + `.jobs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.grp = 'b') EXECUTE FUNCTION ` + q + `.refuse()`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	res, err := s.Accept(ctx, store.AcceptParams{Types: []string{"t"}, Limit: 2})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].Group != "a" {
		t.Fatalf("Accept: %v, %d jobs (want group a's job from the round that committed, without an error)", err, len(res.Jobs))
	}
	all, err := s.List(ctx, store.ListParams{Types: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range all.Jobs {
		if want := map[string]store.State{"a": store.Running, "b": store.Pending}[j.Group]; j.State != want {
			t.Errorf("job %d of group %s: %v, want %v", j.ID, j.Group, j.State, want)
		}
	}
}
