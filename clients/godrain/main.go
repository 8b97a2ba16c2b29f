// Command godrain runs the Go remote worker (remote.NewClient and
// rota.NewWorker) with no-op handlers for one job type against a rota
// server, until SIGTERM: the baseline the Python and TypeScript clients'
// drain benchmarks (clients/python/bench/drain.py,
// clients/typescript/bench/drain.mjs) measure their workers against, and
// the Go worker of the clients' interop test. With -add it is a Go producer
// instead: it adds jobs in groups with one AddMany and exits.
//
//	godrain -server http://127.0.0.1:7700 -type bench.drain -concurrency 64
//	godrain -server http://127.0.0.1:7700 -type interop -add flood:1000,a:20,b:20
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/remote"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:7700", "the rota server")
	typ := flag.String("type", "bench.drain", "the job type to run")
	concurrency := flag.Int("concurrency", 64, "the worker's slots")
	add := flag.String("add", "", "add jobs instead of running them: GROUP:COUNT,... (\"\" is the default group)")
	result := flag.String("result", "", "the result each job completes with (a JSON string), if any")
	flag.Parse()
	c, err := remote.NewClient(*server, remote.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer c.Close()
	if *add != "" {
		if err := produce(c, *typ, *add); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	w := rota.NewWorker(c, rota.WorkerConfig{Concurrency: *concurrency, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w.Handle(*typ, rota.HandlerFunc(func(ctx context.Context, _ *rota.Job) error {
		if *result != "" {
			return rota.SetResult(ctx, *result)
		}
		return nil
	}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// produce adds the jobs spec names (GROUP:COUNT,...), each with its group
// and index as data, in one batch.
func produce(c *rota.Client, typ, spec string) error {
	var ps []rota.AddParams
	for _, part := range strings.Split(spec, ",") {
		group, count, ok := strings.Cut(part, ":")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || n < 0 {
			return fmt.Errorf("-add %q: want GROUP:COUNT pairs, separated by commas", spec)
		}
		for i := range n {
			ps = append(ps, rota.AddParams{Type: typ, Group: group, Data: []byte(fmt.Sprintf(`{"group":%q,"i":%d}`, group, i))})
		}
	}
	_, err := c.AddMany(context.Background(), ps)
	return err
}
