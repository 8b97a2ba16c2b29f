package otelrota_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/otelrota"
	"github.com/rotajobs/rota/store/sqlite"
)

// Trace every add and run: the run's span joins the add's trace, through
// the job's metadata.
func Example() {
	spans := tracetest.NewSpanRecorder() // in a program: an exporter
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	tel, err := otelrota.New(otelrota.Config{TracerProvider: tp})
	if err != nil {
		log.Fatal(err)
	}

	dir, _ := os.MkdirTemp("", "otelrota-example-")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(filepath.Join(dir, "jobs.db"), sqlite.Config{})
	if err != nil {
		log.Fatal(err)
	}
	client, err := rota.NewClient(st, rota.Config{Hooks: []rota.Hook{tel}, CloseStore: true})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	w := rota.NewWorker(client, rota.WorkerConfig{Middleware: []rota.Middleware{tel.Middleware}})
	w.Handle("report", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error { return nil }))

	ctx := context.Background()
	res, err := client.Add(ctx, rota.AddParams{Type: "report"})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	client.Wait(ctx, res.Job.ID)
	stop()
	<-done

	ended := spans.Ended()
	for _, s := range ended {
		fmt.Println(s.Name(), s.SpanKind())
	}
	fmt.Println("same trace:", ended[0].SpanContext().TraceID() == ended[1].SpanContext().TraceID())
	// Output:
	// add report producer
	// run report consumer
	// same trace: true
}
