package e2e

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestScenarioTimers checks the two timer rows of the transition table on
// the real binary, in parallel with TestScenario: an unanswered delivery
// is sent again after the 10 s WAKING timeout, with the same epoch and
// wake id; a LIVE consumer with no callback for 45 s goes IDLE, and is not
// woken when it has no pending work.
func TestScenarioTimers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: waits out the real 10 s and 45 s timers; the subscription engine's fake-clock tests " +
			"(TestEngineWakingTimeout, TestEngineLiveUntilLivenessTimeout) cover the rows; run without -short for this one")
	}
	const (
		wakingTimeout   = 10 * time.Second
		livenessTimeout = 45 * time.Second
		// slack covers the retry's jitter (up to 1.2 s for the first
		// retry) and the timers' granularity.
		slack = 5 * time.Second
	)
	srv := startHerald(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")
	rc := newScnReceiver(t)
	covered := map[string]int{}
	w := newScnWorld(t, srv, rc, rand.New(rand.NewPCG(1, 1)), covered)
	w.newConsumer("timers", "/timers/*", "/timers/p")
	w.createSubscription()

	// WAKING → WAKING: no 2xx and no callback within 10 s.
	rc.expect(scnAnswerHang, scnAnswerLive)
	w.write(w.primary, "work")
	first := w.nextWake("new stream")
	w.checkWake(first, "new stream")
	w.state = scnWaking
	w.waitState("delivery unanswered")
	var retry scnWake
	select {
	case retry = <-rc.wakes:
	case <-time.After(wakingTimeout + slack):
		t.Fatalf("no retry within %v of an unanswered delivery\n%s", wakingTimeout+slack, srv.logs)
	}
	if gap := retry.at.Sub(first.at); gap < wakingTimeout {
		t.Fatalf("retried %v after an unanswered delivery, before the WAKING timeout", gap)
	}
	if retry.Epoch != first.Epoch || retry.WakeID != first.WakeID || !retry.signed {
		t.Fatalf("S2: the retry has epoch %d wake id %s (signed %v), want %d %s", retry.Epoch, retry.WakeID, retry.signed, first.Epoch, first.WakeID)
	}
	w.token = retry.Token
	rc.releaseOne()
	w.state = scnLive
	w.waitState("retry answered 2xx")

	// LIVE → IDLE: 45 s after the last callback. The clock starts before
	// the callback is sent: Herald times the liveness from the moment it
	// takes the callback, which is no earlier than this.
	last := time.Now()
	w.ackTo(w.primary, w.tail(w.primary))
	for {
		state, err := w.states()
		if err != nil {
			t.Fatal(err)
		}
		if state == scnIdle {
			break
		}
		if state != scnLive || time.Since(last) > livenessTimeout+slack {
			t.Fatalf("%v after the last callback the consumer is %s, want LIVE until %v then IDLE\n%s", time.Since(last), state, livenessTimeout, srv.logs)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if idle := time.Since(last); idle < livenessTimeout {
		t.Fatalf("IDLE %v after the last callback, before the liveness timeout", idle)
	}
	w.state = scnIdle
	w.noWake("liveness timeout without pending work")
}
