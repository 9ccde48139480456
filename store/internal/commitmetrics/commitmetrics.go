// Package commitmetrics measures the write transactions of Herald's SQL
// backends under one set of names, so that dashboards read either: how
// many writes share a transaction, how long a transaction takes, and how
// long its COMMIT takes (the fsync, for a durable one).
package commitmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the histograms of one store. Help texts say what a backend
// means by a batch and a commit.
type Metrics struct {
	batchSize     prometheus.Histogram
	batchDuration prometheus.Histogram
	commit        *prometheus.HistogramVec
	commitFull    prometheus.Observer // commit{sync="full"}
	commitNormal  prometheus.Observer // commit{sync="normal"}
}

// Help is what a backend says of its batches and commits. Relaxed says
// it also commits without fsync (sync="normal"); a backend that does not
// has no such series.
type Help struct {
	BatchSize, BatchDuration, Commit string
	Relaxed                          bool
}

// New returns the metrics of one store.
func New(h Help) *Metrics {
	m := &Metrics{
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_store_batch_size",
			Help:    h.BatchSize,
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
		}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_store_batch_duration_seconds",
			Help:    h.BatchDuration,
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		commit: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_store_commit_duration_seconds",
			Help:    h.Commit,
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"sync"}),
	}
	m.commitFull = m.commit.WithLabelValues("full")
	if h.Relaxed {
		m.commitNormal = m.commit.WithLabelValues("normal")
	}
	return m
}

// Observe records one committed transaction of size writes; full is
// false only for a Relaxed backend.
func (m *Metrics) Observe(size int, total, commit time.Duration, full bool) {
	m.batchSize.Observe(float64(size))
	m.batchDuration.Observe(total.Seconds())
	if full {
		m.commitFull.Observe(commit.Seconds())
	} else {
		m.commitNormal.Observe(commit.Seconds())
	}
}

// Register registers the metrics.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.batchSize, m.batchDuration, m.commit} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
