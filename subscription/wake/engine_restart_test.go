package wake

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/subscription"
)

// TestEngineRestart: subscriptions, consumers, epochs, wake ids, offsets
// and deadlines are in the store; after a restart the timers resume where
// they were: a consumer whose liveness expired while Herald was down goes
// IDLE (and, with unacked events, wakes again), a retry that fell due
// fires at once with the same wake id, and tokens issued before still
// verify.
func TestEngineRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook1 := &receiver{}
		hook1.setReply(func(p subscription.WakePayload, _ *http.Request) (int, string) {
			if p.PrimaryStream == "/agents/failing" {
				return http.StatusServiceUnavailable, ""
			}
			return http.StatusOK, "{}"
		})
		r1 := newRig(t, dir, hook1)
		secret := r1.subscribe("sub", "/agents/*")
		r1.createStream("/agents/live", "abc")
		r1.createStream("/agents/failing", "abc")
		r1.createStream("/agents/idle", "abc")
		synctest.Wait()
		live, failing, idle := subscription.ConsumerID("sub", "/agents/live"), subscription.ConsumerID("sub", "/agents/failing"), subscription.ConsumerID("sub", "/agents/idle")
		// Process /agents/idle completely: ack and done.
		var idleTok, liveTok, failingWake string
		for _, w := range hook1.wakes() {
			switch w.Payload.ConsumerID {
			case idle:
				idleTok = w.Payload.Token
			case live:
				liveTok = w.Payload.Token
			case failing:
				failingWake = w.Payload.WakeID
			}
		}
		r1.mustCallback(idle, idleTok, body(subscription.CallbackRequest{Epoch: 1, Done: true,
			Acks: []subscription.StreamOffset{{Path: "/agents/idle", Offset: protocol.FormatOffset(3)}}}))
		before := map[string]int64{}
		for _, id := range []string{live, failing, idle} {
			before[id] = r1.consumer(id).Epoch
		}
		if s := r1.consumer(live).State; s != "LIVE" {
			t.Fatalf("live consumer is %s", s)
		}
		if s := r1.consumer(failing).State; s != "WAKING" {
			t.Fatalf("failing consumer is %s", s)
		}
		r1.close()

		// Down for two minutes: the liveness timeout and the retry fall due.
		time.Sleep(2 * time.Minute)
		hook2 := &receiver{}
		hook2.setReply(func(subscription.WakePayload, *http.Request) (int, string) { return http.StatusOK, `{"done": true}` })
		r2 := newRig(t, dir, hook2)
		defer r2.close()
		synctest.Wait()

		if _, err := r2.eng.GetSubscription(context.Background(), Platform, "sub"); err != nil {
			t.Fatal(err)
		}
		got := map[string][]subscription.WakePayload{}
		for _, w := range hook2.wakes() {
			got[w.Payload.ConsumerID] = append(got[w.Payload.ConsumerID], w.Payload)
			verifySignature(t, secret, w) // the secret survived
		}
		// The retry of the failing consumer: same epoch and wake id.
		if ws := got[failing]; len(ws) != 1 || ws[0].Epoch != before[failing] || ws[0].WakeID != failingWake {
			t.Fatalf("failing consumer after restart: %+v (wake %s)", ws, failingWake)
		}
		// The LIVE consumer timed out while down: IDLE, then a new wake
		// for its unacked events.
		if ws := got[live]; len(ws) != 1 || ws[0].Epoch != before[live]+1 || ws[0].Streams[0].Offset != subscription.OffsetStart {
			t.Fatalf("live consumer after restart: %+v", ws)
		}
		// The processed consumer stays asleep with its offset.
		if ws := got[idle]; len(ws) != 0 {
			t.Fatalf("idle consumer woke after restart: %+v", ws)
		}
		c := r2.consumer(idle)
		if c.State != "IDLE" || c.Epoch != before[idle] || c.Streams[0].Acked != protocol.FormatOffset(3) {
			t.Fatalf("idle consumer after restart: %+v", c)
		}
		// A token from before the restart still verifies (it is stale
		// now, which takes a valid signature to tell).
		r2.wantCallbackError(live, liveTok, `{"epoch": 1}`, subscription.CodeStaleEpoch)
	})
}

// TestEngineReconcilesOnStart: an event appended while no engine ran (a
// crash between an append and its wake) wakes its consumer at start.
func TestEngineReconcilesOnStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r1 := newRig(t, dir, hook)
		// Created before the subscription: its consumer waits for events.
		r1.createStream("/agents/a", "")
		r1.subscribe("sub", "/agents/*")
		synctest.Wait()
		tail := r1.appendWithoutEngine("/agents/a", "lost?")
		if n := len(hook.wakes()); n != 0 {
			t.Fatalf("%d wakes without an engine", n)
		}
		r2 := newRig(t, dir, hook)
		defer r2.close()
		synctest.Wait()
		w := hook.wakes()
		if len(w) != 1 || w[0].Payload.Streams[0].Offset != protocol.FormatOffset(0) {
			t.Fatalf("wakes after restart: %+v", w)
		}
		if c := r2.consumer(subscription.ConsumerID("sub", "/agents/a")); c.Streams[0].Notified != tail {
			t.Fatalf("notified %s, want %s", c.Streams[0].Notified, tail)
		}
	})
}

// TestEngineReconcilesSecondaryOnStart: the reconciliation at start also
// covers a stream that a consumer reaches only by a callback subscription
// (outside its subscription's pattern, its primary stream unsubscribed),
// so an event appended there while no engine ran wakes it too. (While the
// primary stream is still subscribed, reconciling it reads the tails of
// all the consumer's streams.)
func TestEngineReconcilesSecondaryOnStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r1 := newRig(t, dir, hook)
		r1.subscribe("sub", "/agents/*")
		r1.createStream("/tools/t", "")
		r1.createStream("/agents/a", "task")
		synctest.Wait()
		id := subscription.ConsumerID("sub", "/agents/a")
		w := hook.wakes()
		if len(w) != 1 {
			t.Fatalf("wakes before the subscribe: %+v", w)
		}
		// Move from the primary stream to /tools/t, and go IDLE.
		r1.mustCallback(id, w[0].Payload.Token, body(subscription.CallbackRequest{Epoch: w[0].Payload.Epoch, Done: true,
			Subscribe: []string{"/tools/t"}, Unsubscribe: []string{"/agents/a"}}))
		synctest.Wait()
		if c := r1.consumer(id); c.State != "IDLE" || len(c.Streams) != 1 || c.Streams[0].Path != "/tools/t" {
			t.Fatalf("consumer after the callback: %+v", c)
		}
		tail := r1.appendWithoutEngine("/tools/t", "lost?")
		if n := len(hook.wakes()); n != 1 {
			t.Fatalf("%d wakes, want the first one only", n)
		}

		r2 := newRig(t, dir, hook)
		defer r2.close()
		synctest.Wait()
		w = hook.wakes()
		if len(w) != 2 || !slices.Equal(w[1].Payload.TriggeredBy, []string{"/tools/t"}) {
			t.Fatalf("%d wakes after restart, want a second one triggered by /tools/t: %+v", len(w), w[len(w)-1].Payload)
		}
		if c := r2.consumer(id); c.Streams[0].Notified != tail {
			t.Fatalf("consumer after restart: %+v (tail %s)", c, tail)
		}
	})
}
