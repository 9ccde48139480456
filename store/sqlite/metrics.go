package sqlite

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// commitMetrics measure the committer: how many writes share a
// transaction, how long a transaction takes, and how long its COMMIT
// takes, which for a durable batch is SQLite writing the WAL and fsyncing
// it.
type commitMetrics struct {
	batchSize     prometheus.Histogram
	batchDuration prometheus.Histogram
	commit        *prometheus.HistogramVec
	commitFull    prometheus.Observer // commit{sync="full"}
	commitNormal  prometheus.Observer // commit{sync="normal"}
}

func newCommitMetrics() *commitMetrics {
	m := &commitMetrics{
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_store_batch_size",
			Help:    "Writes (appends, creates, consumer and delivery updates) committed together in one group-commit transaction.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
		}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_store_batch_duration_seconds",
			Help:    "Time of one group-commit transaction, from BEGIN to the end of COMMIT.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		commit: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_store_commit_duration_seconds",
			Help:    "Time of the COMMIT of a group-commit transaction: SQLite writes the WAL and, with sync=\"full\" (every batch holding an append or an API change), fsyncs it.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"sync"}),
	}
	m.commitFull = m.commit.WithLabelValues("full")
	m.commitNormal = m.commit.WithLabelValues("normal")
	return m
}

// observe records one committed batch.
func (m *commitMetrics) observe(size int, total, commit time.Duration, full bool) {
	m.batchSize.Observe(float64(size))
	m.batchDuration.Observe(total.Seconds())
	if full {
		m.commitFull.Observe(commit.Seconds())
	} else {
		m.commitNormal.Observe(commit.Seconds())
	}
}

// RegisterMetrics registers the committer's metrics: batch size, batch
// duration and commit (fsync) duration.
func (s *Store) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.metrics.batchSize, s.metrics.batchDuration, s.metrics.commit} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
