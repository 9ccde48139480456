package subscription

import (
	"errors"
	"testing"
	"time"
)

// Every row of the state machine table of docs/subscriptions.md, and the
// rules around it that are not callbacks (see callback_test.go) or timers
// (see timers_test.go).
func TestTransitions(t *testing.T) {
	t.Parallel()
	t1 := t0.Add(time.Second)
	wokenIdle := with(idle(), func(c *Consumer) { // idle() woken at t1 by pA at 12
		c.State = StateWaking
		c.Epoch = 4
		c.WakeID = wakeZero
		c.Streams[0].Notified = off(12)
		c.Attempts = 1
		c.WakingDeadline = t1.Add(WakingTimeout)
		c.StalledWakes, c.StalledSince = 1, t1
	})
	wokenBoth := with(wokenIdle, func(c *Consumer) { c.Streams[1].Notified = off(7) })
	runDecideCases(t, []decideCase{
		// IDLE → WAKING: pending_work becomes true; epoch++, new wake_id,
		// webhook POST.
		{
			name:    "IDLE to WAKING on pending work",
			c:       idle(),
			ev:      TailsChanged{Tails: tails(12, 5)},
			now:     t1,
			want:    wokenIdle,
			effects: wakeEffects(wokenIdle, 1, t1),
		},
		{
			name:    "IDLE to WAKING lists every stream with events in triggered_by",
			c:       idle(),
			ev:      TailsChanged{Tails: tails(12, 7)},
			now:     t1,
			want:    wokenBoth,
			effects: wakeEffects(wokenBoth, 1, t1),
		},
		{
			name: "IDLE stays IDLE without pending work",
			c:    idle(),
			ev:   TailsChanged{Tails: tails(10, 5)},
			now:  t1,
			want: idle(),
		},
		{
			// A new stream's consumer starts at -1: the stream's first
			// offset is beyond it, even before any event is appended.
			name: "an empty stream is pending work for a consumer at -1",
			c:    with(idle(), func(c *Consumer) { c.Streams[1].Acked = OffsetStart }),
			ev:   TailsChanged{Tails: tails(10, 0)},
			now:  t1,
			want: with(wokenIdle, func(c *Consumer) {
				c.Streams[0].Notified = off(10)
				c.Streams[1] = StreamCursor{Path: pB, Acked: OffsetStart, Notified: off(0)}
			}),
			effects: wakeEffects(with(wokenIdle, func(c *Consumer) {
				c.Streams[0].Notified = off(10)
				c.Streams[1] = StreamCursor{Path: pB, Acked: OffsetStart, Notified: off(0)}
			}), 1, t1),
		},
		{
			name: "a stream that does not exist is no pending work",
			c:    with(idle(), func(c *Consumer) { c.Streams[1] = StreamCursor{Path: pC, Acked: OffsetStart} }),
			ev:   TailsChanged{Tails: Tails{pA: off(10)}},
			now:  t1,
			want: with(idle(), func(c *Consumer) { c.Streams[1] = StreamCursor{Path: pC, Acked: OffsetStart} }),
		},
		{
			name: "a lazily subscribed stream that gets events is pending work",
			c:    with(idle(), func(c *Consumer) { c.Streams[1] = StreamCursor{Path: pC, Acked: OffsetStart} }),
			ev:   TailsChanged{Tails: Tails{pA: off(10), pC: off(3)}},
			now:  t1,
			want: with(wokenIdle, func(c *Consumer) {
				c.Streams[0].Notified = off(10)
				c.Streams[1] = StreamCursor{Path: pC, Acked: OffsetStart, Notified: off(3)}
			}),
			effects: wakeEffects(with(wokenIdle, func(c *Consumer) {
				c.Streams[0].Notified = off(10)
				c.Streams[1] = StreamCursor{Path: pC, Acked: OffsetStart, Notified: off(3)}
			}), 1, t1),
		},
		// Wake batching: no re-wake while WAKING or LIVE.
		{
			name: "WAKING ignores new events",
			c:    waking(),
			ev:   TailsChanged{Tails: tails(20, 9)},
			now:  t1,
			want: waking(),
		},
		{
			name: "LIVE ignores new events",
			c:    live(),
			ev:   TailsChanged{Tails: tails(20, 9)},
			now:  t1,
			want: live(),
		},
		// WAKING → LIVE: webhook responds 2xx; liveness timeout starts.
		{
			name: "WAKING to LIVE on a 2xx",
			c:    with(waking(), func(c *Consumer) { c.FailingSince = t0.Add(-time.Hour) }),
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1, Delivered: true},
			now:  t1,
			want: with(live(), func(c *Consumer) { c.LivenessDeadline = t1.Add(LivenessTimeout) }),
			effects: []Effect{
				ArmTimer{Timer: TimerLiveness, At: t1.Add(LivenessTimeout)},
			},
		},
		{
			name: "WAKING to LIVE on a 2xx of an earlier attempt",
			c: with(waking(), func(c *Consumer) {
				c.Attempts = 3
				c.WakingDeadline = time.Time{}
				c.NextRetryAt = t1.Add(time.Second)
				c.FailingSince = t0
			}),
			ev:  WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1, Delivered: true},
			now: t1,
			want: with(live(), func(c *Consumer) {
				c.Attempts = 3
				c.LivenessDeadline = t1.Add(LivenessTimeout)
			}),
			effects: []Effect{ArmTimer{Timer: TimerLiveness, At: t1.Add(LivenessTimeout)}},
		},
		{
			name: "a 2xx after a callback claimed the wake changes nothing",
			c:    live(),
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1, Delivered: true},
			now:  t1,
			want: live(),
		},
		// WAKING → IDLE: webhook responds {done: true} and no pending work;
		// auto-ack to the tails of the notification.
		{
			name: "WAKING to IDLE on a synchronous done",
			c:    waking(),
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1, Delivered: true, Done: true, Tails: tails(12, 5)},
			now:  t1,
			want: with(waking(), func(c *Consumer) {
				c.State = StateIdle
				c.WakingDeadline = time.Time{}
				c.Streams[0].Acked = off(12)
			}),
		},
		{
			// The no-lost-wake rule: events appended between building the
			// notification (tail 12) and the response (tail 15) are not
			// acked; they are pending work and start a new wake at once.
			name: "a synchronous done acks to the notified tails and re-wakes for later events",
			c:    waking(),
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1, Delivered: true, Done: true, Tails: tails(15, 5)},
			now:  t1,
			want: with(wokenIdle, func(c *Consumer) {
				c.Epoch = 5
				c.Streams[0] = StreamCursor{Path: pA, Acked: off(12), Notified: off(15)}
			}),
			effects: wakeEffects(with(wokenIdle, func(c *Consumer) {
				c.Epoch = 5
				c.Streams[0] = StreamCursor{Path: pA, Acked: off(12), Notified: off(15)}
			}), 1, t1),
		},
		{
			name: "a synchronous done after callbacks never moves an ack back",
			c: with(live(), func(c *Consumer) {
				c.Streams[0].Acked = off(14) // the consumer read past the notification
				c.Streams = append(c.Streams, StreamCursor{Path: pC, Acked: OffsetStart})
			}),
			ev:  WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1, Delivered: true, Done: true, Tails: tails(14, 5)},
			now: t1,
			want: with(live(), func(c *Consumer) {
				c.State = StateIdle
				c.LivenessDeadline = time.Time{}
				c.Streams[0].Acked = off(14)
				c.Streams = append(c.Streams, StreamCursor{Path: pC, Acked: OffsetStart})
			}),
		},
		{
			name: "a result for an earlier wake is ignored",
			c:    waking(),
			ev:   WebhookResult{Epoch: 3, WakeID: "w_old", Attempt: 1, Delivered: true, Done: true, Tails: tails(12, 5)},
			now:  t1,
			want: waking(),
		},
		{
			name: "a result with the epoch but another wake id is ignored",
			c:    waking(),
			ev:   WebhookResult{Epoch: 4, WakeID: "w_forged", Attempt: 1, Delivered: true},
			now:  t1,
			want: waking(),
		},
		// Any → Removed.
		{
			name:    "primary stream deleted removes the consumer",
			c:       live(),
			ev:      StreamDeleted{Path: pA},
			now:     t1,
			want:    live(),
			effects: []Effect{Remove{Reason: RemovedPrimaryDeleted}},
		},
		{
			name:    "primary stream deleted removes a consumer that unsubscribed from it",
			c:       with(idle(), func(c *Consumer) { c.Streams = c.Streams[1:] }),
			ev:      StreamDeleted{Path: pA},
			now:     t1,
			want:    with(idle(), func(c *Consumer) { c.Streams = c.Streams[1:] }),
			effects: []Effect{Remove{Reason: RemovedPrimaryDeleted}},
		},
		{
			name: "a deleted secondary stream is dropped",
			c:    live(),
			ev:   StreamDeleted{Path: pB},
			now:  t1,
			want: with(live(), func(c *Consumer) { c.Streams = c.Streams[:1] }),
		},
		{
			name:    "deleting the last stream removes the consumer",
			c:       with(idle(), func(c *Consumer) { c.Streams = c.Streams[1:] }),
			ev:      StreamDeleted{Path: pB},
			now:     t1,
			want:    with(idle(), func(c *Consumer) { c.Streams = []StreamCursor{} }),
			effects: []Effect{Remove{Reason: RemovedUnsubscribed}},
		},
		{
			name: "deleting an unrelated stream changes nothing",
			c:    idle(),
			ev:   StreamDeleted{Path: pD},
			now:  t1,
			want: idle(),
		},
		{
			name:    "subscription deleted removes the consumer",
			c:       waking(),
			ev:      SubscriptionDeleted{},
			now:     t1,
			want:    waking(),
			effects: []Effect{Remove{Reason: RemovedSubscriptionDeleted}},
		},
	})
}

