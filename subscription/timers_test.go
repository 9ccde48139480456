package subscription

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

func TestTimers(t *testing.T) {
	t.Parallel()
	wakingDue := t0.Add(WakingTimeout)
	retryAt := wakingDue.Add(200 * time.Millisecond) // retry 1, no jitter
	awaitingRetry := with(waking(), func(c *Consumer) {
		c.WakingDeadline = time.Time{}
		c.NextRetryAt = retryAt
		c.FailingSince = wakingDue
	})
	resent := with(awaitingRetry, func(c *Consumer) {
		c.Attempts = 2
		c.NextRetryAt = time.Time{}
		c.WakingDeadline = retryAt.Add(WakingTimeout)
	})
	livenessDue := t0.Add(LivenessTimeout)
	processed := with(live(), func(c *Consumer) { c.Streams[0].Acked = off(12) })
	runDecideCases(t, []decideCase{
		// WAKING timeout: 10 s without a 2xx or a callback is a failed
		// attempt, retried with backoff.
		{
			name:    "WAKING timeout schedules retry 1",
			c:       waking(),
			ev:      Tick{Tails: tails(12, 5)},
			now:     wakingDue,
			want:    awaitingRetry,
			effects: []Effect{ArmTimer{Timer: TimerRetry, At: retryAt}},
		},
		{
			name: "nothing happens before the WAKING timeout",
			c:    waking(),
			ev:   Tick{Tails: tails(12, 5)},
			now:  wakingDue.Add(-time.Nanosecond),
			want: waking(),
		},
		{
			name: "a failed delivery schedules the retry at once",
			c:    waking(),
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1},
			now:  t0.Add(time.Second),
			want: with(awaitingRetry, func(c *Consumer) {
				c.NextRetryAt = t0.Add(1200 * time.Millisecond)
				c.FailingSince = t0.Add(time.Second)
			}),
			effects: []Effect{ArmTimer{Timer: TimerRetry, At: t0.Add(1200 * time.Millisecond)}},
		},
		{
			name: "the failure of an attempt already counted by the timeout is ignored",
			c:    awaitingRetry,
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1},
			now:  wakingDue.Add(time.Millisecond),
			want: awaitingRetry,
		},
		{
			name: "the failure of an earlier attempt is ignored",
			c:    resent,
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1},
			now:  retryAt.Add(time.Second),
			want: resent,
		},
		{
			name: "a failed delivery of a claimed wake is ignored",
			c:    live(),
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 1},
			now:  t0.Add(time.Second),
			want: live(),
		},
		// S2: the retry reuses the epoch and the wake id.
		{
			name:    "the retry resends the same wake",
			c:       awaitingRetry,
			ev:      Tick{Tails: tails(14, 5)},
			now:     retryAt,
			want:    resent,
			effects: wakeEffects(resent, 2, retryAt),
		},
		{
			name: "nothing happens before the retry is due",
			c:    awaitingRetry,
			ev:   Tick{Tails: tails(14, 5)},
			now:  retryAt.Add(-time.Nanosecond),
			want: awaitingRetry,
		},
		{
			name: "retry 2 waits 400 ms",
			c:    resent,
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 2},
			now:  retryAt.Add(time.Second),
			want: with(resent, func(c *Consumer) {
				c.WakingDeadline = time.Time{}
				c.NextRetryAt = retryAt.Add(time.Second + 400*time.Millisecond)
			}),
			effects: []Effect{ArmTimer{Timer: TimerRetry, At: retryAt.Add(time.Second + 400*time.Millisecond)}},
		},
		{
			name:    "a WAKING consumer with no deadline sends at once",
			c:       with(waking(), func(c *Consumer) { c.WakingDeadline = time.Time{} }),
			ev:      Tick{Tails: tails(12, 5)},
			now:     t0.Add(time.Second),
			want:    with(waking(), func(c *Consumer) { c.Attempts = 2; c.WakingDeadline = t0.Add(time.Second + WakingTimeout) }),
			effects: wakeEffects(with(waking(), func(c *Consumer) { c.Attempts = 2 }), 2, t0.Add(time.Second)),
		},
		// 3 days of continuous webhook failure remove the consumer.
		{
			name: "failures short of three days keep retrying",
			c:    with(resent, func(c *Consumer) { c.Attempts = 400; c.FailingSince = t0 }),
			ev:   WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 400},
			now:  t0.Add(FailureGCAfter - time.Second),
			want: with(resent, func(c *Consumer) {
				c.Attempts = 400
				c.FailingSince = t0
				c.WakingDeadline = time.Time{}
				c.NextRetryAt = t0.Add(FailureGCAfter - time.Second + 60*time.Second)
			}),
			effects: []Effect{ArmTimer{Timer: TimerRetry, At: t0.Add(FailureGCAfter - time.Second + 60*time.Second)}},
		},
		{
			name:    "three days of failures remove the consumer",
			c:       with(resent, func(c *Consumer) { c.Attempts = 400; c.FailingSince = t0 }),
			ev:      WebhookResult{Epoch: 4, WakeID: "w_cur", Attempt: 400},
			now:     t0.Add(FailureGCAfter),
			want:    with(resent, func(c *Consumer) { c.Attempts = 400; c.FailingSince = t0 }),
			effects: []Effect{Remove{Reason: RemovedWebhookFailing}},
		},
		{
			name:    "a WAKING timeout after three days of failures removes the consumer",
			c:       with(resent, func(c *Consumer) { c.FailingSince = t0 }),
			ev:      Tick{},
			now:     t0.Add(FailureGCAfter + time.Minute),
			want:    with(resent, func(c *Consumer) { c.FailingSince = t0 }),
			effects: []Effect{Remove{Reason: RemovedWebhookFailing}},
		},
		// LIVE → IDLE: 45 s liveness timeout.
		{
			name: "LIVE to IDLE on the liveness timeout",
			c:    processed,
			ev:   Tick{Tails: tails(12, 5)},
			now:  livenessDue,
			want: with(processed, func(c *Consumer) { c.State = StateIdle; c.LivenessDeadline = time.Time{} }),
		},
		{
			name: "nothing happens before the liveness timeout",
			c:    live(),
			ev:   Tick{Tails: tails(12, 5)},
			now:  livenessDue.Add(-time.Nanosecond),
			want: live(),
		},
		{
			// Crash recovery: a consumer that died without acking is woken
			// again (L1).
			name: "the liveness timeout with pending work wakes the consumer again",
			c:    live(),
			ev:   Tick{Tails: tails(12, 5)},
			now:  livenessDue.Add(time.Second),
			want: with(live(), func(c *Consumer) {
				c.State = StateWaking
				c.Epoch = 5
				c.WakeID = wakeZero
				c.LivenessDeadline = time.Time{}
				c.WakingDeadline = livenessDue.Add(time.Second + WakingTimeout)
				c.StalledWakes, c.StalledSince = 1, livenessDue.Add(time.Second)
			}),
			effects: wakeEffects(with(live(), func(c *Consumer) { c.Epoch = 5; c.WakeID = wakeZero }), 1, livenessDue.Add(time.Second)),
		},
		{
			name: "a LIVE consumer without a deadline goes IDLE",
			c:    with(processed, func(c *Consumer) { c.LivenessDeadline = time.Time{} }),
			ev:   Tick{Tails: tails(12, 5)},
			now:  t0,
			want: with(processed, func(c *Consumer) { c.State = StateIdle; c.LivenessDeadline = time.Time{} }),
		},
		{
			name: "a Tick wakes an IDLE consumer with pending work",
			c:    idle(),
			ev:   Tick{Tails: tails(11, 5)},
			now:  t0,
			want: with(waking(), func(c *Consumer) {
				c.WakeID = wakeZero
				c.Streams[0].Notified = off(11)
				c.StalledWakes, c.StalledSince = 1, t0
			}),
			effects: wakeEffects(with(waking(), func(c *Consumer) { c.WakeID = wakeZero; c.Streams[0].Notified = off(11) }), 1, t0),
		},
	})
}

