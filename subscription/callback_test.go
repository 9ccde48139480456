package subscription

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// cb builds a Callback event whose token is for the request's epoch.
func cb(req CallbackRequest, t Tails) Callback {
	return Callback{Request: req, Token: TokenClaims{Epoch: req.Epoch}, Tails: t}
}

func TestCallbackTransitions(t *testing.T) {
	t.Parallel()
	t1 := t0.Add(5 * time.Second)
	liveAt := func(at time.Time) Consumer {
		return with(live(), func(c *Consumer) { c.LivenessDeadline = at.Add(LivenessTimeout) })
	}
	armLiveness := []Effect{ArmTimer{Timer: TimerLiveness, At: t1.Add(LivenessTimeout)}}
	rewoken := with(live(), func(c *Consumer) { // live() done at t1 with pA at 13
		c.State = StateWaking
		c.Epoch = 5
		c.WakeID = wakeZero
		c.LivenessDeadline = time.Time{}
		c.Streams[0] = StreamCursor{Path: pA, Acked: off(12), Notified: off(13)}
		c.WakingDeadline = t1.Add(WakingTimeout)
		c.StalledWakes, c.StalledSince = 1, t1
	})
	runDecideCases(t, []decideCase{
		// WAKING → LIVE: a callback claims the wake id.
		{
			name:    "WAKING to LIVE when a callback claims the wake id",
			c:       waking(),
			ev:      cb(CallbackRequest{Epoch: 4, WakeID: "w_cur"}, tails(12, 5)),
			now:     t1,
			want:    liveAt(t1),
			effects: armLiveness,
		},
		{
			// The token and epoch of the callback were only ever handed out
			// in this wake's notification: it proves the wake arrived.
			name:    "WAKING to LIVE on a callback of the current epoch without wake id",
			c:       waking(),
			ev:      cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pA, Offset: off(11)}}}, tails(12, 5)),
			now:     t1,
			want:    with(liveAt(t1), func(c *Consumer) { c.Streams[0].Acked = off(11) }),
			effects: armLiveness,
		},
		{
			name:    "claim and done in one callback without pending work ends in IDLE",
			c:       waking(),
			ev:      cb(CallbackRequest{Epoch: 4, WakeID: "w_cur", Acks: []StreamOffset{{Path: pA, Offset: off(12)}}, Done: true}, tails(12, 5)),
			now:     t1,
			want:    with(waking(), func(c *Consumer) { c.State = StateIdle; c.WakingDeadline = time.Time{}; c.Streams[0].Acked = off(12) }),
			effects: nil,
		},
		// S3: claiming the current wake id again is idempotent.
		{
			name:    "claiming the current wake id again succeeds",
			c:       live(),
			ev:      cb(CallbackRequest{Epoch: 4, WakeID: "w_cur"}, tails(12, 5)),
			now:     t1,
			want:    liveAt(t1),
			effects: armLiveness,
		},
		// Liveness: any callback, even {"epoch": N}, resets the timeout.
		{
			name:    "a bare callback resets the liveness timeout",
			c:       live(),
			ev:      cb(CallbackRequest{Epoch: 4}, tails(12, 5)),
			now:     t1,
			want:    liveAt(t1),
			effects: armLiveness,
		},
		// LIVE → IDLE: callback done and no pending work (L2).
		{
			name: "LIVE to IDLE on done without pending work",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pA, Offset: off(12)}}, Done: true}, tails(12, 5)),
			now:  t1,
			want: with(live(), func(c *Consumer) { c.State = StateIdle; c.LivenessDeadline = time.Time{}; c.Streams[0].Acked = off(12) }),
		},
		// LIVE → WAKING: callback done and pending work (L3).
		{
			name:    "LIVE to WAKING on done with pending work",
			c:       live(),
			ev:      cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pA, Offset: off(12)}}, Done: true}, tails(13, 5)),
			now:     t1,
			want:    rewoken,
			effects: wakeEffects(rewoken, 1, t1),
		},
		// A retried request after the cycle ended succeeds and changes
		// nothing.
		{
			name: "a retried done after the consumer went IDLE succeeds",
			c:    with(live(), func(c *Consumer) { c.State = StateIdle; c.LivenessDeadline = time.Time{}; c.Streams[0].Acked = off(12) }),
			ev:   cb(CallbackRequest{Epoch: 4, WakeID: "w_cur", Acks: []StreamOffset{{Path: pA, Offset: off(12)}}, Done: true}, tails(12, 5)),
			now:  t1,
			want: with(live(), func(c *Consumer) { c.State = StateIdle; c.LivenessDeadline = time.Time{}; c.Streams[0].Acked = off(12) }),
		},
		// S4: acks never move back; an ack below the acked offset is
		// ignored, not an error.
		{
			name:    "an ack below the acked offset is ignored",
			c:       with(live(), func(c *Consumer) { c.Streams[0].Acked = off(12) }),
			ev:      cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pA, Offset: off(11)}}}, tails(12, 5)),
			now:     t1,
			want:    with(liveAt(t1), func(c *Consumer) { c.Streams[0].Acked = off(12) }),
			effects: armLiveness,
		},
		{
			name:    "-1 never moves an ack back",
			c:       live(),
			ev:      cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pA, Offset: OffsetStart}}}, tails(12, 5)),
			now:     t1,
			want:    liveAt(t1),
			effects: armLiveness,
		},
		{
			name:    "acks apply in order and the highest wins",
			c:       live(),
			ev:      cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pA, Offset: off(12)}, {Path: pA, Offset: off(11)}, {Path: pB, Offset: off(5)}}}, tails(12, 5)),
			now:     t1,
			want:    with(liveAt(t1), func(c *Consumer) { c.Streams[0].Acked = off(12) }),
			effects: armLiveness,
		},
		{
			name:    "an ack for a stream the consumer is not subscribed to is ignored",
			c:       live(),
			ev:      cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pD, Offset: off(99)}}}, tails(12, 5)),
			now:     t1,
			want:    liveAt(t1),
			effects: armLiveness,
		},
		// Dynamic subscribe: new streams start at the current tail, lazily
		// at -1 for streams that do not exist yet.
		{
			name: "subscribe starts at the tail, or at -1 for a missing stream",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 4, Subscribe: []string{pD, pC, pB}}, Tails{pA: off(12), pB: off(9), pD: off(30)}),
			now:  t1,
			want: with(liveAt(t1), func(c *Consumer) {
				c.Streams = append(c.Streams, StreamCursor{Path: pD, Acked: off(30)}, StreamCursor{Path: pC, Acked: OffsetStart})
			}),
			effects: armLiveness,
		},
		{
			name: "subscribe and ack the new stream in one request",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 4, Subscribe: []string{pC}, Acks: []StreamOffset{{Path: pC, Offset: start}}}, Tails{pA: off(12), pB: off(5), pC: start}),
			now:  t1,
			want: with(liveAt(t1), func(c *Consumer) {
				c.Streams = append(c.Streams, StreamCursor{Path: pC, Acked: start})
			}),
			effects: armLiveness,
		},
		// Dynamic unsubscribe.
		{
			name:    "unsubscribe from the primary keeps the consumer",
			c:       live(),
			ev:      cb(CallbackRequest{Epoch: 4, Unsubscribe: []string{pA, pD}}, tails(12, 5)),
			now:     t1,
			want:    with(liveAt(t1), func(c *Consumer) { c.Streams = c.Streams[1:] }),
			effects: armLiveness,
		},
		{
			name:    "unsubscribe from all streams removes the consumer",
			c:       live(),
			ev:      cb(CallbackRequest{Epoch: 4, Unsubscribe: []string{pA, pB}}, tails(12, 5)),
			now:     t1,
			want:    with(live(), func(c *Consumer) { c.Streams = []StreamCursor{} }),
			effects: []Effect{Remove{Reason: RemovedUnsubscribed}},
		},
		{
			name:    "ack and unsubscribe retried after success",
			c:       with(live(), func(c *Consumer) { c.Streams = c.Streams[:1] }),
			ev:      cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pB, Offset: off(5)}}, Unsubscribe: []string{pB}}, tails(12, 5)),
			now:     t1,
			want:    with(liveAt(t1), func(c *Consumer) { c.Streams = c.Streams[:1] }),
			effects: armLiveness,
		},
	})
}