func TestDecideRejectsBadInput(t *testing.T) {
	t.Parallel()
	m := machine()
	if _, _, err := m.Decide(with(idle(), func(c *Consumer) { c.State = "ASLEEP" }), Tick{}, t0); err == nil {
		t.Error("a consumer with an unknown state was accepted")
	}
	if _, _, err := m.Decide(idle(), nil, t0); err == nil {
		t.Error("a nil event was accepted")
	}
	broken := &Machine{Rand: failingReader{}}
	if _, _, err := broken.Decide(idle(), TailsChanged{Tails: tails(12, 5)}, t0); err == nil {
		t.Error("a wake without entropy for its wake id succeeded")
	}
	if _, _, err := broken.Decide(waking(), Tick{Tails: tails(12, 5)}, t0.Add(WakingTimeout)); err == nil {
		t.Error("a retry without entropy for its jitter succeeded")
	}
}

func TestNewConsumer(t *testing.T) {
	t.Parallel()
	c, err := NewConsumer(NewConsumerParams{SubscriptionID: subID, PrimaryStream: pA})
	if err != nil {
		t.Fatal(err)
	}
	want := Consumer{
		ID:             "agent-handler:%2Fagents%2Ftask-1",
		SubscriptionID: subID,
		PrimaryStream:  pA,
		State:          StateIdle,
		Streams:        []StreamCursor{{Path: pA, Acked: OffsetStart}},
	}
	if !equalConsumer(c, want) {
		t.Errorf("NewConsumer = %+v, want %+v", c, want)
	}
	// Existing streams: the consumer starts at the tail and wakes only for
	// new events.
	c, err = NewConsumer(NewConsumerParams{SubscriptionID: subID, PrimaryStream: pA, StartOffset: off(40)})
	if err != nil {
		t.Fatal(err)
	}
	m := machine()
	if m.PendingWork(&c, Tails{pA: off(40)}) {
		t.Error("a consumer of an existing stream has pending work before any new event")
	}
	if !m.PendingWork(&c, Tails{pA: off(41)}) {
		t.Error("a new event is not pending work")
	}

	for _, p := range []NewConsumerParams{
		{SubscriptionID: "", PrimaryStream: pA},
		{SubscriptionID: "a:b", PrimaryStream: pA},
		{SubscriptionID: subID, PrimaryStream: "agents"},
		{SubscriptionID: subID, PrimaryStream: pA, StartOffset: "a/b"},
	} {
		if _, err := NewConsumer(p); err == nil {
			t.Errorf("NewConsumer(%+v) succeeded", p)
		}
	}
}

