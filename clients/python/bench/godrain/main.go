// Command godrain runs the Go remote worker (remote.NewClient and
// rota.NewWorker, as `rota work`'s in-process handlers would) with no-op
// handlers for one job type against a rota server, until SIGTERM: the
// baseline of clients/python/bench/drain.py.
//
//	godrain -server http://127.0.0.1:7700 -type bench.drain -concurrency 64
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:7700", "the rota server")
	typ := flag.String("type", "bench.drain", "the job type to run")
	concurrency := flag.Int("concurrency", 64, "the worker's slots")
	flag.Parse()
	c, err := remote.NewClient(*server, remote.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer c.Close()
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: *concurrency, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w.Handle(*typ, rota.HandlerFunc(func(context.Context, *rota.Job) error { return nil }))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
