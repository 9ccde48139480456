package wake

import (
	"context"
	"time"

	"github.com/heraldstreams/herald/subscription"

	"github.com/prometheus/client_golang/prometheus"
)

// engineMetrics are the engine's Prometheus metrics. They are created even
// without a registerer, so the engine never checks for nil.
type engineMetrics struct {
	wakes      prometheus.Counter
	retries    prometheus.Counter
	deliveries *prometheus.CounterVec
	callbacks  *prometheus.CounterVec
	removed    *prometheus.CounterVec
	spawned    prometheus.Counter
	latency    prometheus.Histogram
}

// consumerCounter is what the consumers-by-state collector asks.
type consumerCounter interface {
	ConsumerCount(ctx context.Context) (map[string]int, error)
	ConsumerCountStalled(ctx context.Context, atLeast int) (int, error)
}

func newEngineMetrics(reg prometheus.Registerer, counter consumerCounter) (*engineMetrics, error) {
	m := &engineMetrics{
		wakes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_subscription_wakes_total",
			Help: "Wake cycles started: first deliveries of a wake notification.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_subscription_wake_retries_total",
			Help: "Wake notifications sent again after a failed or unclaimed delivery.",
		}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_subscription_webhook_deliveries_total",
			Help: "Wake notification deliveries by outcome: delivered (2xx), done (2xx with {\"done\": true}), failed.",
		}, []string{"outcome"}),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_subscription_callbacks_total",
			Help: "Callback requests by outcome: OK or the error code.",
		}, []string{"code"}),
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_subscription_consumers_removed_total",
			Help: "Consumers removed, by reason.",
		}, []string{"reason"}),
		spawned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_subscription_consumers_spawned_total",
			Help: "Consumers spawned by a stream created or appended to after its subscription.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_subscription_webhook_duration_seconds",
			Help:    "Time from sending a wake notification to the end of the webhook's response.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.wakes, m.retries, m.deliveries, m.callbacks, m.removed, m.spawned, m.latency, &stateCollector{counter: counter}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// stateCollector reports the consumers in each state, counted by the
// store at scrape time (the store is the truth; another replica changes it
// too).
type stateCollector struct {
	counter consumerCounter
}

var (
	consumersDesc = prometheus.NewDesc("herald_subscription_consumers", "Consumers by state.", []string{"state"}, nil)
	stuckDesc     = prometheus.NewDesc("herald_subscription_consumers_stuck",
		"Consumers woken at least 10 times in a row without an ack advancing (stuck in the consumer API).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- consumersDesc
	ch <- stuckDesc
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.counter.ConsumerCount(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(consumersDesc, err)
		return
	}
	for _, s := range []subscription.State{subscription.StateIdle, subscription.StateWaking, subscription.StateLive} {
		ch <- prometheus.MustNewConstMetric(consumersDesc, prometheus.GaugeValue, float64(counts[string(s)]), string(s))
	}
	stuck, err := c.counter.ConsumerCountStalled(ctx, subscription.StuckWakes)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(stuckDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(stuckDesc, prometheus.GaugeValue, float64(stuck))
}
