package wake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// TestEngineModel drives the engine with random sequences of appends,
// callbacks (valid, stale, malformed, claiming, acking, subscribing,
// done), webhook behaviours (2xx, {"done": true}, 5xx, no answer),
// restarts and clock jumps, and checks after every step, once the engine
// is idle:
//
//   - S1/S2: each wake id has one epoch and each epoch one wake id; stored
//     epochs never decrease;
//   - S4: stored acked offsets never decrease and never pass the tail;
//   - S5/S6: successful callbacks carry a token; a callback of an epoch
//     below the stored one gets STALE_EPOCH; failed callbacks change
//     nothing;
//   - S8: every wake verifies with the subscription's secret;
//   - deadlines match the state;
//   - L1 and no lost wake: no consumer is IDLE with pending work;
//
// and at the end, with a webhook that answers {"done": true}, that every
// event was acked and every consumer is asleep.
func TestEngineModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { runModel(t, seed) })
		})
	}
}

// Webhook behaviours of the model.
const (
	hookLive = iota // 200 {}
	hookDone        // 200 {"done": true}
	hookFail        // 503
	hookHang        // no answer until the request times out
)

type model struct {
	t       *testing.T
	r       *rand.Rand
	st      *memStore
	keys    *subscription.Keyring
	hook    *receiver
	eng     *Engine
	secret  string
	mu      sync.Mutex
	mode    int  // guarded by mu
	answers int  // guarded by mu
	calm    bool // guarded by mu
	seen    int  // wakes checked so far
	epochOf map[string]int64
	wakeOf  map[string]string // consumer epoch key → wake id
	latest  map[string]subscription.WakePayload
	prev    map[string]store.Consumer
	// exclusive is EngineConfig.ExclusiveStore: even seeds run with the
	// member cache, odd ones without.
	exclusive bool
}

var modelStreams = []string{"/m/a", "/m/b", "/m/c"}

const modelSecondary = "/x/shared"

func runModel(t *testing.T, seed uint64) {
	m := &model{t: t, r: rand.New(rand.NewPCG(seed, 99)), st: newMemStore(), keys: rigKeyring(t), hook: &receiver{},
		epochOf: map[string]int64{}, wakeOf: map[string]string{}, latest: map[string]subscription.WakePayload{}, prev: map[string]store.Consumer{},
		exclusive: seed%2 == 0}
	var appenders sync.WaitGroup
	defer appenders.Wait()
	m.hook.setReply(func(p subscription.WakePayload, req *http.Request) (int, string) {
		mode, race := m.currentMode()
		switch mode {
		case hookDone:
			if race {
				// An event appended while the webhook answers: it must
				// wake the consumer again, not be acked unseen.
				appenders.Add(1)
				go func() {
					defer appenders.Done()
					m.st.appendData(p.PrimaryStream, 1)
				}()
			}
			return http.StatusOK, `{"done": true}`
		case hookFail:
			return http.StatusServiceUnavailable, ""
		case hookHang:
			<-req.Context().Done()
			return http.StatusOK, ""
		}
		return http.StatusOK, "{}"
	})
	m.eng = startEngine(t, m.st, m.hook, m.keys, 0, m.exclusive)
	res, err := m.eng.CreateSubscription(context.Background(), &CreateSubscriptionParams{ID: "m", Pattern: "/m/*", Webhook: hookURL})
	if err != nil {
		t.Fatal(err)
	}
	m.secret = res.Subscription.WebhookSecret
	m.st.appendData(modelSecondary, 1)

	for step := range 250 {
		switch k := m.r.IntN(10); {
		case k < 3:
			m.st.appendData(modelStreams[m.r.IntN(len(modelStreams))], 1+m.r.Int64N(3))
		case k < 4:
			m.setMode(m.r.IntN(4))
		case k < 7:
			m.callback()
		case k < 9:
			steps := []time.Duration{100 * time.Millisecond, time.Second, subscription.WakingTimeout, subscription.LivenessTimeout, 5 * time.Minute}
			time.Sleep(steps[m.r.IntN(len(steps))])
		default:
			m.eng.Stop(context.Background())
			if m.r.IntN(2) == 0 {
				// An append no engine hears of: the reconciliation at
				// start must find it.
				m.st.appendData(modelStreams[m.r.IntN(len(modelStreams))], 1)
			}
			m.eng = startEngine(t, m.st, m.hook, m.keys, 0, m.exclusive)
		}
		synctest.Wait()
		m.check(step)
		if t.Failed() {
			t.Fatalf("seed %d failed at step %d", seed, step)
		}
	}

	// Settle: a webhook that answers done, time for every retry; then
	// nothing may be pending anywhere.
	m.setMode(hookDone)
	m.mu.Lock()
	m.calm = true // no racing appends from here: let it settle
	m.mu.Unlock()
	for range 20 {
		time.Sleep(subscription.LivenessTimeout)
		synctest.Wait()
		m.check(-1)
	}
	for _, c := range m.snapshot() {
		if c.State != "IDLE" {
			t.Errorf("%s is %s after settling", c.ID, c.State)
		}
	}
	m.eng.Stop(context.Background())
}

// currentMode returns the webhook behaviour, and whether a done answer
// races an append this time.
func (m *model) currentMode() (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.answers++
	return m.mode, !m.calm && m.answers%3 == 0
}

func (m *model) setMode(mode int) {
	m.mu.Lock()
	m.mode = mode
	m.mu.Unlock()
}

