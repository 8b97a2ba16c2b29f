package remote_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store/sqlite"
)

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestWorkerStopsWhenRefused: a worker on a remote server that refuses its
// token does not try again for ever: Run stops at once with an error that
// matches rota.ErrUnauthorized and says what the server said, whether the
// refusal meets its accept (no token: 401; a wrong one: 403) or a job's
// finish (the server came back with --auth-token while the job ran).
func TestWorkerStopsWhenRefused(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := rota.NewClient(st, rota.Config{CloseStore: true})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	open := httpapi.New(local, httpapi.Config{})
	defer open.Close()
	secured := httpapi.New(local, httpapi.Config{AuthToken: "secret"})
	defer secured.Close()
	// The server as a restart with --auth-token leaves it: the same
	// store, the same address, another configuration.
	var current atomic.Pointer[httpapi.Server]
	current.Store(open)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { current.Load().ServeHTTP(w, r) }))
	defer srv.Close()

	run := func(t *testing.T, token string, h rota.Handler) (chan error, *logBuffer) {
		c, err := remote.NewClient(srv.URL, remote.Config{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		logs := &logBuffer{}
		w := rota.NewWorker(c, rota.WorkerConfig{
			Concurrency: 1, LeaseTimeout: 30 * time.Second, PollWait: 200 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(logs, nil)),
		})
		w.Handle("refused.t", h)
		done := make(chan error, 1)
		go func() { done <- w.Run(context.Background()) }()
		return done, logs
	}
	ended := func(t *testing.T, done chan error, logs *logBuffer, says string) {
		t.Helper()
		select {
		case err := <-done:
			if !errors.Is(err, rota.ErrUnauthorized) || !strings.Contains(err.Error(), says) {
				t.Errorf("Run returned %v, want an error that matches ErrUnauthorized and says %q", err, says)
			}
		case <-time.After(10 * time.Second): // well within the 30s lease
			t.Fatalf("the worker still runs 10s after the server refused its token; its log:\n%s", logs)
		}
		if n := strings.Count(logs.String(), "trying again"); n > 0 {
			t.Errorf("the worker tried a refused call again (%d times):\n%s", n, logs)
		}
	}

	t.Run("finish", func(t *testing.T) {
		current.Store(open)
		started, release := make(chan int64, 1), make(chan struct{})
		done, logs := run(t, "", rota.HandlerFunc(func(ctx context.Context, j *rota.Job) error {
			started <- j.ID
			<-release
			return nil
		}))
		res, err := local.Add(context.Background(), rota.AddParams{Type: "refused.t"})
		if err != nil {
			t.Fatal(err)
		}
		if id := <-started; id != res.Job.ID {
			t.Fatalf("the worker ran job %d, want %d", id, res.Job.ID)
		}
		current.Store(secured)
		close(release)
		ended(t, done, logs, "needs an Authorization")
		if j, err := local.Get(context.Background(), res.Job.ID); err != nil || j.State != rota.Running {
			t.Errorf("the job whose finish was refused: %+v, %v; want it running until its lease ends", j.State, err)
		}
	})
	t.Run("accept without a token", func(t *testing.T) {
		current.Store(secured)
		done, logs := run(t, "", rota.HandlerFunc(func(context.Context, *rota.Job) error { return nil }))
		ended(t, done, logs, "needs an Authorization")
	})
	t.Run("accept with a wrong token", func(t *testing.T) {
		current.Store(secured)
		done, logs := run(t, "wrong", rota.HandlerFunc(func(context.Context, *rota.Job) error { return nil }))
		ended(t, done, logs, "not valid for this server")
	})
}
