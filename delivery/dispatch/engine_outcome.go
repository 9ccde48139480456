package dispatch

// How an attempt's outcome is decided, logged and counted.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// logOutcome logs one line for every attempt's outcome (delivered,
// retrying, exhausted), with the same fields each time, at the engine's
// outcome level (a dead letter at warn at least). The error text names
// no URL (see webhook.Sender), so no credential in an endpoint's URL
// reaches the log.
func (e *Engine) logOutcome(ctx context.Context, le *liveEndpoint, d store.Delivery, dr store.DeliveryResult) {
	level, msg := e.cfg.LogLevel, "delivery attempt"
	attrs := []slog.Attr{slog.String("endpoint", le.ep.ID), slog.String("tenant", le.ep.Tenant), slog.String("delivery", d.ID),
		slog.String("event", d.EventID), slog.String("event_type", d.EventType), slog.Int("attempt", d.Attempts+1),
		slog.String("outcome", outcomeName(dr.Status)), slog.Int("status", dr.Attempt.StatusCode),
		slog.Duration("latency", dr.Attempt.Latency)}
	switch dr.Status {
	case store.DeliveryFailed:
		attrs = append(attrs, slog.String("err", dr.Attempt.Error), slog.Time("next_attempt_at", dr.NextAttemptAt))
	case store.DeliveryExhausted:
		level, msg = max(level, slog.LevelWarn), "delivery exhausted: dead letter"
		attrs = append(attrs, slog.String("err", dr.Attempt.Error))
	}
	e.log.LogAttrs(ctx, level, msg, attrs...)
}

// outcomeName is the outcome of an attempt as metrics and logs name it.
func outcomeName(status string) string {
	switch status {
	case store.DeliveryDelivered:
		return "delivered"
	case store.DeliveryExhausted:
		return "exhausted"
	}
	return "retrying"
}

type finalOutcome struct {
	status   string
	tenant   string
	attempts int
	created  time.Time
	latency  time.Duration
}

func (e *Engine) observe(f finalOutcome, now time.Time) {
	m := e.metrics
	tenant := m.labels(f.tenant)
	m.attemptTime.WithLabelValues(tenant...).Observe(f.latency.Seconds())
	m.outcomes.WithLabelValues(m.labels(f.tenant, outcomeName(f.status))...).Inc()
	switch f.status {
	case store.DeliveryDelivered:
		m.attempts.WithLabelValues(tenant...).Observe(float64(f.attempts))
		m.endToEnd.WithLabelValues(tenant...).Observe(now.Sub(f.created).Seconds())
	case store.DeliveryExhausted:
		m.attempts.WithLabelValues(tenant...).Observe(float64(f.attempts))
		m.deadLetters.WithLabelValues(tenant...).Inc()
	}
}

// decide turns one POST's outcome into the next state of its deliveries
// (the first one's schedule decides for a batch, which is retried as a
// unit); the caller sets each result's DeliveryID and LeaseToken.
func decide(le *liveEndpoint, res sendResult, now time.Time) (dr store.DeliveryResult, ok bool, errText string) {
	a := store.DeliveryAttempt{At: res.at, Latency: res.latency, BatchID: res.batchID}
	var retryAfter time.Duration
	switch {
	case res.err != nil:
		errText = res.err.Error()
	case res.acked || res.resp.OK():
		ok = true
	default:
		errText = fmt.Sprintf("HTTP %d", res.resp.StatusCode)
		if s := res.resp.StatusCode; s == http.StatusTooManyRequests || s == http.StatusServiceUnavailable {
			if d, found := delivery.ParseRetryAfter(res.resp.Header.Get("Retry-After"), now); found {
				retryAfter = d
			}
		}
	}
	if res.resp != nil {
		a.StatusCode = res.resp.StatusCode
		a.ResponseBody = res.resp.Body
		if res.resp.BodyErr != nil {
			errText = joinErr(errText, "reading the response: "+res.resp.BodyErr.Error())
		}
	}
	final := !ok && res.resp != nil && delivery.FinalStatus(le.policy, res.resp.StatusCode)
	if final {
		errText = joinErr(errText, fmt.Sprintf("final under failure policy %q: a 4xx other than 408, 409, 425 and 429 is not retried", le.policy))
	}
	a.Error = errText
	dr = store.DeliveryResult{Attempt: a}
	if ok {
		dr.Status = store.DeliveryDelivered
		return dr, true, ""
	}
	at, exhausted := delivery.NextAttempt(le.schedule, res.ds[0].RoundAttempts+1, now, retryAfter)
	if exhausted || final {
		dr.Status = store.DeliveryExhausted
	} else {
		dr.Status, dr.NextAttemptAt = store.DeliveryFailed, at
	}
	return dr, false, errText
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func fromStoreHealth(h store.EndpointHealth) delivery.Health {
	return delivery.Health{ConsecutiveFailures: h.ConsecutiveFailures, LastSuccessAt: h.LastSuccessAt, LastFailureAt: h.LastFailureAt,
		LastError: h.LastError, DisabledAt: h.DisabledAt, DisabledReason: h.DisabledReason}
}

func toStoreHealth(h delivery.Health) store.EndpointHealth {
	return store.EndpointHealth{ConsecutiveFailures: h.ConsecutiveFailures, LastSuccessAt: h.LastSuccessAt, LastFailureAt: h.LastFailureAt,
		LastError: h.LastError, DisabledAt: h.DisabledAt, DisabledReason: h.DisabledReason}
}
