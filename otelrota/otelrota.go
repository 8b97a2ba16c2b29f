// Package otelrota traces and measures rota jobs with OpenTelemetry: a
// producer span for every job added, a consumer span for every run, in the
// same trace (the add's trace context travels with the job, in its
// metadata, as W3C trace context), and metrics of jobs added and ended and
// of run durations, through the OpenTelemetry API. Plug it in once:
//
//	tel, err := otelrota.New(otelrota.Config{})
//	client, err := rota.NewClient(st, rota.Config{Hooks: []rota.Hook{tel}})
//	w := rota.NewWorker(client, rota.WorkerConfig{Middleware: []rota.Middleware{tel.Middleware}})
//
// It uses the global tracer and meter providers unless Config names others,
// so an SDK set up by the program (exporters, sampling) applies.
package otelrota

import (
	"context"
	"errors"
	"maps"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotajobs/rota"
)

// instrumentation names the tracer and meter.
const instrumentation = "github.com/rotajobs/rota/otelrota"

// Config chooses where telemetry goes. The zero value uses the global
// providers and W3C trace context.
type Config struct {
	TracerProvider trace.TracerProvider          // nil: otel.GetTracerProvider()
	MeterProvider  metric.MeterProvider          // nil: otel.GetMeterProvider()
	Propagator     propagation.TextMapPropagator // nil: propagation.TraceContext{}
}

// Telemetry is a rota.AddHook, a rota.FinishHook and, with its
// Middleware, a worker middleware. It is safe for concurrent use.
type Telemetry struct {
	rota.HookDefaults
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	added      metric.Int64Counter
	ended      metric.Int64Counter
	duration   metric.Float64Histogram
}

var (
	_ rota.AddHook    = (*Telemetry)(nil)
	_ rota.FinishHook = (*Telemetry)(nil)
)

// New returns the telemetry of cfg.
func New(cfg Config) (*Telemetry, error) {
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = propagation.TraceContext{}
	}
	meter := cfg.MeterProvider.Meter(instrumentation)
	t := &Telemetry{tracer: cfg.TracerProvider.Tracer(instrumentation), propagator: cfg.Propagator}
	var err, e error
	t.added, e = meter.Int64Counter("rota.jobs.added", metric.WithDescription("Jobs added, by type."), metric.WithUnit("{job}"))
	err = errors.Join(err, e)
	t.ended, e = meter.Int64Counter("rota.jobs.ended", metric.WithDescription("Runs ended, by type and ending (complete, fail, snooze, release, cancel)."), metric.WithUnit("{job}"))
	err = errors.Join(err, e)
	t.duration, e = meter.Float64Histogram("rota.job.run.duration", metric.WithDescription("How long handlers ran, by type and ending."), metric.WithUnit("s"))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// BeforeAdd records a producer span for the add, a child of ctx's span,
// and puts its context into the job's metadata so that the run joins the
// trace. It never refuses an add.
func (t *Telemetry) BeforeAdd(ctx context.Context, p *rota.AddParams) error {
	ctx, span := t.tracer.Start(ctx, "add "+p.Type, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("rota.job.type", p.Type), attribute.String("rota.job.group", p.Group)))
	defer span.End()
	meta := make(map[string]string, len(p.Meta)+2)
	maps.Copy(meta, p.Meta) // the caller's map stays as it was
	t.propagator.Inject(ctx, propagation.MapCarrier(meta))
	p.Meta = meta
	t.added.Add(ctx, 1, metric.WithAttributes(attribute.String("rota.job.type", p.Type)))
	return nil
}

// Middleware runs each job in a consumer span, in the trace of the add
// that made it (from the job's metadata), and records the run's error.
func (t *Telemetry) Middleware(next rota.Handler) rota.Handler {
	return rota.HandlerFunc(func(ctx context.Context, job *rota.Job) error {
		ctx = t.propagator.Extract(ctx, propagation.MapCarrier(job.Meta))
		ctx, span := t.tracer.Start(ctx, "run "+job.Type, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attribute.String("rota.job.type", job.Type), attribute.String("rota.job.group", job.Group),
				attribute.Int64("rota.job.id", job.ID), attribute.Int("rota.job.attempt", job.Attempt)))
		defer span.End()
		err := next.Work(ctx, job)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		return err
	})
}

// AfterFinish counts the run's ending and records how long it ran.
func (t *Telemetry) AfterFinish(ctx context.Context, job *rota.Job, p rota.FinishParams, took time.Duration, _ error) {
	attrs := metric.WithAttributes(attribute.String("rota.job.type", job.Type), attribute.String("rota.job.ending", p.As.String()))
	t.ended.Add(ctx, 1, attrs)
	t.duration.Record(ctx, took.Seconds(), attrs)
}