// The retry schedule of docs/subscriptions.md, exactly.
func TestRetryBackoff(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		n            int
		base, jitter time.Duration
	}{
		{0, 200 * ms, time.Second}, // clamped to retry 1
		{1, 200 * ms, time.Second},
		{2, 400 * ms, time.Second},
		{3, 800 * ms, time.Second},
		{4, 1600 * ms, time.Second},
		{5, 3200 * ms, time.Second},
		{6, 6400 * ms, time.Second},
		{7, 12800 * ms, time.Second},
		{8, 25600 * ms, time.Second},
		{9, 30 * time.Second, time.Second},
		{10, 30 * time.Second, time.Second},
		{11, 60 * time.Second, 5 * time.Second},
		{12, 60 * time.Second, 5 * time.Second},
		{1000, 60 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		base, jitter := RetryBackoff(tt.n)
		if base != tt.base || jitter != tt.jitter {
			t.Errorf("RetryBackoff(%d) = %v + up to %v, want %v + up to %v", tt.n, base, jitter, tt.base, tt.jitter)
		}
	}
}

// Jitter comes from Machine.Rand, stays within its bound, and varies.
func TestRetryJitter(t *testing.T) {
	t.Parallel()
	m := &Machine{Rand: rand.NewChaCha8([32]byte{7})}
	for _, n := range []int{1, 5, 10, 11, 50} {
		base, spread := RetryBackoff(n)
		seen := map[time.Duration]bool{}
		for range 50 {
			d, err := m.retryDelay(n)
			if err != nil {
				t.Fatal(err)
			}
			if d < base || d > base+spread {
				t.Fatalf("retry %d waits %v, outside [%v, %v]", n, d, base, base+spread)
			}
			seen[d] = true
		}
		if len(seen) < 40 {
			t.Errorf("retry %d: only %d distinct delays in 50 draws", n, len(seen))
		}
	}
	// The largest draw reaches the top of the range.
	top := &Machine{Rand: bytes.NewReader(bytes.Repeat([]byte{0xff}, 8))}
	d, err := top.retryDelay(11)
	if err != nil {
		t.Fatal(err)
	}
	if d < 60*time.Second || d > 65*time.Second {
		t.Errorf("retry 11 with maximal entropy waits %v", d)
	}
}

