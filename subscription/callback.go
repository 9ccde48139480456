package subscription

import (
	"errors"
	"fmt"
	"time"
)

// CallbackCheck is what decides whether a callback may be applied: the
// verification of its token, the consumer its URL names, and its body.
type CallbackCheck struct {
	// Token holds the token's claims; TokenErr is Keyring.Verify's error:
	// nil, or one wrapping ErrTokenInvalid or ErrTokenExpired.
	Token    TokenClaims
	TokenErr error
	// Consumer is the consumer the callback URL names, nil when there is
	// none (never created, removed, or its primary stream deleted).
	Consumer *Consumer
	// Request is the parsed body; RequestErr is ParseCallbackRequest's
	// error.
	Request    CallbackRequest
	RequestErr error
}

// CheckCallback is the order in which a callback is refused
// (docs/subscriptions.md, Errors), in one place: the first rule that applies
// decides, and nil means the request may be applied.
//
//  1. 401 TOKEN_INVALID    no token, or one that is malformed, signed with
//     an unknown key or not signed right, or issued for another consumer;
//  2. 410 CONSUMER_GONE    no consumer has the id (S7);
//  3. 401 TOKEN_INVALID    the token was issued to another incarnation of
//     the consumer (one deleted since, whose id was taken again);
//  4. 401 TOKEN_EXPIRED    the token is otherwise good but past its expiry
//     (the response carries a renewed one);
//  5. 400 INVALID_REQUEST  the body is malformed, or has no epoch;
//  6. 409 STALE_EPOCH      the body's epoch, or the token's, is not the
//     consumer's current epoch (S6): a lower one is a zombie's, whatever
//     token it carries; a higher one was never handed out;
//  7. 409 ALREADY_CLAIMED  a wake_id that is not the current wake's (S3).
//
// What the request asks for is checked as it is applied, after these:
// 403 FORBIDDEN for a subscribe to a stream the subscription's owner may
// not read, 409 INVALID_OFFSET for an ack beyond the tail, 400
// INVALID_REQUEST for too many streams. A body over the size limit never gets this far: the
// HTTP layer answers 413 before reading it.
//
// The engine verifies the token before it reads the consumer and parses
// the body, and stops early when rule 1 or 2 applies: both are decided by
// facts known by then, so the order holds.
func CheckCallback(c *CallbackCheck) error {
	expired := errors.Is(c.TokenErr, ErrTokenExpired)
	switch {
	case errors.Is(c.TokenErr, ErrTokenInvalid):
		return c.TokenErr
	case c.TokenErr != nil && !expired:
		return fmt.Errorf("%w: %v", ErrTokenInvalid, c.TokenErr)
	case c.Consumer == nil:
		return fmt.Errorf("%w: no consumer has this id", ErrConsumerGone)
	case c.Token.Incarnation != c.Consumer.Incarnation:
		return fmt.Errorf("%w: the token was issued to a consumer that was deleted since", ErrTokenInvalid)
	case expired:
		return c.TokenErr
	case c.RequestErr != nil:
		return c.RequestErr
	}
	cur, req := c.Consumer.Epoch, c.Request
	switch {
	case cur == 0:
		return fmt.Errorf("%w: consumer %s has not been woken yet", ErrStaleEpoch, c.Consumer.ID)
	case req.Epoch < cur:
		return fmt.Errorf("%w: epoch %d is stale; the current epoch is %d", ErrStaleEpoch, req.Epoch, cur)
	case c.Token.Epoch < cur:
		return fmt.Errorf("%w: the token was issued for epoch %d; the current epoch is %d", ErrStaleEpoch, c.Token.Epoch, cur)
	case req.Epoch > cur || c.Token.Epoch > cur:
		// No token is ever issued for an epoch the consumer has not
		// reached; fence it like a stale one rather than trust it.
		return fmt.Errorf("%w: epoch %d (token: %d) does not match the current epoch %d", ErrStaleEpoch, req.Epoch, c.Token.Epoch, cur)
	case req.WakeID != "" && req.WakeID != c.Consumer.WakeID:
		return fmt.Errorf("%w: wake_id %q does not match the current wake", ErrAlreadyClaimed, req.WakeID)
	}
	return nil
}

// callback applies one callback request (docs/subscriptions.md, The callback
// API). The request is atomic: every check runs before anything changes, and
// Decide returns the consumer unchanged on error. The steps, in order:
//
//  1. CheckCallback: token, epoch, wake id;
//  2. subscribe: only to streams the subscription's owner may read
//     (FORBIDDEN); new streams start at their current tail (lazily at
//     OffsetStart for streams that do not exist yet);
//  3. acks: each at most the stream's tail (INVALID_OFFSET); an ack below
//     the acked offset is ignored (S4);
//  4. unsubscribe: none left removes the consumer;
//  5. the state: a WAKING consumer is claimed (LIVE), a LIVE one's liveness
//     timeout restarts, and done ends the cycle: IDLE without pending work
//     (L2), a new wake with it (L3).
//
// A callback of the current epoch that finds the consumer IDLE (its cycle
// ended by done or by the liveness timeout, and no new wake began) is
// accepted without changing the state, so a retried request succeeds as
// docs/subscriptions.md promises (callbacks are idempotent).
func (m *Machine) callback(c *Consumer, cb Callback, now time.Time) ([]Effect, error) {
	req := cb.Request
	if err := CheckCallback(&CallbackCheck{Token: cb.Token, TokenErr: cb.TokenErr, Consumer: c, Request: req, RequestErr: cb.RequestErr}); err != nil {
		return nil, err
	}

	// 2. Subscribe. Already subscribed streams keep their offsets, so a
	// retried request changes nothing.
	for _, path := range req.Subscribe {
		if cb.Reach != nil && !cb.Reach(path) {
			return nil, fmt.Errorf("%w: %s is outside the streams this consumer's subscription may reach", ErrStreamForbidden, path)
		}
		if _, ok := c.Stream(path); ok {
			continue
		}
		if len(c.Streams) >= MaxConsumerStreams {
			return nil, fmt.Errorf("%w: a consumer may subscribe to at most %d streams", ErrInvalidRequest, MaxConsumerStreams)
		}
		c.Streams = append(c.Streams, StreamCursor{Path: path, Acked: cb.Tails.of(path)})
	}

	// 3. Acks. An ack for a stream the consumer is not subscribed to is
	// ignored: the retry of a request that acked and unsubscribed a stream
	// must succeed like the original.
	for _, ack := range req.Acks {
		s, ok := c.Stream(ack.Path)
		if !ok {
			continue
		}
		if err := m.checkAck(ack.Path, ack.Offset, cb.Tails.of(ack.Path)); err != nil {
			return nil, err
		}
		if m.CompareOffsets(ack.Offset, s.Acked) > 0 {
			s.Acked = ack.Offset
			progressed(c)
		}
	}

	// 4. Unsubscribe.
	for _, path := range req.Unsubscribe {
		for i, s := range c.Streams {
			if s.Path == path {
				c.Streams = append(c.Streams[:i], c.Streams[i+1:]...)
				break
			}
		}
	}
	if len(c.Streams) == 0 {
		return []Effect{Remove{Reason: RemovedUnsubscribed}}, nil
	}

	// 5. State.
	var effects []Effect
	switch c.State {
	case StateWaking:
		// The callback proves the notification arrived: its token was
		// only ever handed out in this wake's notification.
		effects = goLive(c, now)
	case StateLive:
		effects = keepAlive(c, now)
	}
	if req.Done && c.State == StateLive {
		goIdle(c)
		effects = nil
	}
	return m.settle(c, cb.Tails, now, effects)
}
