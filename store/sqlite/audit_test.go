package sqlite_test

import (
	"context"
	"testing"

	"github.com/rotajobs/rota/store"
)

// TestAuditInTransaction shows that a change and its audit record are one
// transaction: when the record cannot be written the change is refused
// and nothing of it is applied, and when the change cannot be written no
// record is left. Failures are injected with triggers on the database
// file, which the store's writer runs inside its transaction.
func TestAuditInTransaction(t *testing.T) {
	s := open(t)
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	ctx := store.WithActor(context.Background(), "alice")
	res, err := s.Add(ctx, []store.AddParams{{Type: "invoice", Group: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	j := res[0].Job
	records := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM rota_audit`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	exec(`CREATE TRIGGER injected AFTER INSERT ON rota_audit BEGIN SELECT RAISE(ABORT, 'injected failure'); END`)
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
	gcs, _ := s.GroupConfigs(ctx)
	for _, tc := range tcs {
		if tc.Paused {
			t.Errorf("type %s paused by a refused change", tc.Type)
		}
	}
	if len(gcs) != 0 {
		t.Errorf("group settings %v left by a refused change", gcs)
	}
	exec(`DROP TRIGGER injected`)

	// The change fails: no record.
	exec(`CREATE TRIGGER injected AFTER UPDATE ON rota_jobs BEGIN SELECT RAISE(ABORT, 'injected failure'); END`)
	if _, err := s.Cancel(ctx, []int64{j.ID}); err == nil {
		t.Fatal("Cancel succeeded though the job could not be written")
	}
	if n := records(); n != 0 {
		t.Errorf("%d audit records after refused changes, want none", n)
	}
	exec(`DROP TRIGGER injected`)

	// Without faults both are written.
	if _, err := s.Cancel(ctx, []int64{j.ID}); err != nil {
		t.Fatal(err)
	}
	if n := records(); n != 1 {
		t.Errorf("%d audit records after a cancel, want 1", n)
	}
}