// A whole failing wake, driven by ticks as an engine would: every retry
// keeps the epoch and wake id, the delays follow the schedule, and the
// consumer is removed after three days.
func TestRetryLadder(t *testing.T) {
	t.Parallel()
	m := machine()
	now := t0
	c, effects, err := m.Decide(idle(), TailsChanged{Tails: tails(11, 5)}, now)
	if err != nil {
		t.Fatal(err)
	}
	epoch, wakeID := c.Epoch, c.WakeID
	sends := 1
	for step := 0; ; step++ {
		if step > 10_000 {
			t.Fatal("the consumer was never removed")
		}
		if isRemove(effects) {
			break
		}
		now = c.NextDeadline()
		prevAttempts := c.Attempts
		c, effects, err = m.Decide(c, Tick{Tails: tails(11, 5)}, now)
		if err != nil {
			t.Fatal(err)
		}
		if c.Epoch != epoch || c.WakeID != wakeID {
			t.Fatalf("a retry changed the wake: epoch %d wake %s", c.Epoch, c.WakeID)
		}
		for _, e := range effects {
			switch e := e.(type) {
			case SendWake:
				sends++
				if e.Wake.Epoch != epoch || e.Wake.WakeID != wakeID || e.Attempt != sends {
					t.Fatalf("send %d is %+v", sends, e)
				}
			case ArmTimer:
				if e.Timer == TimerRetry {
					base, _ := RetryBackoff(prevAttempts)
					if got := e.At.Sub(now); got != base {
						t.Fatalf("retry %d after %v, want %v", prevAttempts, got, base)
					}
				}
			}
		}
	}
	if elapsed := now.Sub(t0); elapsed < FailureGCAfter || elapsed > FailureGCAfter+2*time.Minute {
		t.Errorf("removed after %v, want about %v", elapsed, FailureGCAfter)
	}
	// A webhook that never answers costs WakingTimeout then 60 s per
	// attempt once the ramp is over: about 3,700 attempts in three days.
	if sends < 3600 || sends > 3800 {
		t.Errorf("%d deliveries in three days", sends)
	}
}
