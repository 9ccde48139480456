package subscription

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// sim drives one consumer through events the way an engine would: it keeps
// the tails, applies Decide's result, and records every wake sent.
type sim struct {
	t       testing.TB
	m       *Machine
	c       Consumer
	tails   Tails
	now     time.Time
	sends   []SendWake
	removed bool
}

// seeded is a machine with reproducible but distinct wake ids and jitter.
func seeded() *Machine {
	return &Machine{Rand: rand.NewChaCha8([32]byte{42})}
}

func newSim(t testing.TB, m *Machine) *sim {
	c, err := NewConsumer(NewConsumerParams{SubscriptionID: subID, PrimaryStream: pA, StartOffset: off(0)})
	if err != nil {
		t.Fatal(err)
	}
	return &sim{t: t, m: m, c: c, tails: Tails{pA: off(0)}, now: t0}
}

// tailsCopy is what the engine reads from the store for an event.
func (s *sim) tailsCopy() Tails {
	out := Tails{}
	for k, v := range s.tails {
		out[k] = v
	}
	return out
}

func (s *sim) append(path string, n int64) {
	cur := s.tails[path]
	var pos int64
	if cur != "" {
		for _, c := range cur[17:] {
			pos = pos*10 + int64(c-'0')
		}
	}
	s.tails[path] = off(pos + n)
}

// apply runs one event; it fails the test on an unexpected error.
func (s *sim) apply(ev Event) ([]Effect, error) {
	s.t.Helper()
	c, effects, err := s.m.Decide(s.c, ev, s.now)
	if err != nil {
		return nil, err
	}
	s.c = c
	for _, e := range effects {
		switch e := e.(type) {
		case SendWake:
			s.sends = append(s.sends, e)
		case Remove:
			s.removed = true
		}
	}
	return effects, nil
}

func (s *sim) must(ev Event) []Effect {
	s.t.Helper()
	effects, err := s.apply(ev)
	if err != nil {
		s.t.Fatalf("%T: %v", ev, err)
	}
	return effects
}

func (s *sim) lastWake() SendWake {
	s.t.Helper()
	if len(s.sends) == 0 {
		s.t.Fatal("no wake was sent")
	}
	return s.sends[len(s.sends)-1]
}

// callback sends a request with a token for its epoch.
func (s *sim) callback(req CallbackRequest) ([]Effect, error) {
	return s.apply(Callback{Request: req, Token: TokenClaims{Epoch: req.Epoch}, Tails: s.tailsCopy()})
}

// S1: epochs in the notifications of a consumer strictly increase, across
// every way a wake cycle can end.
func TestInvariantS1EpochMonotonicity(t *testing.T) {
	t.Parallel()
	s := newSim(t, seeded())
	s.append(pA, 3)
	s.must(TailsChanged{Tails: s.tailsCopy()}) // wake 1
	w := s.lastWake()
	s.must(WebhookResult{Epoch: w.Wake.Epoch, WakeID: w.Wake.WakeID, Attempt: 1, Delivered: true})
	s.append(pA, 1)
	s.must(Callback{Request: CallbackRequest{Epoch: w.Wake.Epoch, Acks: []StreamOffset{{Path: pA, Offset: off(3)}}, Done: true}, Token: TokenClaims{Epoch: w.Wake.Epoch}, Tails: s.tailsCopy()}) // wake 2: done with pending
	w = s.lastWake()
	s.append(pA, 1)
	s.must(WebhookResult{Epoch: w.Wake.Epoch, WakeID: w.Wake.WakeID, Attempt: 1, Delivered: true, Done: true, Tails: s.tailsCopy()}) // wake 3: sync done, later event
	w = s.lastWake()
	s.must(Callback{Request: CallbackRequest{Epoch: w.Wake.Epoch, WakeID: w.Wake.WakeID}, Token: TokenClaims{Epoch: w.Wake.Epoch}, Tails: s.tailsCopy()})
	s.now = s.c.LivenessDeadline
	s.must(Tick{Tails: s.tailsCopy()}) // wake 4: liveness timeout with pending work

	if len(s.sends) != 4 {
		t.Fatalf("%d wakes sent, want 4", len(s.sends))
	}
	for i := 1; i < len(s.sends); i++ {
		if s.sends[i].Wake.Epoch <= s.sends[i-1].Wake.Epoch {
			t.Errorf("epoch went from %d to %d", s.sends[i-1].Wake.Epoch, s.sends[i].Wake.Epoch)
		}
	}
}

