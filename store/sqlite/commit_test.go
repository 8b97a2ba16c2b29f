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
	s, path := openTemp(t, Config{BusyTimeout: 30 * time.Second})

	release := holdWriter(t, s, path)
	answers := make([]chan error, 3)
	for i := range answers {
		answers[i] = make(chan error, 1)
		go func() {
			if i == 1 {
				answers[i] <- s.write(context.Background(), true, func(w *txn) error {
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
		queued(s, i+1)
	}
	release()
	for i, ch := range answers {
		if err := <-ch; err == nil {
			t.Errorf("request %d of the batch succeeded, though its transaction was rolled back", i)
		}
	}
	var n int
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM rota_jobs`).Scan(&n); err != nil {
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

// holdWriter makes s's writer wait at the start of a batch (another
// connection holds the file's write lock), so that the requests sent
// until release runs queue and then run in one batch, after the one it
// waits with (an accept of nothing, which needs no fsync).
func holdWriter(t *testing.T, s *Store, path string) (release func()) {
	t.Helper()
	db, err := sql.Open(driverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	first := acceptAsync(s, "nothing")
	// The writer takes it and waits for the lock. (Were it still queued,
	// the requests after it would run in its batch, and a test would pass
	// without showing anything.)
	time.Sleep(100 * time.Millisecond)
	return func() {
		t.Helper()
		if _, err := lock.ExecContext(t.Context(), "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		lock.Close()
		db.Close()
		if a := <-first; a.err != nil {
			t.Fatal(a.err)
		}
	}
}

// queued waits until n requests are queued for s's writer.
func queued(s *Store, n int) {
	for len(s.reqs) < n {
		time.Sleep(time.Millisecond)
	}
}

// openTemp opens a store on a new file in a temporary directory, closed
// when the test ends, and returns it with the file's path.
func openTemp(t *testing.T, cfg Config) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rota.db")
	s, err := Open(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}
