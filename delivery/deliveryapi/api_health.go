package deliveryapi

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// HealthWindow is how many recent attempts an endpoint's health summary
// reads: its latest, among those of its HealthWindow newest deliveries.
const HealthWindow = 100

// healthJSON is an endpoint's health summary, shown by GET
// /endpoints/{id} only (lists stay cheap).
type healthJSON struct {
	// Attempts is how many recent attempts the rate and latencies are of.
	Attempts int `json:"attempts"`
	// SuccessRate is the share of them answered 2xx, from 0 to 1; null
	// without attempts, as are the latencies.
	SuccessRate  *float64 `json:"success_rate"`
	LatencyP50MS *float64 `json:"latency_p50_ms"`
	LatencyP99MS *float64 `json:"latency_p99_ms"`
	// Breaker is "open" when the breaker disabled the endpoint, else
	// "closed"; it opens at BreakerThreshold failures in a row.
	Breaker             string `json:"breaker"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
	BreakerThreshold    int    `json:"breaker_threshold"`
	// Pending and Failed count the deliveries waiting (failed ones are
	// retrying); Backlog is their sum.
	Pending int `json:"pending"`
	Failed  int `json:"failed"`
	Backlog int `json:"backlog"`
}

// endpointHealth summarizes an endpoint's recent attempts and backlog.
func (a *API) endpointHealth(ctx context.Context, ep *store.Endpoint) (*healthJSON, error) {
	attempts, err := a.e.Store().DeliveryRecentAttempts(ctx, &store.RecentAttemptsParams{EndpointID: ep.ID, Limit: HealthWindow})
	if err != nil {
		return nil, err
	}
	h := &healthJSON{Breaker: "closed", ConsecutiveFailures: ep.Health.ConsecutiveFailures, BreakerThreshold: a.e.Breaker().Threshold}
	if h.BreakerThreshold <= 0 {
		h.BreakerThreshold = delivery.DefaultBreakerThreshold
	}
	if !ep.Health.DisabledAt.IsZero() {
		h.Breaker = "open"
	}
	h.Attempts, h.SuccessRate, h.LatencyP50MS, h.LatencyP99MS = summarizeAttempts(attempts)
	for _, c := range []struct {
		status string
		dst    *int
	}{{store.DeliveryPending, &h.Pending}, {store.DeliveryFailed, &h.Failed}} {
		n, err := a.e.Store().DeliveryCount(ctx, &store.DeliveryListParams{EndpointID: ep.ID, Status: c.status})
		if err != nil {
			return nil, err
		}
		*c.dst = n
	}
	h.Backlog = h.Pending + h.Failed
	return h, nil
}

// attemptOK reports whether an attempt succeeded: answered 2xx, or
// acknowledged by a broker (no status and no error).
func attemptOK(at *store.DeliveryAttempt) bool {
	return at.StatusCode >= 200 && at.StatusCode <= 299 || at.StatusCode == 0 && at.Error == ""
}

// summarizeAttempts returns how many attempts there are, the share
// answered 2xx or acknowledged by a broker, and the median and 99th percentile of their latencies
// in milliseconds (nearest rank); nil figures without attempts.
func summarizeAttempts(as []store.DeliveryAttempt) (n int, rate, p50, p99 *float64) {
	if len(as) == 0 {
		return 0, nil, nil, nil
	}
	ok := 0
	lat := make([]time.Duration, len(as))
	for i, at := range as {
		if attemptOK(&at) {
			ok++
		}
		lat[i] = at.Latency
	}
	slices.Sort(lat)
	rank := func(p float64) *float64 {
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		ms := math.Round(float64(lat[max(i, 0)].Microseconds())/10) / 100
		return &ms
	}
	r := float64(ok) / float64(len(as))
	return len(as), &r, rank(0.50), rank(0.99)
}