func equalConsumer(a, b Consumer) bool {
	if len(a.Streams) != len(b.Streams) {
		return false
	}
	for i := range a.Streams {
		if a.Streams[i] != b.Streams[i] {
			return false
		}
	}
	a.Streams, b.Streams = nil, nil
	return a.ID == b.ID && a.SubscriptionID == b.SubscriptionID && a.PrimaryStream == b.PrimaryStream &&
		a.State == b.State && a.Epoch == b.Epoch && a.WakeID == b.WakeID && a.Attempts == b.Attempts &&
		a.WakingDeadline.Equal(b.WakingDeadline) && a.NextRetryAt.Equal(b.NextRetryAt) &&
		a.LivenessDeadline.Equal(b.LivenessDeadline) && a.FailingSince.Equal(b.FailingSince) &&
		a.StalledWakes == b.StalledWakes && a.StalledSince.Equal(b.StalledSince)
}

func TestCompareOffsets(t *testing.T) {
	t.Parallel()
	m := machine()
	tests := []struct {
		a, b string
		want int
	}{
		{OffsetStart, OffsetStart, 0},
		{OffsetStart, start, -1},
		{start, OffsetStart, 1},
		{OffsetStart, off(1), -1},
		{off(1), OffsetStart, 1},
		{off(1), off(2), -1},
		{off(2), off(2), 0},
		{off(10_000_000_000_000_000), off(9_999_999_999_999_999), 1},
	}
	for _, tt := range tests {
		if got := m.CompareOffsets(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareOffsets(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestConsumerHelpers(t *testing.T) {
	t.Parallel()
	c := live()
	if got := c.NextDeadline(); !got.Equal(t0.Add(LivenessTimeout)) {
		t.Errorf("NextDeadline of a LIVE consumer = %v", got)
	}
	c = with(waking(), func(c *Consumer) { c.NextRetryAt = t0.Add(time.Second) })
	if got := c.NextDeadline(); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("NextDeadline = %v, want the earliest deadline", got)
	}
	c = idle()
	if got := c.NextDeadline(); !got.IsZero() {
		t.Errorf("NextDeadline of an IDLE consumer = %v, want zero", got)
	}
	if got := c.Paths(); len(got) != 2 || got[0] != pA || got[1] != pB {
		t.Errorf("Paths = %v", got)
	}
	empty := Consumer{}
	if got := empty.StreamOffsets(); got == nil {
		t.Error("StreamOffsets of no streams is nil; it must encode as []")
	}
	if _, ok := c.Stream(pD); ok {
		t.Error("Stream found a stream the consumer is not subscribed to")
	}
	for _, s := range []State{StateIdle, StateWaking, StateLive} {
		if !s.Valid() {
			t.Errorf("%s is not valid", s)
		}
	}
	if State("").Valid() {
		t.Error("the empty state is valid")
	}
}

func TestUnknownEventType(t *testing.T) {
	t.Parallel()
	type other struct{ Event }
	_, _, err := machine().Decide(idle(), other{}, t0)
	if err == nil || errors.Is(err, ErrInvalidRequest) {
		t.Errorf("unknown event: err = %v", err)
	}
}
