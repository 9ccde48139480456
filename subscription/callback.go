package subscription

import (
	"fmt"
	"time"
)

// callback applies one callback request (seed 000, "Callback API"). The
// request is atomic: every check runs before anything changes, and Decide
// returns the consumer unchanged on error. The steps, in order:
//
//  1. token epoch and body epoch agree (TOKEN_INVALID), the epoch is the
//     consumer's (STALE_EPOCH, S6), a wake_id, when given, is the current
//     one (ALREADY_CLAIMED, S3);
//  2. subscribe: new streams start at their current tail (lazily at
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
// the seed requires ("All operations are idempotent").
func (m *Machine) callback(c *Consumer, cb Callback, now time.Time) ([]Effect, error) {
	req := cb.Request
	switch {
	case req.Epoch != cb.TokenEpoch:
		return nil, fmt.Errorf("%w: the token was issued for epoch %d, the request is for epoch %d", ErrTokenInvalid, cb.TokenEpoch, req.Epoch)
	case c.Epoch == 0:
		return nil, fmt.Errorf("%w: consumer %s has not been woken yet", ErrStaleEpoch, c.ID)
	case req.Epoch < c.Epoch:
		return nil, fmt.Errorf("%w: consumer epoch %d is stale; current epoch is %d", ErrStaleEpoch, req.Epoch, c.Epoch)
	case req.Epoch > c.Epoch:
		// No token is ever issued for an epoch the consumer has not
		// reached; fence it like a stale one rather than trust it.
		return nil, fmt.Errorf("%w: epoch %d does not match the current epoch %d", ErrStaleEpoch, req.Epoch, c.Epoch)
	case req.WakeID != "" && req.WakeID != c.WakeID:
		return nil, fmt.Errorf("%w: wake_id %q does not match the current wake", ErrAlreadyClaimed, req.WakeID)
	}

	// 2. Subscribe. Already subscribed streams keep their offsets, so a
	// retried request changes nothing.
	for _, path := range req.Subscribe {
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
