package dispatch

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// engineMetrics are the engine's Prometheus metrics. They exist even
// without a registerer, so the engine never checks for nil. With
// tenantLabel, the metrics of attempts and outcomes carry the tenant of
// the delivery's endpoint ("" when it has none) as a "tenant" label.
type engineMetrics struct {
	tenantLabel bool
	outcomes    *prometheus.CounterVec
	attemptTime *prometheus.HistogramVec
	endToEnd    *prometheus.HistogramVec
	attempts    *prometheus.HistogramVec
	deadLetters *prometheus.CounterVec
	matched     prometheus.Counter
	published   prometheus.Counter
}

// metricsSource is what the scrape-time collectors ask the store.
type metricsSource interface {
	EndpointCount(ctx context.Context) (map[string]int, error)
	DeliveryBacklog(ctx context.Context) (map[string]int, error)
}

func newEngineMetrics(reg prometheus.Registerer, src metricsSource, tenantLabel bool) (*engineMetrics, error) {
	var tenant []string
	if tenantLabel {
		tenant = []string{"tenant"}
	}
	m := &engineMetrics{
		tenantLabel: tenantLabel,
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_delivery_attempts_total",
			Help: "Delivery attempts by outcome: delivered (2xx), retrying (failed, another attempt is scheduled), exhausted (failed, no attempt left: a dead letter).",
		}, append([]string{"outcome"}, tenant...)),
		attemptTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_delivery_attempt_duration_seconds",
			Help:    "Time from sending a delivery to the end of the endpoint's response.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, tenant),
		endToEnd: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_delivery_latency_seconds",
			Help:    "Time from a delivery's creation (the event matched) to its successful attempt, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 24),
		}, tenant),
		attempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_delivery_attempts_per_delivery",
			Help:    "Attempts a delivery took, observed when it is delivered or exhausted.",
			Buckets: []float64{1, 2, 3, 4, 5, 6, 7, 8, 10, 15, 20},
		}, tenant),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_delivery_dead_letters_total",
			Help: "Deliveries exhausted: every attempt of the retry schedule failed.",
		}, tenant),
		matched: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_delivery_deliveries_created_total",
			Help: "Deliveries created by matching stream messages to endpoints.",
		}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_delivery_events_published_total",
			Help: "Events appended to their stream by POST /_herald/v1/events (a duplicate id appends nothing and is not counted).",
		}),
	}
	if !tenantLabel {
		// Without labels each is one series, shown from the start (at
		// zero) as a plain counter or histogram is.
		m.deadLetters.WithLabelValues()
		m.attemptTime.WithLabelValues()
		m.endToEnd.WithLabelValues()
		m.attempts.WithLabelValues()
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.outcomes, m.attemptTime, m.endToEnd, m.attempts, m.deadLetters, m.matched, m.published, &storeCollector{src: src}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// labels returns the label values of a metric: values, then the tenant
// when the tenant label is on.
func (m *engineMetrics) labels(tenant string, values ...string) []string {
	if m.tenantLabel {
		return append(values, tenant)
	}
	return values
}

// storeCollector reports endpoints by status and the backlog per endpoint,
// counted by the store at scrape time (another replica changes them too).
type storeCollector struct {
	src metricsSource
}

var (
	endpointsDesc = prometheus.NewDesc("herald_delivery_endpoints", "Endpoints by status: active, paused, pending (awaiting verification), disabled (by the circuit breaker).", []string{"status"}, nil)
	backlogDesc   = prometheus.NewDesc("herald_delivery_backlog", "Unfinished (pending or retrying) deliveries per endpoint.", []string{"endpoint"}, nil)
)

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- endpointsDesc
	ch <- backlogDesc
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if counts, err := c.src.EndpointCount(ctx); err == nil {
		for status, n := range counts {
			ch <- prometheus.MustNewConstMetric(endpointsDesc, prometheus.GaugeValue, float64(n), status)
		}
	} else {
		ch <- prometheus.NewInvalidMetric(endpointsDesc, err)
	}
	if backlog, err := c.src.DeliveryBacklog(ctx); err == nil {
		for id, n := range backlog {
			ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(n), id)
		}
	} else {
		ch <- prometheus.NewInvalidMetric(backlogDesc, err)
	}
}