// S2: one wake id per wake cycle: retries reuse it, new cycles get a new,
// unguessable one.
func TestInvariantS2WakeIDUniqueness(t *testing.T) {
	t.Parallel()
	s := newSim(t, &Machine{}) // crypto/rand
	ids := map[string]int64{}
	for cycle := range 50 {
		s.append(pA, 1)
		s.must(TailsChanged{Tails: s.tailsCopy()})
		first := s.lastWake()
		for range 3 { // three failed deliveries and their retries
			s.now = s.c.NextDeadline()
			s.must(Tick{Tails: s.tailsCopy()})
			s.now = s.c.NextDeadline()
			s.must(Tick{Tails: s.tailsCopy()})
			if w := s.lastWake(); w.Wake.WakeID != first.Wake.WakeID || w.Wake.Epoch != first.Wake.Epoch {
				t.Fatalf("cycle %d: a retry changed the wake: %+v then %+v", cycle, first.Wake, w.Wake)
			}
		}
		if _, dup := ids[first.Wake.WakeID]; dup {
			t.Fatalf("wake id %s used by two cycles", first.Wake.WakeID)
		}
		if len(first.Wake.WakeID) != 34 || first.Wake.WakeID[:2] != "w_" {
			t.Fatalf("wake id %q is not w_ and 128 bits", first.Wake.WakeID)
		}
		ids[first.Wake.WakeID] = first.Wake.Epoch
		s.must(WebhookResult{Epoch: first.Wake.Epoch, WakeID: first.Wake.WakeID, Attempt: s.c.Attempts, Delivered: true, Done: true, Tails: s.tailsCopy()})
		if s.c.State != StateIdle {
			t.Fatalf("cycle %d ended in %s", cycle, s.c.State)
		}
	}
}

// S3: claiming the current wake id is idempotent; another is
// ALREADY_CLAIMED.
func TestInvariantS3IdempotentClaim(t *testing.T) {
	t.Parallel()
	s := newSim(t, seeded())
	s.append(pA, 1)
	s.must(TailsChanged{Tails: s.tailsCopy()})
	w := s.lastWake().Wake
	for i := range 3 {
		if _, err := s.callback(CallbackRequest{Epoch: w.Epoch, WakeID: w.WakeID}); err != nil {
			t.Fatalf("claim %d: %v", i+1, err)
		}
		if s.c.State != StateLive {
			t.Fatalf("claim %d left the consumer %s", i+1, s.c.State)
		}
	}
	before := s.c.Clone()
	if _, err := s.callback(CallbackRequest{Epoch: w.Epoch, WakeID: "w_someone-else"}); !errors.Is(err, ErrAlreadyClaimed) {
		t.Fatalf("claiming another wake id: %v", err)
	}
	if !equalConsumer(s.c, before) {
		t.Fatal("a rejected claim changed the consumer")
	}
}

// S4: acked offsets never decrease, whatever order acks arrive in.
func TestInvariantS4OffsetMonotonicity(t *testing.T) {
	t.Parallel()
	s := newSim(t, seeded())
	s.append(pA, 100)
	s.must(TailsChanged{Tails: s.tailsCopy()})
	w := s.lastWake().Wake
	prev := s.c.Streams[0].Acked
	for _, n := range []int64{10, 50, 20, 50, 0, 99, 1, 100, 30} {
		if _, err := s.callback(CallbackRequest{Epoch: w.Epoch, Acks: []StreamOffset{{Path: pA, Offset: off(n)}}}); err != nil {
			t.Fatalf("ack %d: %v", n, err)
		}
		cur := s.c.Streams[0].Acked
		if s.m.CompareOffsets(cur, prev) < 0 {
			t.Fatalf("ack %d moved the offset back from %s to %s", n, prev, cur)
		}
		prev = cur
	}
	if prev != off(100) {
		t.Errorf("acked offset is %s, want the highest ack", prev)
	}
}

// S6: a zombie of an earlier wake cycle is fenced.
func TestInvariantS6StaleEpochRejection(t *testing.T) {
	t.Parallel()
	s := newSim(t, seeded())
	s.append(pA, 1)
	s.must(TailsChanged{Tails: s.tailsCopy()})
	zombie := s.lastWake().Wake
	s.must(Callback{Request: CallbackRequest{Epoch: zombie.Epoch, WakeID: zombie.WakeID}, Token: TokenClaims{Epoch: zombie.Epoch}, Tails: s.tailsCopy()})
	// The zombie stalls past the liveness timeout; a new event wakes a new
	// instance.
	s.now = s.c.LivenessDeadline
	s.must(Tick{Tails: s.tailsCopy()})
	s.append(pA, 1)
	s.must(TailsChanged{Tails: s.tailsCopy()})
	if s.c.Epoch != zombie.Epoch+1 {
		t.Fatalf("epoch %d after the second wake", s.c.Epoch)
	}
	before := s.c.Clone()
	for _, req := range []CallbackRequest{
		{Epoch: zombie.Epoch},
		{Epoch: zombie.Epoch, WakeID: zombie.WakeID},
		{Epoch: zombie.Epoch, Acks: []StreamOffset{{Path: pA, Offset: off(2)}}, Done: true},
		{Epoch: zombie.Epoch, Unsubscribe: []string{pA}},
	} {
		if _, err := s.callback(req); !errors.Is(err, ErrStaleEpoch) {
			t.Errorf("zombie callback %+v: %v, want STALE_EPOCH", req, err)
		}
	}
	if !equalConsumer(s.c, before) {
		t.Fatal("a zombie changed the consumer")
	}
	if code, _ := CallbackErrorCode(ErrStaleEpoch); code != "STALE_EPOCH" {
		t.Errorf("ErrStaleEpoch is %s", code)
	}
}

