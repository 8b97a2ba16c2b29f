package rota_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
	"github.com/rotajobs/rota/store/sqlite"
)

// BenchmarkWorkerDrain runs the in-process drain of `rota bench drain` on
// SQLite: b.N no-op jobs are added (not timed), then one worker of 512
// slots runs them until every completion has committed. One op is one
// job, so allocs/op is the whole process's allocations per job: the
// worker runtime, the claim and its read, the finish and its batcher.
func BenchmarkWorkerDrain(b *testing.B) {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "rota.db"), sqlite.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := rota.NewClient(st, rota.Config{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	data := json.RawMessage(`{"n":1}`)
	for done := 0; done < b.N; {
		ps := make([]rota.AddParams, min(1000, b.N-done))
		for i := range ps {
			ps[i] = rota.AddParams{Type: "drain", Data: data}
		}
		if _, err := c.AddMany(ctx, ps); err != nil {
			b.Fatal(err)
		}
		done += len(ps)
	}
	var completed atomic.Int64
	all := make(chan struct{})
	unwatch := st.Watch(func(es []store.Event) {
		for _, e := range es {
			if e.State == store.Completed && !e.Removed && completed.Add(1) == int64(b.N) {
				close(all)
			}
		}
	})
	defer unwatch()
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: 512, Logger: quiet, PollWait: time.Second})
	w.Handle("drain", rota.HandlerFunc(func(context.Context, *rota.Job) error { return nil }))
	wctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() { ran <- w.Run(wctx) }()
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d jobs completed", completed.Load(), b.N)
	}
	b.StopTimer()
	stop()
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
}