func TestCallbackErrors(t *testing.T) {
	t.Parallel()
	t1 := t0.Add(5 * time.Second)
	tooMany := with(live(), func(c *Consumer) {
		for i := len(c.Streams); i < MaxConsumerStreams; i++ {
			c.Streams = append(c.Streams, StreamCursor{Path: fmt.Sprintf("/s/%d", i), Acked: OffsetStart})
		}
	})
	runDecideCases(t, []decideCase{
		{
			name: "a stale token with the current body epoch is STALE_EPOCH",
			c:    live(),
			ev:   Callback{Request: CallbackRequest{Epoch: 4}, Token: TokenClaims{Epoch: 3}, Tails: tails(12, 5)},
			now:  t1,
			err:  ErrStaleEpoch,
		},
		{
			name: "the current token with a stale body epoch is STALE_EPOCH",
			c:    live(),
			ev:   Callback{Request: CallbackRequest{Epoch: 3}, Token: TokenClaims{Epoch: 4}, Tails: tails(12, 5)},
			now:  t1,
			err:  ErrStaleEpoch,
		},
		// S6: callbacks with epoch < current are STALE_EPOCH.
		{
			name: "an older epoch is STALE_EPOCH",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 3, Acks: []StreamOffset{{Path: pA, Offset: off(12)}}}, tails(12, 5)),
			now:  t1,
			err:  ErrStaleEpoch,
		},
		{
			name: "an older epoch is STALE_EPOCH even on an IDLE consumer",
			c:    idle(),
			ev:   cb(CallbackRequest{Epoch: 2, Done: true}, tails(10, 5)),
			now:  t1,
			err:  ErrStaleEpoch,
		},
		{
			name: "an epoch ahead of the consumer is fenced too",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 5}, tails(12, 5)),
			now:  t1,
			err:  ErrStaleEpoch,
		},
		{
			name: "a consumer never woken accepts no callback",
			c:    with(idle(), func(c *Consumer) { c.Epoch = 0; c.WakeID = "" }),
			ev:   cb(CallbackRequest{Epoch: 0}, tails(10, 5)),
			now:  t1,
			err:  ErrStaleEpoch,
		},
		// S3: a non-matching wake id is ALREADY_CLAIMED.
		{
			name: "another wake id is ALREADY_CLAIMED while WAKING",
			c:    waking(),
			ev:   cb(CallbackRequest{Epoch: 4, WakeID: "w_other"}, tails(12, 5)),
			now:  t1,
			err:  ErrAlreadyClaimed,
		},
		{
			name: "another wake id is ALREADY_CLAIMED while LIVE",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 4, WakeID: "w_old"}, tails(12, 5)),
			now:  t1,
			err:  ErrAlreadyClaimed,
		},
		// INVALID_OFFSET, and atomicity: the valid ack before it is not
		// applied either.
		{
			name: "an ack beyond the tail is INVALID_OFFSET",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pB, Offset: off(5)}, {Path: pA, Offset: off(13)}}}, tails(12, 5)),
			now:  t1,
			err:  ErrInvalidOffset,
		},
		{
			name: "an ack on a stream that does not exist is INVALID_OFFSET",
			c:    with(live(), func(c *Consumer) { c.Streams = append(c.Streams, StreamCursor{Path: pC, Acked: OffsetStart}) }),
			ev:   cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pC, Offset: off(1)}}}, tails(12, 5)),
			now:  t1,
			err:  ErrInvalidOffset,
		},
		{
			name: "a malformed ack offset is INVALID_OFFSET",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pA, Offset: "12/3"}}}, tails(12, 5)),
			now:  t1,
			err:  ErrInvalidOffset,
		},
		{
			// "5" sorts after the tail; "0" would sort before every
			// token: neither is an offset of this stream.
			name: "an ack of another width is INVALID_OFFSET",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 4, Acks: []StreamOffset{{Path: pA, Offset: "0"}}}, tails(12, 5)),
			now:  t1,
			err:  ErrInvalidOffset,
		},
		{
			name: "the epoch is checked before anything is applied",
			c:    live(),
			ev:   cb(CallbackRequest{Epoch: 3, Unsubscribe: []string{pA, pB}}, tails(12, 5)),
			now:  t1,
			err:  ErrStaleEpoch,
		},
		{
			name: "subscribing past MaxConsumerStreams is INVALID_REQUEST",
			c:    tooMany,
			ev:   cb(CallbackRequest{Epoch: 4, Subscribe: []string{pD}}, tails(12, 5)),
			now:  t1,
			err:  ErrInvalidRequest,
		},
	})
}

