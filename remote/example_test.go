package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/httpapi"
	"github.com/rotajobs/rota/remote"
	_ "github.com/rotajobs/rota/store/sqlite" // for the example's server only
)

// A client of a rota server is the same *rota.Client, and the worker
// runtime runs on it unchanged; the program links no store.
func ExampleNewClient() {
	// A server on a loopback port, as `rota serve` runs one.
	dir, _ := os.MkdirTemp("", "rota-example-")
	defer os.RemoveAll(dir)
	local, err := rota.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer local.Close()
	api := httpapi.New(local, httpapi.Config{})
	defer api.Close()
	srv := httptest.NewServer(api)
	defer srv.Close()

	client, err := remote.NewClient(srv.URL, remote.Config{}) // e.g. "http://127.0.0.1:7700"
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	res, err := client.Add(ctx, rota.AddParams{Type: "thumbnail", Data: json.RawMessage(`{"file":"a.png"}`)})
	if err != nil {
		log.Fatal(err)
	}

	w := rota.NewWorker(client, rota.WorkerConfig{Concurrency: 8})
	w.Handle("thumbnail", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		return rota.SetResult(ctx, map[string]int{"bytes": 1234})
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	job, err := client.Wait(ctx, res.Job.ID)
	stop()
	<-done
	fmt.Println(job.State, string(job.Result), err)
	// Output: completed {"bytes":1234} <nil>
}
