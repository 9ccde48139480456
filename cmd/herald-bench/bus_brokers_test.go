//go:build brokers

package main

import "testing"

// TestBusWorkload runs the bus workload against the brokers it starts in
// process: every event is acknowledged, none fails.
func TestBusWorkload(t *testing.T) {
	t.Parallel()
	for _, broker := range []string{"nats", "kafka"} {
		t.Run(broker, func(t *testing.T) {
			t.Parallel()
			r := bench(t, "bus", "-broker", broker, "-c", "2", "-batch", "20", "-d", "1s")
			positive(t, r, "events", "events_per_s", "publish_p50")
			zero(t, r, "failed")
			ordered(t, r, "publish_p50", "publish_p99")
			r = bench(t, "bus", "-broker", broker, "-rate", "500", "-d", "1s")
			positive(t, r, "events", "ack_p50")
			zero(t, r, "failed")
			ordered(t, r, "ack_p50", "ack_p90", "ack_p99", "ack_max")
		})
	}
}