// TestCheckCallbackOrder pins the order of CheckCallback's rules: each row
// breaks its rule and every later one, so only the order picks the error.
func TestCheckCallbackOrder(t *testing.T) {
	t.Parallel()
	cur := live() // epoch 4, wake w_cur
	reborn := with(live(), func(c *Consumer) { c.Incarnation = "i_new" })
	never := with(idle(), func(c *Consumer) { c.Epoch, c.WakeID = 0, "" })
	invalid := fmt.Errorf("%w: bad signature", ErrTokenInvalid)
	expired := fmt.Errorf("%w: the token expired", ErrTokenExpired)
	malformed := fmt.Errorf("%w: epoch is required", ErrInvalidRequest)
	stale := CallbackRequest{Epoch: 3, WakeID: "w_other"}
	tests := []struct {
		name string
		in   CallbackCheck
		want error
	}{
		{"a bad token before everything", CallbackCheck{TokenErr: invalid, Token: TokenClaims{Epoch: 3}, RequestErr: malformed, Request: stale}, ErrTokenInvalid},
		{"an unknown token error is a bad token", CallbackCheck{TokenErr: errString("odd"), Consumer: &cur}, ErrTokenInvalid},
		{"no consumer before an expired token", CallbackCheck{TokenErr: expired, Token: TokenClaims{Epoch: 3}, RequestErr: malformed}, ErrConsumerGone},
		{"no consumer before another incarnation", CallbackCheck{Token: TokenClaims{Incarnation: "i_old", Epoch: 4}, Request: CallbackRequest{Epoch: 4}}, ErrConsumerGone},
		{"another incarnation before an expired token", CallbackCheck{TokenErr: expired, Token: TokenClaims{Incarnation: "i_old", Epoch: 3}, Consumer: &reborn, RequestErr: malformed, Request: stale}, ErrTokenInvalid},
		{"a token without incarnation for a consumer with one", CallbackCheck{Token: TokenClaims{Epoch: 4}, Consumer: &reborn, Request: CallbackRequest{Epoch: 4}}, ErrTokenInvalid},
		{"the consumer's incarnation", CallbackCheck{Token: TokenClaims{Incarnation: "i_new", Epoch: 4}, Consumer: &reborn, Request: CallbackRequest{Epoch: 4}}, nil},
		{"an expired token before the body", CallbackCheck{TokenErr: expired, Token: TokenClaims{Epoch: 3}, Consumer: &cur, RequestErr: malformed, Request: stale}, ErrTokenExpired},
		{"a malformed body before the epoch", CallbackCheck{Token: TokenClaims{Epoch: 3}, Consumer: &cur, RequestErr: malformed, Request: stale}, ErrInvalidRequest},
		{"a stale body epoch with the current token", CallbackCheck{Token: TokenClaims{Epoch: 4}, Consumer: &cur, Request: stale}, ErrStaleEpoch},
		{"a stale token with the current body epoch", CallbackCheck{Token: TokenClaims{Epoch: 3}, Consumer: &cur, Request: CallbackRequest{Epoch: 4, WakeID: "w_other"}}, ErrStaleEpoch},
		{"an epoch ahead", CallbackCheck{Token: TokenClaims{Epoch: 5}, Consumer: &cur, Request: CallbackRequest{Epoch: 5}}, ErrStaleEpoch},
		{"a consumer never woken", CallbackCheck{Token: TokenClaims{Epoch: 1}, Consumer: &never, Request: CallbackRequest{Epoch: 1}}, ErrStaleEpoch},
		{"another wake id", CallbackCheck{Token: TokenClaims{Epoch: 4}, Consumer: &cur, Request: CallbackRequest{Epoch: 4, WakeID: "w_other"}}, ErrAlreadyClaimed},
		{"the current wake id", CallbackCheck{Token: TokenClaims{Epoch: 4}, Consumer: &cur, Request: CallbackRequest{Epoch: 4, WakeID: "w_cur"}}, nil},
		{"no wake id", CallbackCheck{Token: TokenClaims{Epoch: 4}, Consumer: &cur, Request: CallbackRequest{Epoch: 4}}, nil},
	}
	for _, tt := range tests {
		err := CheckCallback(&tt.in)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
		if _, ok := CallbackErrorCode(err); err != nil && !ok {
			t.Errorf("%s: %v is not a callback error", tt.name, err)
		}
	}
}
