package e2e

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// scenarioSeed replays a failed randomised scenario: go test ./e2e -run
// TestScenario -scenario.seed=N.
var scenarioSeed = flag.Uint64("scenario.seed", 0, "seed of TestScenario's random walks (0: a new one)")

// Bounds of the random walks, so the scenario takes seconds.
const (
	scnWalks      = 4
	scnWalkSteps  = 25
	scnWalkBudget = 40 * time.Second
)

// scnRows are the rows of the specification's consumer transition table
// and its safety and liveness properties: TestScenario fails unless each
// was checked at least once.
var scnRows = []string{
	"IDLE→WAKING pending work",
	"IDLE→WAKING new matching stream",
	"WAKING→LIVE webhook 2xx",
	"WAKING→LIVE callback claims wake_id",
	"WAKING→IDLE webhook {done: true} without pending work",
	"WAKING→WAKING failed delivery retried (same epoch and wake id)",
	"LIVE→IDLE done without pending work",
	"LIVE→WAKING done with pending work",
	"Any→Removed primary stream deleted",
	"Any→Removed subscription deleted",
	"Any→Removed unsubscribe all",
	"wake batching: no wake while WAKING or LIVE",
	"existing streams: IDLE, woken only by new events",
	"dynamic subscribe starts at the tail",
	"dynamic unsubscribe",
	"keep-alive callback",
	"INVALID_OFFSET ack beyond the tail",
	"S1 epoch monotonicity",
	"S2 wake id uniqueness",
	"S3 idempotent claim",
	"S3 other wake_id ALREADY_CLAIMED",
	"S4 offset monotonicity",
	"S5 token present",
	"S6 stale epoch rejection (stale token)",
	"S6 stale epoch rejection (current token)",
	"S7 gone after delete",
	"S8 signature presence",
	"L1 pending work causes wake",
	"L2 done without pending reaches IDLE",
	"L3 done with pending causes re-wake",
}

