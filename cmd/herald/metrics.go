package main

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// appMetrics are a server's metric registries: all, served at
// /_herald/metrics, and counters, the counters alone, which the
// dashboard's stats sampler reads every few seconds (its series are
// counters). Gathering all at each sample ran, for nothing, the Go and
// process collectors (the latter parses files of /proc) and the engines'
// gauges that query the store: measured on an idle `herald serve`, that
// sampler was most of the memory an idle server allocated, and brought
// back code and heap pages given back after the start.
type appMetrics struct {
	all, counters *prometheus.Registry
	// reg registers a collector with all, and with counters too when it
	// is a counter: the Registerer the server's parts are given.
	reg prometheus.Registerer
}

// newAppMetrics returns the registries, with the Go and process
// collectors in all.
func newAppMetrics() appMetrics {
	m := appMetrics{all: prometheus.NewRegistry(), counters: prometheus.NewRegistry()}
	m.all.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg = counterTee{all: m.all, counters: m.counters}
	return m
}

// counterTee is appMetrics.reg.
type counterTee struct {
	all, counters prometheus.Registerer
}

// Register implements prometheus.Registerer.
func (t counterTee) Register(c prometheus.Collector) error {
	if err := t.all.Register(c); err != nil {
		return err
	}
	if !isCounter(c) {
		return nil
	}
	if err := t.counters.Register(c); err != nil {
		t.all.Unregister(c)
		return err
	}
	return nil
}

// MustRegister implements prometheus.Registerer.
func (t counterTee) MustRegister(cs ...prometheus.Collector) {
	var errs []error
	for _, c := range cs {
		errs = append(errs, t.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		panic(err)
	}
}

// Unregister implements prometheus.Registerer.
func (t counterTee) Unregister(c prometheus.Collector) bool {
	t.counters.Unregister(c)
	return t.all.Unregister(c)
}

// isCounter reports whether c is a counter: a CounterVec, or a metric
// (a Counter, a CounterFunc) that writes a counter value. A CounterFunc
// and a GaugeFunc have the same Go type; only what they write tells them
// apart, and writing one calls its function, which reads a number.
func isCounter(c prometheus.Collector) bool {
	switch c := c.(type) {
	case *prometheus.CounterVec:
		return true
	case prometheus.Metric:
		var m dto.Metric
		return c.Write(&m) == nil && m.Counter != nil
	}
	return false
}
