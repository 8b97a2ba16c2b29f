package remote_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// TestRemoteWorkerLogs: a worker over a server keeps its handler's
// records with the job's attempt through the server, and a client of the
// server reads them; a stale lease appends nothing.
func TestRemoteWorkerLogs(t *testing.T) {
	local, url := serve(t)
	c, err := remote.NewClient(url, remote.Config{})
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
	// Several items at once, answered in order, a stale one among them.
	var runs []rota.Job
	for range 3 {
		if _, err := c.Add(ctx, rota.AddParams{Type: "remote.batch"}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err = c.Accept(ctx, rota.AcceptParams{Types: []string{"remote.batch"}, Limit: 3})
	if err != nil || len(runs) != 3 {
		t.Fatalf("accept: %v %v", runs, err)
	}
	items := make([]rota.AppendLogsParams, len(runs))
	for i, j := range runs {
		items[i] = rota.AppendLogsParams{Lease: j.Lease(), Records: []rota.LogRecord{{Message: fmt.Sprint("job ", j.ID)}}}
	}
	items[1].Token = "stale"
	got, err := c.AppendLogs(ctx, items)
	if err != nil || got[0].Kept != 1 || got[2].Kept != 1 || !errors.Is(got[1].Err, rota.ErrWorkerConflict) {
		t.Fatalf("AppendLogs of three items = %+v, %v", got, err)
	}
	for i, j := range runs {
		lp, err := c.Logs(ctx, rota.LogsParams{ID: j.ID})
		if err != nil || (i == 1) != (len(lp.Records) == 0) || i != 1 && lp.Records[0].Message != fmt.Sprint("job ", j.ID) {
			t.Errorf("Logs of job %d = %+v, %v", j.ID, lp, err)
		}
	}
	// A finished run's lease appends no more.
	out, err := c.AppendLogs(ctx, []rota.AppendLogsParams{{Lease: store.Lease{ID: res.Job.ID, Token: "stale"}, Records: []rota.LogRecord{{Message: "late"}}}})
	if err != nil || !errors.Is(out[0].Err, rota.ErrWorkerConflict) {
		t.Errorf("AppendLogs with a stale token = %+v, %v; want ErrWorkerConflict", out, err)
	}
}
