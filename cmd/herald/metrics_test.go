package main

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// countingCollector is a collector that counts its collections, as the
// engines' gauges that query the store do.
type countingCollector struct{ calls atomic.Int64 }

var countingDesc = prometheus.NewDesc("test_store_gauge", "A gauge read from the store.", nil, nil)

func (c *countingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- countingDesc }

func (c *countingCollector) Collect(ch chan<- prometheus.Metric) {
	c.calls.Add(1)
	ch <- prometheus.MustNewConstMetric(countingDesc, prometheus.GaugeValue, 1)
}

func names(t *testing.T, g prometheus.Gatherer) []string {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		out = append(out, f.GetName())
	}
	return out
}

// The stats sampler's registry holds the counters alone: gathering it
// runs neither the Go and process collectors nor a collector that asks
// the store, and /_herald/metrics still serves everything.
func TestAppMetricsCountersAlone(t *testing.T) {
	t.Parallel()
	m := newAppMetrics()
	store := &countingCollector{}
	m.reg.MustRegister(
		prometheus.NewCounter(prometheus.CounterOpts{Name: "test_plain_total", Help: "h"}),
		prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_vec_total", Help: "h"}, []string{"outcome"}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "test_func_total", Help: "h"}, func() float64 { return 3 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "test_gauge_func", Help: "h"}, func() float64 { return 2 }),
		prometheus.NewHistogram(prometheus.HistogramOpts{Name: "test_seconds", Help: "h"}),
		store,
	)
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_late_total", Help: "h"}, nil)
	if err := m.reg.Register(vec); err != nil {
		t.Fatal(err)
	}
	vec.WithLabelValues().Inc()
	got := names(t, m.counters)
	if want := []string{"test_func_total", "test_late_total", "test_plain_total"}; !slices.Equal(got, want) {
		// test_vec_total has no series yet, so it gathers nothing.
		t.Fatalf("the counters registry gathers %v, want %v", got, want)
	}
	if n := store.calls.Load(); n != 0 {
		t.Fatalf("gathering the counters collected the store's gauge %d times", n)
	}
	all := names(t, m.all)
	for _, want := range []string{"go_goroutines", "test_func_total", "test_gauge_func", "test_plain_total", "test_seconds", "test_store_gauge"} {
		if !slices.Contains(all, want) {
			t.Errorf("/_herald/metrics lacks %s: %v", want, all)
		}
	}
	if !m.reg.Unregister(vec) || slices.Contains(names(t, m.counters), "test_late_total") || slices.Contains(names(t, m.all), "test_late_total") {
		t.Fatal("an unregistered counter is still gathered")
	}
}
