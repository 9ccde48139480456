package main

import (
	"net/http"
	"testing"

	"github.com/heraldstreams/herald/stats"
)

// appendsCounted is the appends of the dashboard overview's chart: the
// sum over the hour GET /_herald/v1/stats answers.
func appendsCounted(t *testing.T, m *matrix) float64 {
	t.Helper()
	var snap stats.Snapshot
	m.admin(t, "GET", "/_herald/v1/stats", "", http.StatusOK, &snap)
	total := 0.0
	for _, minute := range snap.Minutes {
		total += minute.Counts["appends"]
	}
	return total
}

func TestPublishedEventsCountAsAppends(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	// The stats answer samples the counters first: the first answer sets
	// the base, so what follows counts.
	base := appendsCounted(t, m)
	m.admin(t, "POST", "/_herald/v1/events", `{"type":"order.paid","data":{"total":42}}`, http.StatusAccepted, nil)
	if got := appendsCounted(t, m); got != base+1 {
		t.Fatalf("appends after publishing one event = %v, want %v", got, base+1)
	}
}
