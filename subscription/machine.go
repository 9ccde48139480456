package subscription

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// Machine is the consumer state machine of docs/subscriptions.md. Decide is
// a pure function of its arguments and of the bytes read from Rand; a
// Machine holds no state and is safe for concurrent use if Rand is.
type Machine struct {
	// Rand is the source of wake ids and retry jitter; crypto/rand.Reader
	// when nil. Tests pass a seeded reader to get reproducible decisions.
	Rand io.Reader
}

func (m *Machine) rand() io.Reader {
	if m.Rand == nil {
		return rand.Reader
	}
	return m.Rand
}

// Decide applies one event to a consumer at now and returns the next
// consumer and the effects to run after storing it. It never mutates c. On
// error the consumer is unchanged, no effect is due, and the error is one
// of the callback errors (ErrStaleEpoch, ErrAlreadyClaimed,
// ErrInvalidOffset, ErrInvalidRequest, ErrTokenInvalid) for a Callback,
// of the reserved API's (ErrFenced, *ClaimedError, ErrNothingToClaim,
// ErrInvalidOffset, ErrDSInvalid) for its events, or a failure to read
// Rand.
//
// One machine decides for both front doors: a consumer's ReservedTerms
// choose the reserved API's rule where the two differ, in the one table
// below (docs/subscriptions.md, The state machine):
//
//	event             query-string consumer      reserved-API subscription
//	TailsChanged      settle                     dsSettle
//	Tick              tick                       dsTick (lease expiry)
//	WebhookResult     webhookResult              dsWebhookResult
//	Callback          callback                   -
//	ReservedClaim     -                          dsClaim
//	ReservedAck       -                          dsAck (callback or ack)
//	ReservedRelease   -                          dsRelease
//	WakeEventWritten  -                          dsWakeWritten
//	StreamDeleted     streamDeleted              -
//	SubscriptionDeleted Remove                   Remove
//
// The query-string transitions:
//
//	IDLE   → WAKING  pending work (TailsChanged, Tick, after any event):
//	                 epoch++, new wake id, SendWake, ArmTimer(waking)
//	WAKING → LIVE    webhook 2xx, or a callback of the current epoch
//	                 (claiming the wake id): ArmTimer(liveness)
//	WAKING → IDLE    webhook {"done": true} and no pending work: acks each
//	                 stream to its tail in the notification
//	WAKING → WAKING  webhook {"done": true} and pending work: as above,
//	                 then a new wake (epoch++, new wake id)
//	WAKING → WAKING  failed delivery or WakingTimeout: retry with backoff,
//	                 same epoch and wake id; Remove after FailureGCAfter
//	LIVE   → IDLE    callback done and no pending work; LivenessTimeout
//	LIVE   → WAKING  callback done and pending work: epoch++, new wake id
//	any    → removed StreamDeleted (primary), SubscriptionDeleted,
//	                 unsubscribe from all streams
//
// The reserved API's, in the same states and with the same wake cycle:
//
//	IDLE   → WAKING  pending work: epoch++, new wake id; SendWake (the
//	                 lease starts) or AppendWake
//	WAKING → LIVE    webhook 2xx, a callback without done, a claim
//	WAKING → IDLE    webhook {"done": true}, ack with done, release
//	                 (and at once WAKING again when work is pending)
//	WAKING → WAKING  failed attempt or its deadline: retry (DSRetryBase)
//	LIVE   → IDLE    ack with done, release, lease expiry (Tick)
//	any    → FENCED  ack or release of another epoch or wake id
func (m *Machine) Decide(c Consumer, ev Event, now time.Time) (Consumer, []Effect, error) {
	if !c.State.Valid() {
		return c, nil, fmt.Errorf("subscription: consumer %s has invalid state %q", c.ID, c.State)
	}
	next := c.Clone()
	var effects []Effect
	var err error
	reserved := c.IsReserved()
	switch ev := ev.(type) {
	case TailsChanged:
		if reserved {
			effects, err = m.dsSettle(&next, ev.Tails, now)
		} else {
			effects, err = m.settle(&next, ev.Tails, now, nil)
		}
	case Tick:
		if reserved {
			effects, err = m.dsTick(&next, ev.Tails, now)
		} else {
			effects, err = m.tick(&next, ev.Tails, now)
		}
	case WebhookResult:
		if reserved {
			effects, err = m.dsWebhookResult(&next, ev, now)
		} else {
			effects, err = m.webhookResult(&next, ev, now)
		}
	case Callback:
		if reserved {
			err = errWrongDoor(ev, &c)
		} else {
			effects, err = m.callback(&next, ev, now)
		}
	case ReservedClaim:
		if err = errWrongDoor(ev, &c); err == nil {
			effects, err = m.dsClaim(&next, ev, now)
		}
	case ReservedAck:
		if err = errWrongDoor(ev, &c); err == nil {
			effects, err = m.dsAck(&next, ev, now)
		}
	case ReservedRelease:
		if err = errWrongDoor(ev, &c); err == nil {
			effects, err = m.dsRelease(&next, ev, now)
		}
	case WakeEventWritten:
		if err = errWrongDoor(ev, &c); err == nil {
			dsWakeWritten(&next, ev)
		}
	case StreamDeleted:
		if reserved {
			err = errWrongDoor(ev, &c)
		} else {
			effects = streamDeleted(&next, ev.Path)
		}
	case SubscriptionDeleted:
		effects = []Effect{Remove{Reason: RemovedSubscriptionDeleted}}
	default:
		err = fmt.Errorf("subscription: unknown event %T", ev)
	}
	if err != nil {
		return c, nil, err
	}
	return next, effects, nil
}

