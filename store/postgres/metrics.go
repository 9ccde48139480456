package postgres

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldstreams/herald/store/internal/commitmetrics"
)

// txMetrics measure the write transactions under the names the SQLite
// backend uses for its group commits, so dashboards work on both: every
// write is its own transaction here, so a batch is one write.
type txMetrics struct{ m *commitmetrics.Metrics }

func newTxMetrics() *txMetrics {
	return &txMetrics{commitmetrics.New(commitmetrics.Help{
		BatchSize:     "Writes committed together in one transaction (always 1 on PostgreSQL, where every write is its own transaction).",
		BatchDuration: "Time of one write transaction, from BEGIN to the end of COMMIT.",
		Commit:        "Time of the COMMIT of a write transaction: on PostgreSQL, the round trip that makes it durable (sync=\"full\").",
	})}
}

// observe records one committed transaction: durable, one write.
func (t *txMetrics) observe(total, commit time.Duration) { t.m.Observe(1, total, commit, true) }

// RegisterMetrics registers the transaction metrics.
func (s *Store) RegisterMetrics(reg prometheus.Registerer) error { return s.metrics.m.Register(reg) }
