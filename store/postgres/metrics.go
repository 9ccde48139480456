package postgres

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// txMetrics measure the write transactions under the names the SQLite
// backend uses for its group commits, so dashboards work on both: every
// write is its own transaction here, so a batch is one write.
type txMetrics struct {
	batchSize     prometheus.Histogram
	batchDuration prometheus.Histogram
	commit        prometheus.Observer
	commitVec     *prometheus.HistogramVec
}

func newTxMetrics() *txMetrics {
	m := &txMetrics{
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_store_batch_size",
			Help:    "Writes committed together in one transaction (always 1 on PostgreSQL, where every write is its own transaction).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
		}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_store_batch_duration_seconds",
			Help:    "Time of one write transaction, from BEGIN to the end of COMMIT.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		commitVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_store_commit_duration_seconds",
			Help:    "Time of the COMMIT of a write transaction: on PostgreSQL, the round trip that makes it durable (sync=\"full\").",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"sync"}),
	}
	m.commit = m.commitVec.WithLabelValues("full")
	return m
}

// observe records one committed transaction.
func (m *txMetrics) observe(total, commit time.Duration) {
	m.batchSize.Observe(1)
	m.batchDuration.Observe(total.Seconds())
	m.commit.Observe(commit.Seconds())
}

// RegisterMetrics registers the transaction metrics.
func (s *Store) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.metrics.batchSize, s.metrics.batchDuration, s.metrics.commitVec} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