// errWrongDoor rejects an event of one front door applied to a consumer
// of the other (nil when ev is the reserved API's and c is reserved).
func errWrongDoor(ev Event, c *Consumer) error {
	switch ev.(type) {
	case ReservedClaim, ReservedAck, ReservedRelease, WakeEventWritten:
		if c.IsReserved() {
			return nil
		}
	}
	return fmt.Errorf("%w: %T does not apply to consumer %s", ErrDSInvalid, ev, c.ID)
}

// settle wakes an IDLE consumer that has pending work (L1). Every event
// that can leave a consumer IDLE ends with it.
func (m *Machine) settle(c *Consumer, tails Tails, now time.Time, effects []Effect) ([]Effect, error) {
	if c.State != StateIdle {
		return effects, nil
	}
	if !m.PendingWork(c, tails) {
		// Caught up: whatever wakes it next is new work, not a repeat.
		progressed(c)
		return effects, nil
	}
	return m.wake(c, tails, now, effects)
}

// wake starts a wake cycle: epoch++ (S1), a new wake id (S2), the
// notified tails recorded per stream, and the first delivery.
func (m *Machine) wake(c *Consumer, tails Tails, now time.Time, effects []Effect) ([]Effect, error) {
	id, err := NewWakeID(m.rand())
	if err != nil {
		return nil, err
	}
	c.State = StateWaking
	c.Epoch++
	c.WakeID = id
	woken(c, now)
	for i := range c.Streams {
		c.Streams[i].Notified = tails.of(c.Streams[i].Path)
	}
	c.Attempts = 0
	c.NextRetryAt = time.Time{}
	c.LivenessDeadline = time.Time{}
	return append(effects, m.send(c, now)...), nil
}

// send starts one delivery attempt of the current wake.
func (m *Machine) send(c *Consumer, now time.Time) []Effect {
	c.Attempts++
	c.WakingDeadline = now.Add(WakingTimeout)
	c.NextRetryAt = time.Time{}
	return []Effect{
		SendWake{Wake: m.payload(c), Attempt: c.Attempts},
		ArmTimer{Timer: TimerWaking, At: c.WakingDeadline},
	}
}

// payload builds the wake notification of the current wake from the
// consumer alone, so a retry sends the same notification as the first
// delivery.
func (m *Machine) payload(c *Consumer) WakePayload {
	return WakePayload{
		ConsumerID:    c.ID,
		Epoch:         c.Epoch,
		WakeID:        c.WakeID,
		PrimaryStream: c.PrimaryStream,
		Streams:       c.StreamOffsets(),
		TriggeredBy:   m.triggeredBy(c),
	}
}

// goLive moves a WAKING consumer to LIVE: the wake is claimed, the
// delivery succeeded, the liveness timeout starts.
func goLive(c *Consumer, now time.Time) []Effect {
	c.State = StateLive
	c.WakingDeadline = time.Time{}
	c.NextRetryAt = time.Time{}
	c.FailingSince = time.Time{}
	return keepAlive(c, now)
}

// keepAlive restarts the liveness timeout of a LIVE consumer.
func keepAlive(c *Consumer, now time.Time) []Effect {
	c.LivenessDeadline = now.Add(LivenessTimeout)
	return []Effect{ArmTimer{Timer: TimerLiveness, At: c.LivenessDeadline}}
}

// goIdle ends the wake cycle; settle decides whether a new one starts.
func goIdle(c *Consumer) {
	c.State = StateIdle
	c.WakingDeadline = time.Time{}
	c.NextRetryAt = time.Time{}
	c.LivenessDeadline = time.Time{}
}

// fail records a failed delivery attempt of a WAKING consumer and schedules
// the retry, or removes the consumer after FailureGCAfter of failures.
func (m *Machine) fail(c *Consumer, now time.Time) ([]Effect, error) {
	if c.FailingSince.IsZero() {
		c.FailingSince = now
	}
	if now.Sub(c.FailingSince) >= FailureGCAfter {
		return []Effect{Remove{Reason: RemovedWebhookFailing}}, nil
	}
	delay, err := m.retryDelay(c.Attempts)
	if err != nil {
		return nil, err
	}
	c.WakingDeadline = time.Time{}
	c.NextRetryAt = now.Add(delay)
	return []Effect{ArmTimer{Timer: TimerRetry, At: c.NextRetryAt}}, nil
}

