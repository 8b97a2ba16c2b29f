// Command goworker runs rota's Go worker on a server's HTTP API (the
// remote client) with no-op handlers until SIGTERM: the TypeScript client's
// drain benchmark (clients/typescript/bench/drain.mjs) runs it beside the
// TypeScript worker, on the same server.
package main

import (
	"context"
	"flag"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
)

func main() {
	url := flag.String("server", "http://127.0.0.1:7700", "the server")
	typ := flag.String("type", "", "the job type to run")
	conc := flag.Int("concurrency", 512, "handler slots")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	c, err := remote.NewClient(*url, remote.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: *conc, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	w.Handle(*typ, rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error { return nil }))
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
