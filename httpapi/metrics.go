package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rotajobs/rota"
	"github.com/rotajobs/rota/store"
)

// metrics are the server's Prometheus metrics, on a registry of its own so
// that several servers (tests) can live in one process.
type metrics struct {
	handler       http.Handler
	added         *prometheus.CounterVec
	accepted      *prometheus.CounterVec
	ended         *prometheus.CounterVec
	acceptLatency prometheus.Histogram
	finishLatency prometheus.Histogram
	types         *typeLabels
}

// otherTypes is the label of the types past Config.MaxMetricTypes.
const otherTypes = "other"

// typeLabels caps the distinct type names the metrics carry: the first
// max seen keep a label of their own, later ones count as "other".
type typeLabels struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
}

func (l *typeLabels) of(typ string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[typ] {
		return typ
	}
	if len(l.seen) >= l.max {
		return otherTypes
	}
	l.seen[typ] = true
	return typ
}

func newMetrics(c *rota.Client, maxTypes int) (*metrics, func()) {
	reg := prometheus.NewRegistry()
	m := &metrics{
		types: &typeLabels{max: maxTypes, seen: map[string]bool{}},
		added: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_jobs_added_total", Help: "Jobs added (or re-added by key) through this server, by type.",
		}, []string{"type"}),
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_jobs_accepted_total", Help: "Jobs leased to workers through this server, by type.",
		}, []string{"type"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_jobs_ended_total", Help: "Jobs that reached a terminal state (completed, failed, cancelled), by type and state.",
		}, []string{"type", "state"}),
		acceptLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rota_accept_duration_seconds", Help: "Time to serve an accept that returned jobs or did not wait.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		finishLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rota_finish_duration_seconds", Help: "Time to commit a finish call (one or a batch), including the fsync.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
	}
	reg.MustRegister(m.added, m.accepted, m.ended, m.acceptLatency, m.finishLatency,
		&depthCollector{c: c, desc: prometheus.NewDesc("rota_jobs", "Jobs in the store by state (counted at most once a second).", []string{"state"}, nil)},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

	// Terminal states come from the change feed, whichever path ended the
	// job (this server, an in-process worker, the lease monitor).
	ctx, cancel := context.WithCancel(context.Background())
	if sub, err := c.SubscribeTypes(ctx, "*"); err == nil {
		go func() {
			for ev := range sub.C {
				if !ev.Removed && ev.State.Terminal() {
					m.ended.WithLabelValues(m.types.of(ev.Type), ev.State.String()).Inc()
				}
			}
		}()
	}
	return m, cancel
}

// depthCollector reports queue depth per state from the store's counts,
// cached briefly because counting reads the whole table.
type depthCollector struct {
	c    *rota.Client
	desc *prometheus.Desc
	mu   sync.Mutex
	at   time.Time
	last map[store.State]int64
}

func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if time.Since(d.at) > time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		counts, err := d.c.Stats(ctx)
		cancel()
		if err == nil {
			d.last = map[store.State]int64{}
			for _, c := range counts {
				d.last[c.State] += c.Jobs
			}
			d.at = time.Now()
		}
	}
	for st := store.Pending; st.Valid(); st++ {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(d.last[st]), st.String())
	}
}