func (m *Machine) tick(c *Consumer, tails Tails, now time.Time) ([]Effect, error) {
	var effects []Effect
	switch c.State {
	case StateLive:
		// A zero deadline on a LIVE consumer cannot be produced by Decide;
		// treat it as expired so a damaged row cannot stay LIVE forever.
		if c.LivenessDeadline.IsZero() || !now.Before(c.LivenessDeadline) {
			goIdle(c)
		}
	case StateWaking:
		if !c.WakingDeadline.IsZero() && !now.Before(c.WakingDeadline) {
			// No 2xx and no callback within WakingTimeout.
			e, err := m.fail(c, now)
			if err != nil {
				return nil, err
			}
			if isRemove(e) {
				return e, nil
			}
			effects = append(effects, e...)
		}
		if c.WakingDeadline.IsZero() && (c.NextRetryAt.IsZero() || !now.Before(c.NextRetryAt)) {
			// The retry is due (or, for a damaged row with neither
			// deadline, overdue): same epoch and wake id (S2).
			effects = append(effects, m.send(c, now)...)
		}
	}
	return m.settle(c, tails, now, effects)
}

func (m *Machine) webhookResult(c *Consumer, r WebhookResult, now time.Time) ([]Effect, error) {
	if r.Epoch != c.Epoch || r.WakeID != c.WakeID || c.WakeID == "" {
		// A late result of an earlier wake cycle.
		return nil, nil
	}
	switch {
	case r.Delivered && r.Done:
		// Synchronous done: claim, ack every stream to its tail in the
		// notification (never to the tail now: later events are still
		// pending work), done.
		m.ackNotified(c)
		c.FailingSince = time.Time{}
		goIdle(c)
		return m.settle(c, r.Tails, now, nil)
	case r.Delivered:
		if c.State == StateWaking {
			return goLive(c, now), nil
		}
		// The wake was already claimed by a callback; nothing changes.
		return nil, nil
	default:
		// Only the failure of the attempt in flight counts: an earlier
		// attempt was already counted when WakingTimeout passed, and a
		// claimed wake needs no delivery.
		if c.State == StateWaking && r.Attempt == c.Attempts && !c.WakingDeadline.IsZero() {
			return m.fail(c, now)
		}
		return nil, nil
	}
}

// ackNotified acks every stream to its tail in the wake's snapshot,
// never back: what a synchronous {"done": true} means, in both models.
func (m *Machine) ackNotified(c *Consumer) {
	for i := range c.Streams {
		s := &c.Streams[i]
		if s.Notified != "" && m.CompareOffsets(s.Notified, s.Acked) > 0 {
			s.Acked = s.Notified
			progressed(c)
		}
	}
}

func streamDeleted(c *Consumer, path string) []Effect {
	if path == c.PrimaryStream {
		return []Effect{Remove{Reason: RemovedPrimaryDeleted}}
	}
	for i, s := range c.Streams {
		if s.Path == path {
			c.Streams = append(c.Streams[:i], c.Streams[i+1:]...)
			break
		}
	}
	if len(c.Streams) == 0 {
		return []Effect{Remove{Reason: RemovedUnsubscribed}}
	}
	return nil
}

func isRemove(effects []Effect) bool {
	for _, e := range effects {
		if _, ok := e.(Remove); ok {
			return true
		}
	}
	return false
}

// retryDelay is the wait before retry n: RetryBackoff plus a uniform jitter
// drawn from Rand.
func (m *Machine) retryDelay(n int) (time.Duration, error) {
	base, spread := RetryBackoff(n)
	var b [8]byte
	if _, err := io.ReadFull(m.rand(), b[:]); err != nil {
		return 0, fmt.Errorf("subscription: reading jitter: %w", err)
	}
	jitter := time.Duration(binary.BigEndian.Uint64(b[:]) % uint64(spread+1))
	return base + jitter, nil
}

// RetryBackoff is the retry schedule of docs/subscriptions.md (Retries): retry
// n (the delivery after n failed attempts) waits base plus a jitter of up
// to maxJitter.
//
//	retries 1-10: min(2^n × 100 ms, 30 s) + up to 1 s
//	retries 11+:  60 s + up to 5 s
func RetryBackoff(n int) (base, maxJitter time.Duration) {
	if n < 1 {
		n = 1
	}
	if n > 10 {
		return 60 * time.Second, 5 * time.Second
	}
	return min(time.Duration(1<<n)*100*time.Millisecond, 30*time.Second), time.Second
}
