package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/client"
)

// The helpers of scenario_test.go: a webhook receiver that answers as it
// is told, a model of one consumer as docs/subscriptions.md
// defines it, and the checks that compare Herald's state,
// read over HTTP, with the model.

// scnLatency bounds how long a scenario waits for an effect that is due
// now (a wake, a state change).
const scnLatency = 10 * time.Second

// Consumer states as docs/subscriptions.md names them.
const (
	scnIdle    = "IDLE"
	scnWaking  = "WAKING"
	scnLive    = "LIVE"
	scnRemoved = "removed"
)

// scnAnswer is how the receiver answers one wake delivery.
type scnAnswer int

const (
	scnAnswerLive scnAnswer = iota // 200 {}: the consumer goes LIVE
	scnAnswerDone                  // 200 {"done": true}: synchronous done
	scnAnswerFail                  // 500: Herald retries the delivery
	scnAnswerHang                  // no answer until released: the 10 s WAKING timeout passes
)

// scnWake is one wake delivery the receiver got.
type scnWake struct {
	client.Wake
	signed bool
	at     time.Time
}

// scnReceiver is the consumers' webhook, a real HTTP server on
// 127.0.0.1. It checks each delivery's signature against the
// subscriptions' secrets (S8), answers with the next planned answer
// (200 {} when none is planned) and hands the wake to the test.
type scnReceiver struct {
	t       *testing.T
	url     string
	release chan struct{} // each value ends one hanging answer
	closed  chan struct{} // closed at the end of the test: ends them all

	mu      sync.Mutex
	secrets []string    // guarded by mu
	plan    []scnAnswer // guarded by mu
	wakes   chan scnWake
}

func newScnReceiver(t *testing.T) *scnReceiver {
	rc := &scnReceiver{t: t, wakes: make(chan scnWake, 256), release: make(chan struct{}, 64), closed: make(chan struct{})}
	srv := httptest.NewServer(rc)
	t.Cleanup(func() {
		close(rc.closed)
		srv.Close()
	})
	rc.url = srv.URL + "/hook"
	return rc
}

func (rc *scnReceiver) trust(secret string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secrets = append(rc.secrets, secret)
}

// expect sets the answers of the next deliveries.
func (rc *scnReceiver) expect(answers ...scnAnswer) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.plan = answers
}

// releaseOne ends one hanging answer, now or when it starts.
func (rc *scnReceiver) releaseOne() { rc.release <- struct{}{} }

func (rc *scnReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "unreadable", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	signed := false
	for _, s := range rc.secrets {
		if client.VerifyWakeSignature(s, r.Header.Get(client.WakeSignatureHeader), body, time.Now(), 0) == nil {
			signed = true
		}
	}
	answer := scnAnswerLive
	if len(rc.plan) > 0 {
		answer, rc.plan = rc.plan[0], rc.plan[1:]
	}
	rc.mu.Unlock()
	wake, err := client.ParseWake(body)
	if err != nil {
		rc.t.Errorf("not a wake: %v: %s", err, body)
		http.Error(w, "not a wake", http.StatusBadRequest)
		return
	}
	rc.wakes <- scnWake{Wake: *wake, signed: signed, at: time.Now()}
	switch answer {
	case scnAnswerDone:
		io.WriteString(w, `{"done": true}`)
	case scnAnswerFail:
		http.Error(w, "failing on purpose", http.StatusInternalServerError)
	case scnAnswerHang:
		select {
		case <-rc.release:
		case <-rc.closed:
		}
		http.Error(w, "released", http.StatusServiceUnavailable)
	default:
		io.WriteString(w, "{}")
	}
}

// scnReply is a callback response.
type scnReply struct {
	Status  int
	OK      bool                  `json:"ok"`
	Token   string                `json:"token"`
	Streams []client.StreamOffset `json:"streams"`
	Error   struct {
		Code string `json:"code"`
	} `json:"error"`
}

// scnWorld is one scenario: a running Herald, the receiver, the random
// source, the model of the consumer under test and the coverage of the
// specification's rows and properties.
type scnWorld struct {
	t   *testing.T
	srv *server
	rc  *scnReceiver
	rng *rand.Rand

	covered map[string]int // row or property → times checked

	// The model of the consumer under test (one at a time per Herald, so
	// that the consumers-by-state gauge is its state).
	sub, pattern, primary, consumerID string
	state                             string
	epoch                             int64
	wakeID                            string
	callbackURL, token                string
	acked                             map[string]string // subscribed stream → acked offset
	oldTokens                         map[int64]string  // epoch → a token of that epoch
	wakeIDs                           map[string]bool

	// What the test knows of the streams, model or not.
	tails  map[string]string   // existing stream → tail
	bounds map[string][]string // existing stream → offsets between its appends
}

