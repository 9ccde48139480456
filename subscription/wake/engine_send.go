package wake

import (
	"errors"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/internal/telemetry"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/webhook"
)

// Outcomes of one webhook delivery, as counted in the metrics.
const (
	outcomeDelivered = "delivered" // 2xx: the consumer is LIVE
	outcomeDone      = "done"      // 2xx with {"done": true}
	outcomeFailed    = "failed"    // non-2xx, network error or timeout
)

// startSend posts one wake notification of a query-string consumer from
// its own goroutine (goSend).
func (e *Engine) startSend(parent trace.SpanContext, a applied, w subscription.SendWake) {
	e.goSend(func() { e.deliver(parent, a, w) })
}

// goSend runs send, one webhook request and the recording of its
// answer, from its own goroutine: neither the append path nor the caller
// waits for the webhook. Both front doors' wakes go through it, so
// MaxInFlight bounds all the engine's requests in flight; past it the
// caller (a worker, a sweep, a callback that re-woke its consumer) waits
// for a slot.
func (e *Engine) goSend(send func()) {
	select {
	case e.inflight <- struct{}{}:
	case <-e.life.Context().Done():
		return
	}
	if !e.life.Go(func() {
		defer func() { <-e.inflight }()
		send()
	}) {
		<-e.inflight
	}
}

// deliver sends a wake notification and applies its outcome. The
// notification carries the callback URL and a token for the wake's epoch,
// and is signed with the subscription's secret at the time of sending, so
// a retry hours later is within the receiver's tolerance. The outcome is
// applied to the consumer as it was stored with the wake (compare-and-set
// re-reads it if it changed meanwhile).
//
// The wake is a span, a child of parent (the request that caused it) when
// that was traced; its POST carries the span's traceparent.
func (e *Engine) deliver(parent trace.SpanContext, a applied, w subscription.SendWake) {
	c := &a.Consumer
	ctx, span := e.tracer.Start(telemetry.Follow(e.life.WorkContext(), parent), "subscription.wake", trace.WithAttributes(
		attribute.String("herald.consumer_id", c.ID), attribute.String("herald.subscription_id", c.SubscriptionID),
		attribute.Int64("herald.epoch", w.Wake.Epoch), attribute.String("herald.wake_id", w.Wake.WakeID),
		attribute.Int("herald.attempt", w.Attempt)))
	defer span.End()
	sub, err := e.subscription(ctx, c.SubscriptionID)
	if errors.Is(err, store.ErrSubscriptionNotFound) {
		// Deleted with a wake in flight: the consumer goes too (S7).
		if a, err := e.apply(ctx, c.ID, input{Event: subscription.SubscriptionDeleted{}}); err == nil {
			e.runEffects(ctx, a)
		}
		return
	}
	if err != nil {
		// The waking deadline, already stored, retries the delivery.
		span.SetStatus(codes.Error, err.Error())
		e.logSendError(c.ID, err)
		return
	}
	now := e.now()
	token, err := e.keys.Issue(subscription.TokenSubject{ConsumerID: c.ID, Incarnation: c.Incarnation, Epoch: w.Wake.Epoch}, now)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		e.logSendError(c.ID, err)
		return
	}
	payload := w.Wake
	payload.Callback = e.base + "/callback/" + c.ID
	payload.Token = token
	body := payload.AppendJSON(make([]byte, 0, 512))
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	hdr.Set(subscription.SignatureHeader, subscription.SignatureHeaderValue(sub.Secret, body, now))
	if w.Attempt <= 1 {
		e.metrics.wakes.Inc()
	} else {
		e.metrics.retries.Inc()
	}

	resp, err := e.sender.Send(ctx, &webhook.Request{URL: sub.Webhook, Header: hdr, Body: body, Timeout: subscription.WebhookRequestTimeout})
	if ctx.Err() != nil {
		// Stopping: the stored waking deadline retries after a restart.
		return
	}
	res := subscription.WebhookResult{Epoch: w.Wake.Epoch, WakeID: w.Wake.WakeID, Attempt: w.Attempt}
	outcome := outcomeFailed
	if err != nil {
		e.log.Debug("wake delivery failed", "consumer", c.ID, "attempt", w.Attempt, "err", err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		e.metrics.latency.Observe(resp.Latency.Seconds())
		if resp.OK() {
			res.Delivered = true
			res.Done = subscription.ParseWebhookResponse(resp.Body).Done
			outcome = outcomeDelivered
			if res.Done {
				outcome = outcomeDone
			}
		}
	}
	e.metrics.deliveries.WithLabelValues(outcome).Inc()
	span.SetAttributes(attribute.String("herald.outcome", outcome))
	pre := toStored(c)
	pre.Version = a.Version
	a, err = e.apply(ctx, c.ID, input{Event: res, Pre: &pre})
	if err != nil {
		if !errors.Is(err, subscription.ErrConsumerGone) && ctx.Err() == nil {
			e.log.Warn("applying a webhook result", "consumer", c.ID, "err", err)
		}
		return
	}
	e.runEffects(ctx, a)
}

func (e *Engine) logSendError(id string, err error) {
	if e.life.WorkContext().Err() == nil {
		e.log.Warn("sending a wake", "consumer", id, "err", err)
	}
}