func (m *model) snapshot() map[string]store.Consumer {
	out := map[string]store.Consumer{}
	for _, c := range m.st.list(func(*store.Consumer) bool { return true }, byID) {
		out[c.ID] = c
	}
	return out
}

func (m *model) tail(path string) string {
	s, err := m.st.StreamGet(context.Background(), &store.StreamGetParams{Path: path})
	if err != nil {
		return subscription.OffsetStart
	}
	return protocol.FormatOffset(s.Tail)
}

// callback sends a random callback for a random consumer with the token
// of its latest wake.
func (m *model) callback() {
	if len(m.latest) == 0 {
		return
	}
	ids := make([]string, 0, len(m.latest))
	for id := range m.latest {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w := m.latest[ids[m.r.IntN(len(ids))]]
	before, stored := m.snapshot()[w.ConsumerID]
	req := subscription.CallbackRequest{Epoch: w.Epoch}
	switch m.r.IntN(4) {
	case 0:
		req.WakeID = w.WakeID
	case 1:
		req.WakeID = "w_other"
	}
	if stored && m.r.IntN(2) == 0 {
		s := before.Streams[m.r.IntN(len(before.Streams))]
		off := m.tail(s.Path)
		if m.r.IntN(5) == 0 {
			off = protocol.FormatOffset(1 << 40) // beyond the tail
		}
		req.Acks = []subscription.StreamOffset{{Path: s.Path, Offset: off}}
	}
	if m.r.IntN(6) == 0 {
		req.Subscribe = []string{modelSecondary}
	}
	req.Done = m.r.IntN(3) == 0
	resp, err := m.eng.Callback(context.Background(), &CallbackParams{ConsumerID: w.ConsumerID, Token: w.Token, Body: []byte(body(req))})
	after, stillStored := m.snapshot()[w.ConsumerID]
	code, isCallbackErr := subscription.CallbackErrorCode(err)
	switch {
	case err == nil:
		if resp.Token == "" || resp.Streams == nil {
			m.t.Errorf("S5: success without token or streams: %+v", resp)
		}
	case !isCallbackErr:
		m.t.Errorf("callback %+v: server fault %v", req, err)
	default:
		// A failed callback changes nothing.
		if stored && stillStored && after.Version != before.Version {
			m.t.Errorf("failed callback %s changed %s", code, w.ConsumerID)
		}
	}
	if stored && w.Epoch < before.Epoch && code != subscription.CodeStaleEpoch {
		m.t.Errorf("S6: callback of epoch %d at epoch %d got %v", w.Epoch, before.Epoch, err)
	}
	if !stored && code != subscription.CodeConsumerGone {
		m.t.Errorf("S7: callback for a removed consumer got %v", err)
	}
}

func (m *model) check(step int) {
	t := m.t
	wakes := m.hook.wakes()
	for _, w := range wakes[m.seen:] {
		verifySignature(t, m.secret, w) // S8
		p := w.Payload
		key := fmt.Sprintf("%s@%d", p.ConsumerID, p.Epoch)
		if id, ok := m.wakeOf[key]; ok && id != p.WakeID {
			t.Errorf("S2: epoch %d of %s has wake ids %s and %s", p.Epoch, p.ConsumerID, id, p.WakeID)
		}
		m.wakeOf[key] = p.WakeID
		if e, ok := m.epochOf[p.WakeID]; ok && e != p.Epoch {
			t.Errorf("S1: wake id %s sent with epochs %d and %d", p.WakeID, e, p.Epoch)
		}
		m.epochOf[p.WakeID] = p.Epoch
		if p.Epoch >= m.latest[p.ConsumerID].Epoch {
			m.latest[p.ConsumerID] = p
		}
	}
	m.seen = len(wakes)

	now := time.Now()
	snap := m.snapshot()
	for id, c := range snap {
		if prev, ok := m.prev[id]; ok {
			if c.Epoch < prev.Epoch {
				t.Errorf("S1: stored epoch of %s went from %d to %d", id, prev.Epoch, c.Epoch)
			}
			for _, s := range c.Streams {
				for _, ps := range prev.Streams {
					if ps.Path == s.Path && m.eng.machine.CompareOffsets(s.Acked, ps.Acked) < 0 {
						t.Errorf("S4: %s acked %s went back from %s to %s", id, s.Path, ps.Acked, s.Acked)
					}
				}
			}
		}
		pending := false
		for _, s := range c.Streams {
			tail := m.tail(s.Path)
			if m.eng.machine.CompareOffsets(s.Acked, tail) > 0 {
				t.Errorf("S4: %s acked %s at %s beyond the tail %s", id, s.Path, s.Acked, tail)
			}
			if m.eng.machine.CompareOffsets(tail, s.Acked) > 0 {
				pending = true
			}
		}
		switch c.State {
		case "IDLE":
			if pending {
				t.Errorf("L1: %s is IDLE with pending work (step %d)", id, step)
			}
			if !c.DueAt.IsZero() {
				t.Errorf("%s is IDLE with a deadline", id)
			}
		case "WAKING":
			if c.WakingDeadline.IsZero() == c.NextRetryAt.IsZero() || c.DueAt.Before(now.Add(-deadlineResolution)) {
				t.Errorf("%s is WAKING with deadlines %+v at %v", id, c, now)
			}
		case "LIVE":
			if c.LivenessDeadline.IsZero() || c.DueAt.Before(now.Add(-deadlineResolution)) {
				t.Errorf("%s is LIVE with deadlines %+v at %v", id, c, now)
			}
		}
	}
	m.prev = snap
}