func newScnWorld(t *testing.T, srv *server, rc *scnReceiver, rng *rand.Rand, covered map[string]int) *scnWorld {
	return &scnWorld{t: t, srv: srv, rc: rc, rng: rng, covered: covered,
		tails: map[string]string{}, bounds: map[string][]string{}}
}

// cover records that a row or property of the specification was checked.
func (w *scnWorld) cover(name string) { w.covered[name]++ }

// scnStart is the offset token of the tail of an empty stream.
const scnStart = "0000000000000000_0000000000000000"

// scnLess orders two offsets of a stream as the specification does:
// tokens are fixed width, so their string order is their stream order,
// and "-1" (nothing processed) comes before every token, the tail of an
// empty stream included: a new stream is pending work from its creation.
func scnLess(a, b string) bool {
	switch {
	case a == b:
		return false
	case a == "-1":
		return true
	case b == "-1":
		return false
	}
	return a < b
}

func (w *scnWorld) tail(path string) string {
	if t, ok := w.tails[path]; ok {
		return t
	}
	return "-1"
}

// pending is the specification's pending work: a subscribed stream whose
// tail is beyond its acked offset.
func (w *scnWorld) pending() bool {
	for p, a := range w.acked {
		if scnLess(a, w.tail(p)) {
			return true
		}
	}
	return false
}

// subscribe starts the model of a new consumer of a subscription created
// with pattern whose primary stream is primary, IDLE before its first
// wake.
func (w *scnWorld) newConsumer(sub, pattern, primary string) {
	w.sub, w.pattern, w.primary = sub, pattern, primary
	w.consumerID = sub + ":" + strings.ReplaceAll(primary, "/", "%2F")
	w.state, w.epoch, w.wakeID, w.token, w.callbackURL = scnIdle, 0, "", "", ""
	// A stream that existed at the subscription is acked to its tail.
	w.acked = map[string]string{primary: w.tail(primary)}
	w.oldTokens = map[int64]string{}
	w.wakeIDs = map[string]bool{}
}

// createSubscription creates the subscription of the model.
func (w *scnWorld) createSubscription() {
	w.t.Helper()
	w.rc.trust(createSubscription(w.t, w.srv.base, w.pattern, w.sub, w.rc.url))
}

// write creates (PUT) or appends to (POST) a text stream and records its
// new tail.
func (w *scnWorld) write(path, data string) {
	w.t.Helper()
	method, want := "POST", http.StatusNoContent
	if _, ok := w.tails[path]; !ok {
		method, want = "PUT", http.StatusCreated
	}
	resp, body := do(w.t, method, w.srv.base+path, map[string]string{"Content-Type": "text/plain"}, data)
	if resp.StatusCode != want {
		w.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, body)
	}
	next := resp.Header.Get("Stream-Next-Offset")
	if next == "" {
		w.t.Fatalf("%s %s: no Stream-Next-Offset", method, path)
	}
	w.tails[path] = next
	w.bounds[path] = append(w.bounds[path], next)
	// The tail, read back, is the one the write answered.
	if resp, _ := do(w.t, "HEAD", w.srv.base+path, nil, ""); resp.Header.Get("Stream-Next-Offset") != next {
		w.t.Fatalf("HEAD %s: tail %q, the write said %q", path, resp.Header.Get("Stream-Next-Offset"), next)
	}
}

// deleteStream deletes a stream.
func (w *scnWorld) deleteStream(path string) {
	w.t.Helper()
	if resp, body := do(w.t, "DELETE", w.srv.base+path, nil, ""); resp.StatusCode != http.StatusNoContent {
		w.t.Fatalf("DELETE %s: %d %s", path, resp.StatusCode, body)
	}
	delete(w.tails, path)
	delete(w.bounds, path)
}

