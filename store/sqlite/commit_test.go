package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/rotajobs/rota/store"
)

// TestBatchEndedByARequest: when SQLite rolls a group-commit transaction
// back under one of its requests (it does on a full disk or an I/O
// error; here the request ends it itself), every request of the batch is
// answered with an error and none of them changed anything. The requests
// after it ran each in a transaction of its own (a savepoint outside a
// transaction begins one), which committed though they were answered
// with the batch's error.
func TestBatchEndedByARequest(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		name := "the request fails"
		if quiet {
			name = "the request succeeds"
		}
		t.Run(name, func(t *testing.T) { testBatchEndedByARequest(t, quiet) })
	}
}

// testBatchEndedByARequest runs three requests in one batch, the second
// of which ends the transaction and fails, or, quiet, succeeds anyway.
func testBatchEndedByARequest(t *testing.T, quiet bool) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rota.db")
	s, err := Open(path, Config{BusyTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	// Another connection holds the write lock, so the writer waits at the
	// start of a batch while the three requests queue behind it.
	db, err := sql.Open(driverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	first := acceptAsync(s, "nothing") // the batch the writer waits with
	time.Sleep(100 * time.Millisecond)
	answers := make([]chan error, 3)
	for i := range answers {
		answers[i] = make(chan error, 1)
		go func() {
			if i == 1 {
				answers[i] <- s.write(context.Background(), true, func(w *writeTx) error {
					if _, err := w.exec("ROLLBACK"); err != nil || quiet {
						return err
					}
					return errors.New("the transaction was rolled back under this request")
				})
				return
			}
			_, err := s.Add(context.Background(), []store.AddParams{{Type: "t", Key: []string{"before", "", "after"}[i]}})
			answers[i] <- err
		}()
		for len(s.reqs) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if a := <-first; a.err != nil {
		t.Fatal(a.err)
	}
	for i, ch := range answers {
		if err := <-ch; err == nil {
			t.Errorf("request %d of the batch succeeded, though its transaction was rolled back", i)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM rota_jobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d jobs were added by a batch whose every request was answered with an error", n)
	}
	// The store goes on.
	if _, err := s.Add(ctx, []store.AddParams{{Type: "t"}}); err != nil {
		t.Fatalf("Add after: %v", err)
	}
}