// TestScenario drives the real binary through every row of the consumer
// transition table of docs/subscriptions.md and checks
// its safety (S1-S8) and liveness (L1-L3) properties: first a fixed walk
// that visits each row, then seeded random walks of appends, acks,
// subscribes, unsubscribes, keep-alives and dones. After every step it
// compares a model of the consumer with Herald's state read over HTTP: the
// consumers-by-state gauge (one consumer at a time), stream tails, the
// streams and offsets of callback replies, and the wakes a real receiver
// gets. The timers (10 s WAKING, 45 s liveness) run in parallel in
// TestScenarioTimers.
func TestScenario(t *testing.T) {
	seed := *scenarioSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with: go test ./e2e -run 'TestScenario$' -scenario.seed=%d", seed)
		}
	})
	t.Parallel()
	srv := startHerald(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")
	rc := newScnReceiver(t)
	covered := map[string]int{}
	n := 0
	// world starts the model of a new consumer, of a new subscription, once
	// the previous part's consumers are gone; its subscription is deleted
	// when the part ends, so a failed part does not disturb the next.
	world := func(t *testing.T) *scnWorld {
		n++
		w := newScnWorld(t, srv, rc, rand.New(rand.NewPCG(seed, uint64(n))), covered)
		w.newConsumer(fmt.Sprintf("scn%d", n), fmt.Sprintf("/scn%d/*", n), fmt.Sprintf("/scn%d/p", n))
		w.state = scnRemoved
		w.waitState("no consumer left by the previous part")
		w.state = scnIdle
		rc.expect()
		for len(rc.wakes) > 0 {
			<-rc.wakes
		}
		t.Cleanup(func() {
			if _, _, err := tryDo(context.Background(), "DELETE", srv.base+w.pattern+"?subscription="+w.sub, nil, ""); err != nil {
				t.Errorf("deleting the subscription: %v", err)
			}
		})
		return w
	}

	t.Run("fixed walk", func(t *testing.T) { fixedWalk(world(t)) })
	t.Run("removal in each state", func(t *testing.T) { removals(world(t)) })
	t.Run("new empty matching stream wakes at once", func(t *testing.T) { newEmptyStream(world(t)) })
	t.Run("re-created subscription refuses old tokens", func(t *testing.T) { recreated(world(t)) })
	start := time.Now()
	for i := 0; i < scnWalks && time.Since(start) < scnWalkBudget; i++ {
		t.Run(fmt.Sprintf("random walk %d", i), func(t *testing.T) { randomWalk(world(t)) })
	}

	var missing []string
	for _, row := range scnRows {
		if covered[row] == 0 {
			missing = append(missing, row)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("rows and properties never checked: %q", missing)
	}
	t.Logf("checked: %v", covered)
}

// side returns the path of a secondary stream of the world's consumer,
// which matches no subscription.
func (w *scnWorld) side(name string) string {
	return strings.TrimSuffix(w.primary, "/p") + "-side/" + name
}

// fixedWalk visits each row in order.
func fixedWalk(w *scnWorld) {
	// A stream that exists before the subscription: its consumer is IDLE
	// and woken only by a new event.
	w.write(w.primary, "before")
	w.newConsumer(w.sub, w.pattern, w.primary)
	w.createSubscription()
	w.waitState("subscription over an existing stream")
	w.noWake("subscription over an existing stream")
	w.cover("existing streams: IDLE, woken only by new events")

	// A failed delivery is retried with the same epoch and wake id, then
	// 2xx: LIVE.
	w.appendTo(w.primary, scnAnswerFail)
	w.probeClaims()
	w.keepAlive()
	w.subscribe(w.side("a")) // does not exist yet
	w.write(w.side("b"), "b0")
	w.subscribe(w.side("b"))
	w.appendTo(w.side("b"), scnAnswerLive) // LIVE: batched, no wake
	w.ackTo(w.primary, w.tail(w.primary))
	w.ackBelow(w.primary)
	w.ackBeyond(w.primary)
	w.ackTo(w.side("b"), w.tail(w.side("b")))
	// Done without pending work: IDLE (L2), woken again by an append
	// to a secondary stream (L1), this time claimed by a callback first.
	w.done(false, scnAnswerLive)
	w.appendTo(w.side("a"), scnAnswerHold)
	w.stale()
	w.unsubscribe(w.side("b"))
	// Done with pending work: a new wake at once (L3), answered with a
	// synchronous done.
	w.done(false, scnAnswerDone)
	w.appendTo(w.primary, scnAnswerLive)
	w.stale()
	w.unsubscribe(w.primary)
	w.unsubscribe(w.side("a")) // the last: removed
}

// removals removes consumers in each state: IDLE (primary stream
// deleted), LIVE (unsubscribed from every stream, in fixedWalk), WAKING
// (subscription deleted while its deliveries fail).
func removals(w *scnWorld) {
	w.createSubscription()
	w.appendTo(w.primary, scnAnswerLive) // created after the subscription, with data
	w.done(true, scnAnswerLive)
	w.deletePrimary()

	w.newConsumer(w.sub, w.pattern, w.primary)
	w.rc.expect(scnAnswerFail, scnAnswerFail, scnAnswerFail, scnAnswerFail, scnAnswerFail, scnAnswerFail, scnAnswerFail)
	w.write(w.primary, "work")
	w.cover("IDLE→WAKING new matching stream")
	w.checkWake(w.nextWake("failing deliveries"), "failing deliveries")
	w.state = scnWaking
	w.waitState("failing deliveries keep it WAKING")
	w.deleteSubscription()
}

// newEmptyStream: a stream created empty after the subscription is
// pending work from its first offset: its consumer is woken at once.
func newEmptyStream(w *scnWorld) {
	w.createSubscription()
	w.rc.expect(scnAnswerLive)
	w.write(w.primary, "")
	wk := w.nextWake("a new, empty matching stream")
	w.cover("IDLE→WAKING new matching stream")
	w.checkWake(wk, "a new, empty matching stream")
	w.state = scnLive
	w.waitState("a new, empty matching stream")
}

// recreated: once a subscription is deleted and created again with the
// same id, its new consumer of the same stream (same consumer id) refuses
// the tokens of the old one, even of the same epoch.
func recreated(w *scnWorld) {
	w.createSubscription()
	w.appendTo(w.primary, scnAnswerLive)
	oldToken, oldEpoch := w.token, w.epoch
	w.deleteSubscription()

	w.newConsumer(w.sub, w.pattern, w.primary)
	w.createSubscription()
	w.waitState("re-created over the existing stream")
	w.appendTo(w.primary, scnAnswerLive)
	if w.epoch != oldEpoch {
		w.t.Fatalf("the new consumer's epoch is %d, want %d to test the old token", w.epoch, oldEpoch)
	}
	if r := w.send(oldToken, oldEpoch, map[string]any{"done": true}); r.OK || r.Status == http.StatusOK {
		w.t.Fatalf("the deleted subscription's token was accepted by the re-created one: %d", r.Status)
	}
	w.waitState("an old token changes nothing")
	w.ok(nil, "the new consumer's own token")
}

// randomWalk runs one seeded random sequence of steps on a new consumer.
func randomWalk(w *scnWorld) {
	if w.rng.IntN(2) == 0 {
		w.write(w.primary, "before")
		w.newConsumer(w.sub, w.pattern, w.primary)
		w.createSubscription()
		w.waitState("existing primary")
		w.cover("existing streams: IDLE, woken only by new events")
	} else {
		// The consumer is spawned by its primary stream: until that
		// exists there is none, so the walk starts by creating it (a new
		// matching stream, woken at once).
		w.createSubscription()
		w.appendTo(w.primary, w.randomAnswer())
	}
	sides := []string{w.side("a"), w.side("b")}
	for step := 0; step < scnWalkSteps && w.state != scnRemoved; step++ {
		path := w.primary
		if w.rng.IntN(3) == 0 {
			path = sides[w.rng.IntN(len(sides))]
		}
		live := w.state == scnLive
		switch k := w.rng.IntN(10); {
		case k < 3:
			w.appendTo(path, w.randomAnswer())
		case k == 3 && live:
			w.keepAlive()
		case k == 4 && live:
			if s := w.subscribed(); len(s) > 0 {
				p := s[w.rng.IntN(len(s))]
				switch w.rng.IntN(3) {
				case 0:
					w.ackBelow(p)
				case 1:
					w.ackBeyond(p)
				default:
					w.ackRandom(p)
				}
			}
		case k == 5 && live:
			w.subscribe(path)
		case k == 6 && live && w.rng.IntN(3) == 0:
			s := w.subscribed()
			w.unsubscribe(s[w.rng.IntN(len(s))])
		case k == 7 && live:
			w.done(w.rng.IntN(2) == 0, w.randomAnswer())
		case k == 8 && live:
			w.probeClaims()
		case k == 9:
			w.stale()
		}
	}
	if w.state == scnRemoved {
		return
	}
	switch w.rng.IntN(3) {
	case 0:
		w.deletePrimary()
	case 1:
		w.deleteSubscription()
	default:
		if w.state != scnLive {
			w.deleteSubscription()
			return
		}
		for _, p := range w.subscribed() {
			w.unsubscribe(p)
		}
	}
}

// scnAnswerHold answers the next wake 200 {} but claims it by callback
// first, in the test's own steps (WAKING → LIVE by the claim).
const scnAnswerHold = scnAnswerHang + 1

func (w *scnWorld) randomAnswer() scnAnswer {
	switch w.rng.IntN(6) {
	case 0:
		return scnAnswerDone
	case 1:
		return scnAnswerFail
	case 2:
		return scnAnswerHold
	default:
		return scnAnswerLive
	}
}

// appendTo writes to a stream. A consumer that is IDLE and subscribed to
// it is woken (L1), answered with answer; one WAKING or LIVE is not (wake
// batching).
func (w *scnWorld) appendTo(path string, answer scnAnswer) {
	w.t.Helper()
	w.t.Logf("append %s (%s)", path, w.state)
	_, subscribed := w.acked[path]
	wakes := subscribed && w.state == scnIdle
	_, existed := w.tails[path]
	switch {
	case !wakes:
		w.rc.expect()
	case answer == scnAnswerFail:
		w.rc.expect(scnAnswerFail, scnAnswerLive)
	case answer == scnAnswerHold:
		w.rc.expect(scnAnswerHang)
	default:
		w.rc.expect(answer)
	}
	w.write(path, fmt.Sprintf("event %d", len(w.bounds[path])))
	if !wakes {
		if subscribed && w.state != scnRemoved {
			w.cover("wake batching: no wake while WAKING or LIVE")
		}
		w.waitState("append without a wake")
		w.noWake("append without a wake")
		return
	}
	w.cover("IDLE→WAKING pending work")
	w.cover("L1 pending work causes wake")
	if !existed && path == w.primary {
		w.cover("IDLE→WAKING new matching stream")
	}
	if answer == scnAnswerHold {
		w.claimHeldWake("append")
		return
	}
	w.wake(answer, "append to "+path)
}

// claimHeldWake takes a wake whose delivery hangs and claims it with a
// callback: WAKING → LIVE by the claim. The delivery is then released.
func (w *scnWorld) claimHeldWake(why string) {
	w.t.Helper()
	wk := w.nextWake(why)
	w.checkWake(wk, why)
	w.state = scnWaking
	w.waitState(why + ": delivery not answered yet")
	w.state = scnLive
	w.ok(map[string]any{"wake_id": w.wakeID}, why+": claim")
	w.cover("WAKING→LIVE callback claims wake_id")
	w.waitState(why + ": claimed")
	w.rc.releaseOne()
}

// keepAlive sends {epoch}: it succeeds and changes nothing.
func (w *scnWorld) keepAlive() {
	w.t.Helper()
	w.t.Log("keep-alive")
	w.ok(nil, "keep-alive")
	w.cover("keep-alive callback")
	w.waitState("keep-alive")
}

// probeClaims claims the current wake again (idempotent, S3) and another
// wake id (ALREADY_CLAIMED, S3).
func (w *scnWorld) probeClaims() {
	w.t.Helper()
	w.t.Log("claims")
	w.ok(map[string]any{"wake_id": w.wakeID}, "claiming the current wake again")
	w.cover("S3 idempotent claim")
	w.refused(w.token, w.epoch, map[string]any{"wake_id": "w_not_this_one"}, http.StatusConflict, "ALREADY_CLAIMED", "claiming another wake id")
	w.cover("S3 other wake_id ALREADY_CLAIMED")
	w.waitState("claims")
}

// stale sends callbacks of the previous epoch: STALE_EPOCH with that
// epoch's token and with the current token (S6).
func (w *scnWorld) stale() {
	w.t.Helper()
	if w.epoch < 2 || w.state == scnRemoved {
		return
	}
	w.t.Log("stale epoch")
	prev := w.epoch - 1
	w.refused(w.oldTokens[prev], prev, map[string]any{"done": true}, http.StatusConflict, "STALE_EPOCH", "S6: the previous epoch with its token")
	w.cover("S6 stale epoch rejection (stale token)")
	w.refusedOrError(w.token, prev, map[string]any{"done": true}, http.StatusConflict, "STALE_EPOCH", "S6: the previous epoch with the current token")
	w.cover("S6 stale epoch rejection (current token)")
	w.waitState("stale callbacks change nothing")
}

// subscribe adds a stream, from its current tail.
func (w *scnWorld) subscribe(path string) {
	w.t.Helper()
	w.t.Logf("subscribe %s", path)
	if _, ok := w.acked[path]; !ok {
		w.acked[path] = w.tail(path)
	}
	w.ok(map[string]any{"subscribe": []string{path}}, "subscribe "+path)
	w.cover("dynamic subscribe starts at the tail")
	w.waitState("subscribe")
}

// unsubscribe drops a stream; the last one removes the consumer.
func (w *scnWorld) unsubscribe(path string) {
	w.t.Helper()
	w.t.Logf("unsubscribe %s", path)
	delete(w.acked, path)
	if len(w.acked) > 0 {
		w.ok(map[string]any{"unsubscribe": []string{path}}, "unsubscribe "+path)
		w.cover("dynamic unsubscribe")
		w.waitState("unsubscribe")
		return
	}
	r := w.send(w.token, w.epoch, map[string]any{"unsubscribe": []string{path}})
	if r.Status != http.StatusOK || !r.OK || r.Token == "" || len(r.Streams) != 0 {
		w.t.Fatalf("unsubscribe from the last stream: %d %s %v, want 200 with no streams", r.Status, r.Error.Code, r.Streams)
	}
	w.removed("unsubscribe all")
	w.cover("Any→Removed unsubscribe all")
}

// removed checks a removed consumer: gone from Herald's state, and every
// callback of it 410 CONSUMER_GONE at once.
func (w *scnWorld) removed(why string) {
	w.t.Helper()
	if w.epoch > 0 {
		w.refusedOrError(w.token, w.epoch, nil, http.StatusGone, "CONSUMER_GONE", why+": the next callback")
	}
	w.state = scnRemoved
	w.waitState(why)
	w.noWake(why)
}

// ackTo acks a stream at offset (at most its tail).
func (w *scnWorld) ackTo(path, offset string) {
	w.t.Helper()
	w.t.Logf("ack %s at %s", path, offset)
	if scnLess(w.acked[path], offset) {
		w.acked[path] = offset
	}
	w.ok(map[string]any{"acks": []map[string]string{{"path": path, "offset": offset}}}, "ack "+path)
	w.waitState("ack")
}

// ackRandom acks a stream at one of the offsets between its appends.
func (w *scnWorld) ackRandom(path string) {
	b := w.bounds[path]
	if len(b) == 0 {
		return
	}
	w.ackTo(path, b[w.rng.IntN(len(b))])
}

// ackBelow acks below the acked offset: accepted, and the offset does
// not go back (S4).
func (w *scnWorld) ackBelow(path string) {
	w.t.Helper()
	i := slices.Index(w.bounds[path], w.acked[path])
	if i < 1 {
		return
	}
	w.ackTo(path, w.bounds[path][i-1])
}

// ackBeyond acks past the tail: 409 INVALID_OFFSET, and nothing in the
// request is applied (callbacks are atomic).
func (w *scnWorld) ackBeyond(path string) {
	w.t.Helper()
	w.t.Logf("ack %s beyond its tail", path)
	w.refused(w.token, w.epoch, map[string]any{"acks": []map[string]string{{"path": path, "offset": beyond(w.tail(path))}}, "done": true},
		http.StatusConflict, "INVALID_OFFSET", "ack beyond the tail")
	w.cover("INVALID_OFFSET ack beyond the tail")
	w.waitState("ack beyond the tail")
	w.ok(nil, "after a refused ack")
}

// done ends the wake, first acking every stream to its tail when ackAll:
// IDLE without pending work (L2), a new wake with it (L3).
func (w *scnWorld) done(ackAll bool, answer scnAnswer) {
	w.t.Helper()
	w.t.Logf("done (ack all %v)", ackAll)
	fields := map[string]any{"done": true}
	if ackAll {
		var acks []map[string]string
		for _, p := range w.subscribed() {
			if _, ok := w.tails[p]; ok {
				acks = append(acks, map[string]string{"path": p, "offset": w.tails[p]})
				w.acked[p] = w.tails[p]
			}
		}
		fields["acks"] = acks
	}
	pending := w.pending()
	switch {
	case !pending:
		w.rc.expect()
	case answer == scnAnswerFail:
		w.rc.expect(scnAnswerFail, scnAnswerLive)
	case answer == scnAnswerHold:
		w.rc.expect(scnAnswerHang)
	default:
		w.rc.expect(answer)
	}
	w.state = scnIdle
	w.ok(fields, "done")
	if !pending {
		w.cover("LIVE→IDLE done without pending work")
		w.cover("L2 done without pending reaches IDLE")
		w.waitState("done without pending work")
		w.noWake("done without pending work")
		return
	}
	w.cover("LIVE→WAKING done with pending work")
	w.cover("L3 done with pending causes re-wake")
	if answer == scnAnswerHold {
		w.claimHeldWake("done with pending work")
		return
	}
	w.wake(answer, "done with pending work")
}

// deletePrimary deletes the primary stream: the consumer is gone before
// the DELETE answers (S7).
func (w *scnWorld) deletePrimary() {
	w.t.Helper()
	w.t.Log("delete the primary stream")
	w.deleteStream(w.primary)
	w.removed("primary stream deleted")
	w.cover("Any→Removed primary stream deleted")
	w.cover("S7 gone after delete")
}

// deleteSubscription deletes the subscription: its consumers are gone
// before the DELETE answers (S7).
func (w *scnWorld) deleteSubscription() {
	w.t.Helper()
	w.t.Logf("delete the subscription (%s)", w.state)
	w.deleteSubscriptionQuiet()
	w.removed("subscription deleted")
	w.cover("Any→Removed subscription deleted")
	w.cover("S7 gone after delete")
}

func (w *scnWorld) deleteSubscriptionQuiet() {
	w.t.Helper()
	if resp, body := do(w.t, "DELETE", w.srv.base+w.pattern+"?subscription="+w.sub, nil, ""); resp.StatusCode != http.StatusNoContent {
		w.t.Fatalf("DELETE subscription: %d %s", resp.StatusCode, body)
	}
}
