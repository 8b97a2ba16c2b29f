package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/postgres"
)

// TestAuditInTransaction shows that a change and its audit record are one
// transaction: when the record cannot be written (a deferred constraint
// trigger raises at the commit) the change is refused and nothing of it is
// applied, and when the change cannot be written no record is left.
func TestAuditInTransaction(t *testing.T) {
	schema := newSchema(t)
	s := openIn(t, schema, postgres.Config{})
	ctx := store.WithActor(context.Background(), "alice")
	conn, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	sch := pgx.Identifier{schema}.Sanitize()
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE FUNCTION ` + sch + `.injected_failure() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`)
	inject := func(event, table string) {
		exec(`CREATE CONSTRAINT TRIGGER injected AFTER ` + event + ` ON ` + sch + `.` + table +
			` DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ` + sch + `.injected_failure()`)
	}
	records := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+sch+`.audit`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	res, err := s.Add(ctx, []store.AddParams{{Type: "invoice", Group: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	j := res[0].Job

	inject("INSERT", "audit")
	if _, err := s.Cancel(ctx, []int64{j.ID}); err == nil {
		t.Fatal("Cancel succeeded though its audit record could not be written")
	}
	p := 5
	if _, _, err := s.Update(ctx, []store.UpdateParams{{ID: j.ID, Priority: &p}}); err == nil {
		t.Fatal("Update succeeded though its audit record could not be written")
	}
	if err := s.SetTypeConfig(ctx, store.TypeConfig{Type: "invoice", Paused: true}); err == nil {
		t.Fatal("a pause succeeded though its audit record could not be written")
	}
	if err := s.SetGroupConfig(ctx, store.GroupConfig{Group: "acme", Paused: true}); err == nil {
		t.Fatal("a group's pause succeeded though its audit record could not be written")
	}
	got, err := s.Get(ctx, []int64{j.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].State != store.Pending || got[0].Priority != 0 {
		t.Errorf("after refused changes the job is %v with priority %d, want pending with 0", got[0].State, got[0].Priority)
	}
	tcs, _ := s.TypeConfigs(ctx)
	for _, tc := range tcs {
		if tc.Paused {
			t.Errorf("type %s paused by a refused change", tc.Type)
		}
	}
	if gcs, _ := s.GroupConfigs(ctx); len(gcs) != 0 {
		t.Errorf("group settings %v left by a refused change", gcs)
	}
	exec(`DROP TRIGGER injected ON ` + sch + `.audit`)

	// The change fails: no record.
	inject("UPDATE OR DELETE", "jobs") // a cancel moves a pending job to jobs_ended
	if _, err := s.Cancel(ctx, []int64{j.ID}); err == nil {
		t.Fatal("Cancel succeeded though the job could not be written")
	}
	if n := records(); n != 0 {
		t.Errorf("%d audit records after refused changes, want none", n)
	}
	exec(`DROP TRIGGER injected ON ` + sch + `.jobs`)

	if _, err := s.Cancel(ctx, []int64{j.ID}); err != nil {
		t.Fatal(err)
	}
	if n := records(); n != 1 {
		t.Errorf("%d audit records after a cancel, want 1", n)
	}
}