// S7: deleting the subscription or the primary stream removes the
// consumer, and a callback for a removed consumer is 410 CONSUMER_GONE.
func TestInvariantS7GoneAfterDelete(t *testing.T) {
	t.Parallel()
	for _, ev := range []Event{SubscriptionDeleted{}, StreamDeleted{Path: pA}} {
		s := newSim(t, seeded())
		s.append(pA, 1)
		s.must(TailsChanged{Tails: s.tailsCopy()})
		effects := s.must(ev)
		if len(effects) != 1 || !s.removed {
			t.Errorf("%T: effects %+v, want only Remove", ev, effects)
		}
	}
	if code, ok := CallbackErrorCode(ErrConsumerGone); !ok || code != "CONSUMER_GONE" {
		t.Errorf("ErrConsumerGone is %s %v", code, ok)
	}
}

// L1: pending work on an IDLE consumer causes a wake, whichever event
// finds it.
func TestInvariantL1PendingWorkCausesWake(t *testing.T) {
	t.Parallel()
	for name, ev := range map[string]func(s *sim) Event{
		"append": func(s *sim) Event { return TailsChanged{Tails: s.tailsCopy()} },
		"tick":   func(s *sim) Event { return Tick{Tails: s.tailsCopy()} },
		"late callback": func(s *sim) Event {
			return Callback{Request: CallbackRequest{Epoch: s.c.Epoch}, Token: TokenClaims{Epoch: s.c.Epoch}, Tails: s.tailsCopy()}
		},
	} {
		s := newSim(t, seeded())
		s.append(pA, 1)
		s.must(TailsChanged{Tails: s.tailsCopy()})
		w := s.lastWake().Wake
		s.must(WebhookResult{Epoch: w.Epoch, WakeID: w.WakeID, Attempt: 1, Delivered: true, Done: true, Tails: s.tailsCopy()})
		// An event the engine missed (its notification was dropped): the
		// next event of any kind must wake the consumer.
		s.append(pA, 1)
		s.must(ev(s))
		if s.c.State != StateWaking || len(s.sends) != 2 {
			t.Errorf("%s: state %s after %d wakes", name, s.c.State, len(s.sends))
		}
	}
}

// L2: done without pending work reaches IDLE and sends nothing.
func TestInvariantL2DoneWithoutPending(t *testing.T) {
	t.Parallel()
	s := newSim(t, seeded())
	s.append(pA, 2)
	s.must(TailsChanged{Tails: s.tailsCopy()})
	w := s.lastWake().Wake
	effects := s.must(Callback{Request: CallbackRequest{Epoch: w.Epoch, WakeID: w.WakeID, Acks: []StreamOffset{{Path: pA, Offset: off(2)}}, Done: true}, Token: TokenClaims{Epoch: w.Epoch}, Tails: s.tailsCopy()})
	if s.c.State != StateIdle || len(effects) != 0 || len(s.sends) != 1 {
		t.Errorf("state %s, effects %+v, %d wakes", s.c.State, effects, len(s.sends))
	}
}

// L3: done with pending work starts a new wake cycle at once, with a
// higher epoch.
func TestInvariantL3DoneWithPending(t *testing.T) {
	t.Parallel()
	s := newSim(t, seeded())
	s.append(pA, 2)
	s.must(TailsChanged{Tails: s.tailsCopy()})
	w := s.lastWake().Wake
	s.append(pA, 1)
	s.must(Callback{Request: CallbackRequest{Epoch: w.Epoch, WakeID: w.WakeID, Acks: []StreamOffset{{Path: pA, Offset: off(2)}}, Done: true}, Token: TokenClaims{Epoch: w.Epoch}, Tails: s.tailsCopy()})
	next := s.lastWake().Wake
	if s.c.State != StateWaking || next.Epoch != w.Epoch+1 || next.WakeID == w.WakeID {
		t.Errorf("state %s, wake %+v after %+v", s.c.State, next, w)
	}
	if len(next.TriggeredBy) != 1 || next.TriggeredBy[0] != pA || next.Streams[0].Offset != off(2) {
		t.Errorf("the new wake does not point at the unprocessed event: %+v", next)
	}
}
