package subscription

import (
	"testing"
	"time"
)

// The rule of Consumer.Stuck, with the time given.
func TestConsumerStuck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		wakes  int
		since  time.Time
		now    time.Time
		stuck  bool
		reason string
	}{
		{name: "never woken", now: t0},
		{name: "one wake in progress", wakes: 1, since: t0, now: t0.Add(time.Second)},
		{name: "one wake short of the threshold", wakes: StuckWakes - 1, since: t0, now: t0.Add(time.Hour)},
		{name: "at the threshold", wakes: StuckWakes, since: t0, now: t0.Add(9 * time.Second),
			stuck: true, reason: "woken 10 times in 9 s without an ack"},
		{name: "a minute of wakes", wakes: 60, since: t0, now: t0.Add(60*time.Second + 400*time.Millisecond),
			stuck: true, reason: "woken 60 times in 60 s without an ack"},
		{name: "minutes", wakes: 40, since: t0, now: t0.Add(45 * time.Minute),
			stuck: true, reason: "woken 40 times in 45 min without an ack"},
		{name: "hours", wakes: 400, since: t0, now: t0.Add(5*time.Hour + 59*time.Minute),
			stuck: true, reason: "woken 400 times in 5 h without an ack"},
		{name: "a clock behind the first wake", wakes: StuckWakes, since: t0, now: t0.Add(-time.Second),
			stuck: true, reason: "woken 10 times in 0 s without an ack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Consumer{StalledWakes: tt.wakes, StalledSince: tt.since}
			reason, stuck := c.Stuck(tt.now)
			if stuck != tt.stuck || reason != tt.reason {
				t.Fatalf("Stuck(%v) = %q, %v; want %q, %v", tt.now, reason, stuck, tt.reason, tt.stuck)
			}
		})
	}
}

// The state machine counts the wake cycles that start without an ack
// advancing, and clears the count when an ack advances (by callback or
// synchronous done) or when nothing is left to do.
func TestStalledWakesCount(t *testing.T) {
	t.Parallel()
	m := machine()
	decide := func(c Consumer, ev Event, now time.Time) Consumer {
		t.Helper()
		next, _, err := m.Decide(c, ev, now)
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	// A consumer that claims each wake and says done without acking,
	// while pA has events: every done starts the next wake at once.
	c := decide(idle(), TailsChanged{Tails: tails(12, 5)}, t0)
	for i := 1; i < StuckWakes; i++ {
		if c.StalledWakes != i || !c.StalledSince.Equal(t0) {
			t.Fatalf("after wake %d: StalledWakes %d since %v", i, c.StalledWakes, c.StalledSince)
		}
		if _, stuck := c.Stuck(t0.Add(time.Duration(i) * time.Second)); stuck {
			t.Fatalf("stuck after %d wakes", i)
		}
		c = decide(c, cb(CallbackRequest{Epoch: c.Epoch, WakeID: c.WakeID, Done: true}, tails(12, 5)),
			t0.Add(time.Duration(i)*time.Second))
	}
	reason, stuck := c.Stuck(t0.Add(10 * time.Second))
	if !stuck || reason != "woken 10 times in 10 s without an ack" {
		t.Fatalf("after %d wakes without an ack: %q, %v", c.StalledWakes, reason, stuck)
	}

	// An ack that advances clears it; the done then starts a new count.
	acked := decide(c, cb(CallbackRequest{Epoch: c.Epoch, WakeID: c.WakeID,
		Acks: []StreamOffset{{Path: pA, Offset: off(11)}}, Done: true}, tails(12, 5)), t0.Add(11*time.Second))
	if acked.StalledWakes != 1 || !acked.StalledSince.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("after an ack and a new wake: StalledWakes %d since %v", acked.StalledWakes, acked.StalledSince)
	}
	// An ack that does not advance (a repeat) clears nothing.
	repeat := decide(c, cb(CallbackRequest{Epoch: c.Epoch, WakeID: c.WakeID,
		Acks: []StreamOffset{{Path: pA, Offset: off(10)}}}, tails(12, 5)), t0.Add(11*time.Second))
	if repeat.StalledWakes != StuckWakes {
		t.Fatalf("a repeated ack cleared the count: %d", repeat.StalledWakes)
	}
	// A synchronous done acks to the notified tails: progress.
	sync := decide(c, WebhookResult{Epoch: c.Epoch, WakeID: c.WakeID, Attempt: c.Attempts, Delivered: true, Done: true, Tails: tails(12, 5)},
		t0.Add(11*time.Second))
	if sync.StalledWakes != 0 || sync.State != StateIdle {
		t.Fatalf("after a synchronous done: %s, StalledWakes %d", sync.State, sync.StalledWakes)
	}
	// Done with nothing pending: caught up, not stuck.
	caughtUp := decide(c, cb(CallbackRequest{Epoch: c.Epoch, WakeID: c.WakeID, Done: true}, tails(10, 5)),
		t0.Add(11*time.Second))
	if caughtUp.StalledWakes != 0 || !caughtUp.StalledSince.IsZero() || caughtUp.State != StateIdle {
		t.Fatalf("caught up: %s, StalledWakes %d since %v", caughtUp.State, caughtUp.StalledWakes, caughtUp.StalledSince)
	}
}