// states reads the consumers-by-state gauge: the state of the consumer
// under test, or scnRemoved when there is none.
func (w *scnWorld) states() (string, error) {
	_, body, err := tryDo(w.t.Context(), "GET", w.srv.base+"/_herald/metrics", nil, "")
	if err != nil {
		return "", err
	}
	found := scnRemoved
	for _, s := range []string{scnIdle, scnWaking, scnLive} {
		prefix := `herald_subscription_consumers{state="` + s + `"} `
		for line := range strings.SplitSeq(body, "\n") {
			v, ok := strings.CutPrefix(line, prefix)
			if !ok {
				continue
			}
			switch v {
			case "0":
			case "1":
				if found != scnRemoved {
					return "", fmt.Errorf("two consumers: %s and %s", found, s)
				}
				found = s
			default:
				return "", fmt.Errorf("%s consumers in %s", v, s)
			}
		}
	}
	return found, nil
}

// waitState waits until Herald's state of the consumer is the model's.
func (w *scnWorld) waitState(why string) {
	w.t.Helper()
	deadline := time.Now().Add(scnLatency)
	for {
		got, err := w.states()
		if err == nil && got == w.state {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s: consumer state %q (%v), want %q\n%s", why, got, err, w.state, w.srv.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noWake checks that no wake arrived that the model did not expect.
func (w *scnWorld) noWake(why string) {
	w.t.Helper()
	select {
	case wk := <-w.rc.wakes:
		w.t.Fatalf("%s: unexpected wake epoch %d (model: %s at epoch %d)", why, wk.Epoch, w.state, w.epoch)
	default:
	}
}

// nextWake returns the next wake delivery.
func (w *scnWorld) nextWake(why string) scnWake {
	w.t.Helper()
	select {
	case wk := <-w.rc.wakes:
		return wk
	case <-time.After(scnLatency):
		w.t.Fatalf("%s: no wake within %v (model: %s at epoch %d)\n%s", why, scnLatency, w.state, w.epoch, w.srv.logs)
		return scnWake{}
	}
}

// checkWake checks a wake against the model: signed (S8), the next epoch
// (S1), a wake id never seen (S2), the acked offsets (S4) and the pending
// streams.
func (w *scnWorld) checkWake(wk scnWake, why string) {
	w.t.Helper()
	if !wk.signed {
		w.t.Fatalf("%s: S8: wake without a valid Webhook-Signature", why)
	}
	w.cover("S8 signature presence")
	if wk.Epoch != w.epoch+1 {
		w.t.Fatalf("%s: S1: wake epoch %d after epoch %d", why, wk.Epoch, w.epoch)
	}
	w.cover("S1 epoch monotonicity")
	if w.wakeIDs[wk.WakeID] || wk.WakeID == "" {
		w.t.Fatalf("%s: S2: wake id %q of a new cycle was used before", why, wk.WakeID)
	}
	w.cover("S2 wake id uniqueness")
	if wk.ConsumerID != w.consumerID || wk.PrimaryStream != w.primary {
		w.t.Fatalf("%s: wake of %s (primary %s), want %s", why, wk.ConsumerID, wk.PrimaryStream, w.consumerID)
	}
	w.checkStreams(wakeOffsets(wk), why+": the wake's streams")
	for _, p := range wk.TriggeredBy {
		if a, ok := w.acked[p]; !ok || !scnLess(a, w.tail(p)) {
			w.t.Fatalf("%s: triggered_by names %s, which has no pending work", why, p)
		}
	}
	w.epoch, w.wakeID, w.token, w.callbackURL = wk.Epoch, wk.WakeID, wk.Token, wk.Callback
	w.wakeIDs[wk.WakeID] = true
	w.oldTokens[wk.Epoch] = wk.Token
}

func wakeOffsets(wk scnWake) []client.StreamOffset {
	out := make([]client.StreamOffset, len(wk.Streams))
	for i, s := range wk.Streams {
		out[i] = client.StreamOffset(s)
	}
	return out
}

// checkStreams compares streams and offsets Herald reported with the
// model's acked offsets (S4: they never go back, as the model's do not).
func (w *scnWorld) checkStreams(got []client.StreamOffset, why string) {
	w.t.Helper()
	have := map[string]string{}
	for _, s := range got {
		have[s.Path] = s.Offset
	}
	if len(have) != len(got) || !mapsEqual(have, w.acked) {
		w.t.Fatalf("%s: streams %v, want %v", why, got, w.acked)
	}
	w.cover("S4 offset monotonicity")
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// wake expects the consumer, IDLE with pending work or LIVE and done with
// pending work, to be woken with the next epoch, answered as planned.
func (w *scnWorld) wake(answer scnAnswer, why string) {
	w.t.Helper()
	wk := w.nextWake(why)
	w.checkWake(wk, why)
	switch answer {
	case scnAnswerFail:
		// The retry of the same cycle: same epoch and wake id (S2).
		re := w.nextWake(why + ": retry after a 500")
		if re.Epoch != wk.Epoch || re.WakeID != wk.WakeID || !re.signed {
			w.t.Fatalf("%s: S2: retry with epoch %d wake id %s (signed %v), want %d %s", why, re.Epoch, re.WakeID, re.signed, wk.Epoch, wk.WakeID)
		}
		w.checkStreams(wakeOffsets(re), why+": the retry's streams")
		w.token = re.Token
		w.cover("WAKING→WAKING failed delivery retried (same epoch and wake id)")
		w.cover("S2 wake id uniqueness")
		fallthrough
	case scnAnswerLive:
		w.state = scnLive
		w.cover("WAKING→LIVE webhook 2xx")
	case scnAnswerDone:
		// Claimed, every stream acked to its tail at the wake, IDLE.
		for p := range w.acked {
			if scnLess(w.acked[p], w.tail(p)) {
				w.acked[p] = w.tail(p)
			}
		}
		w.state = scnIdle
		w.cover("WAKING→IDLE webhook {done: true} without pending work")
	}
	w.waitState(why)
}

// send posts one callback with the current token; fields are added to
// the epoch. It records the token of a reply (S5 is checked by ok).
func (w *scnWorld) send(token string, epoch int64, fields map[string]any) scnReply {
	w.t.Helper()
	body := map[string]any{"epoch": epoch}
	for k, v := range fields {
		body[k] = v
	}
	raw, err := json.Marshal(body)
	if err != nil {
		w.t.Fatal(err)
	}
	resp, out := do(w.t, "POST", w.callbackURL, map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}, string(raw))
	reply := scnReply{Status: resp.StatusCode}
	if err := json.Unmarshal([]byte(out), &reply); err != nil {
		w.t.Fatalf("callback %s: %d %q is not JSON", raw, resp.StatusCode, out)
	}
	return reply
}

// ok posts a callback of the current epoch that must succeed, and checks
// the reply's token (S5) and streams against the model, which the caller
// has already updated.
func (w *scnWorld) ok(fields map[string]any, why string) scnReply {
	w.t.Helper()
	r := w.send(w.token, w.epoch, fields)
	if r.Status != http.StatusOK || !r.OK {
		w.t.Fatalf("%s: callback %v: %d %s, want 200\n%s", why, fields, r.Status, r.Error.Code, w.srv.logs)
	}
	if r.Token == "" {
		w.t.Fatalf("%s: S5: a successful callback without a token", why)
	}
	w.cover("S5 token present")
	w.token = r.Token
	w.checkStreams(r.Streams, why)
	return r
}

// refused posts a callback that must fail with status and code.
func (w *scnWorld) refused(token string, epoch int64, fields map[string]any, status int, code, why string) {
	w.t.Helper()
	r := w.send(token, epoch, fields)
	if r.Status != status || r.Error.Code != code || r.OK {
		w.t.Fatalf("%s: callback %v: %d %q, want %d %s", why, fields, r.Status, r.Error.Code, status, code)
	}
}

// refusedOrError is refused, but a wrong answer fails the test without
// stopping it, so that the steps after it are still checked: the callback
// is one that changes nothing when it is refused.
func (w *scnWorld) refusedOrError(token string, epoch int64, fields map[string]any, status int, code, why string) {
	w.t.Helper()
	r := w.send(token, epoch, fields)
	if r.Status != status || r.Error.Code != code || r.OK {
		w.t.Errorf("%s: callback %v: %d %q, want %d %s", why, fields, r.Status, r.Error.Code, status, code)
	}
}

// beyond returns an offset past a stream's tail.
func beyond(tail string) string {
	if tail == "-1" {
		tail = scnStart
	}
	head, pos, ok := strings.Cut(tail, "_")
	n, err := strconv.ParseInt(pos, 10, 64)
	if !ok || err != nil {
		return tail + "0"
	}
	return head + "_" + fmt.Sprintf("%0*d", len(pos), n+1000)
}

// subscribed returns the model's subscribed streams, sorted.
func (w *scnWorld) subscribed() []string {
	var out []string
	for p := range w.acked {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
