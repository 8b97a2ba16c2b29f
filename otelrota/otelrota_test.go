package otelrota_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/otelrota"
	"github.com/rotajobs/rota/store/sqlite"
)

// setup returns a client and worker instrumented with otelrota on a real
// SQLite store, and the in-memory span recorder and metric reader.
func setup(t *testing.T) (*rota.Client, *rota.Worker, *tracetest.SpanRecorder, *sdkmetric.ManualReader, trace.Tracer) {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tel, err := otelrota.New(otelrota.Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rota.NewClient(st, rota.Config{Hooks: []rota.Hook{tel}, CloseStore: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w := rota.NewWorker(c, rota.WorkerConfig{Middleware: []rota.Middleware{tel.Middleware}})
	return c, w, spans, reader, tp.Tracer("test")
}

func runUntilEnded(t *testing.T, c *rota.Client, w *rota.Worker, ids ...int64) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { stop(); <-done }()
	for _, id := range ids {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			j, err := c.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State.Terminal() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d did not end", id)
			}
		}
	}
}

func TestTraceLinksAddAndRun(t *testing.T) {
	c, w, spans, _, tracer := setup(t)
	w.Handle("mail", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return errors.New("the handler's context has no span")
		}
		if job.Group == "bad" {
			return rota.Permanent(errors.New("bounced"))
		}
		return nil
	}))
	ctx, request := tracer.Start(context.Background(), "request")
	meta := map[string]string{"route": "eu"}
	ok, err := c.Add(ctx, rota.AddParams{Type: "mail", Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := c.Add(ctx, rota.AddParams{Type: "mail", Group: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	request.End()
	if len(meta) != 1 || ok.Job.Meta["route"] != "eu" || ok.Job.Meta["traceparent"] == "" {
		t.Fatalf("caller's meta %v, job's meta %v", meta, ok.Job.Meta)
	}
	runUntilEnded(t, c, w, ok.Job.ID, bad.Job.ID)

	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans.Ended() {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	adds, runs := byName["add mail"], byName["run mail"]
	if len(adds) != 2 || len(runs) != 2 {
		t.Fatalf("spans: %d adds, %d runs", len(adds), len(runs))
	}
	traceID := request.SpanContext().TraceID()
	for i := range adds {
		add, run := adds[i], runs[i]
		if add.SpanKind() != trace.SpanKindProducer || run.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("kinds %v %v", add.SpanKind(), run.SpanKind())
		}
		if add.Parent().SpanID() != request.SpanContext().SpanID() || add.SpanContext().TraceID() != traceID {
			t.Errorf("the add span is not a child of the request")
		}
	}
	// Each run is a child of its add, in the request's trace.
	parents := map[string]bool{}
	for _, run := range runs {
		if run.SpanContext().TraceID() != traceID {
			t.Errorf("run span in trace %s, want %s", run.SpanContext().TraceID(), traceID)
		}
		parents[run.Parent().SpanID().String()] = true
		if run.Status().Code == codes.Error && run.Status().Description != "permanent failure: bounced" {
			t.Errorf("failed run's status %+v", run.Status())
		}
	}
	for _, add := range adds {
		if !parents[add.SpanContext().SpanID().String()] {
			t.Errorf("no run is a child of add span %s", add.SpanContext().SpanID())
		}
	}
	failed := 0
	for _, run := range runs {
		if run.Status().Code == codes.Error {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d runs failed, want 1", failed)
	}
}

func TestMetrics(t *testing.T) {
	c, w, _, reader, _ := setup(t)
	w.Handle("m", rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		if job.Priority < 0 {
			return rota.Permanent(errors.New("no"))
		}
		return nil
	}))
	var ids []int64
	for _, prio := range []int{1, 2, -1} {
		res, err := c.Add(context.Background(), rota.AddParams{Type: "m", Priority: prio})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Job.ID)
	}
	runUntilEnded(t, c, w, ids...)
	want := map[string]int64{"added m": 3, "ended m complete": 2, "ended m fail": 1}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		histograms := uint64(0)
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					for _, p := range d.DataPoints {
						typ, _ := p.Attributes.Value(attribute.Key("rota.job.type"))
						key := typ.AsString()
						if end, ok := p.Attributes.Value(attribute.Key("rota.job.ending")); ok {
							key += " " + end.AsString()
						}
						if m.Name == "rota.jobs.added" {
							got["added "+key] = p.Value
						} else {
							got["ended "+key] = p.Value
						}
					}
				case metricdata.Histogram[float64]:
					for _, p := range d.DataPoints {
						histograms += p.Count
					}
				}
			}
		}
		if len(got) == len(want) && got["added m"] == 3 && got["ended m complete"] == 2 && got["ended m fail"] == 1 && histograms == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics %v, %d durations; want %v and 3", got, histograms, want)
		}
	}
}
