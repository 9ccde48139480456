package sqlite

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldstreams/herald/store/internal/commitmetrics"
)

// newCommitMetrics measures the committer: how many writes share a
// transaction, how long a transaction takes, and how long its COMMIT
// takes, which for a durable batch is SQLite writing the WAL and fsyncing
// it.
func newCommitMetrics() *commitmetrics.Metrics {
	return commitmetrics.New(commitmetrics.Help{
		BatchSize:     "Writes (appends, creates, consumer and delivery updates) committed together in one group-commit transaction.",
		BatchDuration: "Time of one group-commit transaction, from BEGIN to the end of COMMIT.",
		Relaxed:       true,
		Commit:        "Time of the COMMIT of a group-commit transaction: SQLite writes the WAL and, with sync=\"full\" (every batch holding an append or an API change), fsyncs it.",
	})
}

// RegisterMetrics registers the committer's metrics: batch size, batch
// duration and commit (fsync) duration.
func (s *Store) RegisterMetrics(reg prometheus.Registerer) error { return s.metrics.Register(reg) }
