package remote_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// TestRemoteWorkerLogs: a worker over a server keeps its handler's
// records with the job's attempt through the server, and a client of the
// server reads them; a stale lease appends nothing.
func TestRemoteWorkerLogs(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := rota.NewClient(st, rota.Config{CloseStore: true})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	api := httpapi.New(local, httpapi.Config{})
	defer api.Close()
	srv := httptest.NewServer(api)
	defer srv.Close()
	c, err := remote.NewClient(srv.URL, remote.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	res, err := c.Add(ctx, rota.AddParams{Type: "remote.log"})
	if err != nil {
		t.Fatal(err)
	}
	w := rota.NewWorker(c, rota.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
	w.Handle("remote.log", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		rota.Logger(ctx).Warn("from afar", "job", job.ID)
		return nil
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if j, err := c.Wait(wctx, res.Job.ID); err != nil || j.State != rota.Completed {
		t.Fatalf("wait: %v %v", j.State, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	page, err := c.Logs(ctx, rota.LogsParams{ID: res.Job.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 1 || page.Records[0].Message != "from afar" || page.Records[0].Level != slog.LevelWarn || page.Attempt != 1 {
		t.Errorf("Logs over the server = %+v", page)
	}
	// The same through the local client: one log.
	if lp, err := local.Logs(ctx, rota.LogsParams{ID: res.Job.ID}); err != nil || len(lp.Records) != 1 {
		t.Errorf("Logs on the store = %+v, %v", lp, err)
	}
	_, err = c.Logs(ctx, rota.LogsParams{ID: res.Job.ID + 100})
	if !errors.Is(err, rota.ErrNotFound) {
		t.Errorf("Logs of a missing job: %v, want ErrNotFound", err)
	}
	// A finished run's lease appends no more.
	out, err := c.AppendLogs(ctx, []rota.AppendLogsParams{{Lease: store.Lease{ID: res.Job.ID, Token: "stale"}, Records: []rota.LogRecord{{Message: "late"}}}})
	if err != nil || !errors.Is(out[0].Err, rota.ErrWorkerConflict) {
		t.Errorf("AppendLogs with a stale token = %+v, %v; want ErrWorkerConflict", out, err)
	}
}
