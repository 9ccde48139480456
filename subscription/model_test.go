package subscription

import (
	"math/rand/v2"
	"testing"
	"time"
)

// FuzzDecide drives a consumer with a script of events, chosen by the
// fuzzer, against streams that grow, and checks the invariants the pure
// core owns after every step:
//
//   - S1/S2: wake epochs never decrease; a higher epoch has a wake id never
//     seen before, the same epoch the same wake id (a retry);
//   - S4: acked offsets never move back, and never pass the tail;
//   - deadlines match the state (IDLE none, WAKING one of waking/retry,
//     LIVE liveness), and none is in the past when set;
//   - no lost wake: an event that leaves the consumer IDLE leaves it
//     without pending work;
//   - a synchronous done acks every stream to at least its notified tail;
//   - a callback of the current wake with acks within the tails always
//     succeeds, and failed decisions change nothing;
//   - Remove comes alone.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 3, 3, 1, 4, 0, 0, 9, 4, 0x0d, 2, 0})
	f.Add([]byte{0, 0, 2, 0, 2, 0, 2, 0, 3, 2, 2, 0, 3, 1})
	f.Add([]byte{0, 1, 3, 0, 0, 4, 4, 0x10, 4, 0x2d, 5, 1, 1, 7})
	f.Add([]byte{0, 2, 4, 0x44, 0, 5, 4, 0x0c, 6, 0, 4, 0x11, 2, 0, 1, 3})
	f.Fuzz(runScript)
}

// TestRandomScripts runs FuzzDecide's checks on reproducible random
// scripts, so every test run explores the state space too.
func TestRandomScripts(t *testing.T) {
	t.Parallel()
	randomScripts(t, rand.NewPCG(1, 2), 0, runScript)
}

// randomScripts runs 2000 scripts of lead bytes and up to 60 two-byte
// steps, drawn from src, and stops at the first that fails.
func randomScripts(t *testing.T, src rand.Source, lead int, run func(*testing.T, []byte)) {
	r := rand.New(src)
	for range 2000 {
		script := make([]byte, lead+2*(1+r.IntN(60)))
		for i := range script {
			script[i] = byte(r.Uint32())
		}
		run(t, script)
		if t.Failed() {
			t.Fatalf("script %v", script)
		}
	}
}

func runScript(t *testing.T, script []byte) {
	if len(script) > 400 {
		return
	}
	m := &Machine{Rand: rand.NewChaCha8([32]byte{1})}
	s := newSim(t, m)
	s.tails[pB] = off(0)
	streams := []string{pA, pB, pC, pD}
	steps := []time.Duration{time.Millisecond, time.Second, WakingTimeout, LivenessTimeout, time.Hour, FailureGCAfter}
	var lastEpoch int64
	lastWake, lastAttempt := "", 0
	seenWakes := map[string]bool{}

	for i := 0; i+1 < len(script) && !s.removed; i += 2 {
		op, arg := script[i], script[i+1]
		before := s.c.Clone()
		var ev Event
		legit := false
		switch op % 8 {
		case 0: // events on a stream
			s.append(streams[arg%4], int64(arg/4%5)+1)
			ev = TailsChanged{Tails: s.tailsCopy()}
		case 1: // time passes
			s.now = s.now.Add(steps[int(arg)%len(steps)])
			ev = Tick{Tails: s.tailsCopy()}
		case 2: // the next deadline fires
			if d := s.c.NextDeadline(); !d.IsZero() && d.After(s.now) {
				s.now = d
			}
			ev = Tick{Tails: s.tailsCopy()}
		case 3: // a delivery ends
			attempt := s.c.Attempts
			if arg&8 != 0 && attempt > 1 {
				attempt--
			}
			epoch, wake := s.c.Epoch, s.c.WakeID
			if arg&16 != 0 {
				epoch, wake = epoch-1, "w_earlier"
			}
			ev = WebhookResult{Epoch: epoch, WakeID: wake, Attempt: attempt, Delivered: arg&1 != 0, Done: arg&2 != 0, Tails: s.tailsCopy()}
		case 4, 5: // a callback
			var req CallbackRequest
			req, legit = s.scriptedCallback(arg, streams)
			ev = Callback{Request: req, Token: TokenClaims{Epoch: req.Epoch}, Tails: s.tailsCopy()}
		case 6: // a secondary stream is deleted
			path := streams[1+int(arg)%3]
			delete(s.tails, path)
			ev = StreamDeleted{Path: path}
		case 7: // the consumer's callback arrives with a stale epoch
			ev = Callback{Request: CallbackRequest{Epoch: s.c.Epoch - 1, Done: true}, Token: TokenClaims{Epoch: s.c.Epoch - 1}, Tails: s.tailsCopy()}
		}

		effects, err := s.apply(ev)
		if err != nil {
			if _, ok := ev.(Callback); !ok {
				t.Fatalf("step %d: %T failed: %v", i/2, ev, err)
			}
			if _, ok := CallbackErrorCode(err); !ok {
				t.Fatalf("step %d: callback error %v is not a callback error", i/2, err)
			}
			if legit {
				t.Fatalf("step %d: a legitimate callback %+v failed: %v", i/2, ev, err)
			}
			if !equalConsumer(s.c, before) {
				t.Fatalf("step %d: a failed callback changed the consumer", i/2)
			}
			continue
		}

		for _, e := range effects {
			switch e := e.(type) {
			case SendWake:
				w := e.Wake
				switch {
				case w.Epoch < lastEpoch:
					t.Fatalf("S1: epoch %d after %d", w.Epoch, lastEpoch)
				case w.Epoch == lastEpoch:
					if w.WakeID != lastWake || e.Attempt != lastAttempt+1 {
						t.Fatalf("S2: retry %+v of wake %s attempt %d", e, lastWake, lastAttempt)
					}
				default:
					if seenWakes[w.WakeID] || e.Attempt != 1 {
						t.Fatalf("S2: new wake %+v reuses an id or starts at attempt %d", w, e.Attempt)
					}
				}
				lastEpoch, lastWake, lastAttempt = w.Epoch, w.WakeID, e.Attempt
				seenWakes[w.WakeID] = true
			case Remove:
				if len(effects) != 1 {
					t.Fatalf("Remove among other effects: %+v", effects)
				}
			}
		}
		if s.removed {
			break
		}
		s.checkConsumer(t, before, ev)
	}
}

// scriptedCallback builds a callback from one script byte, and says
// whether it is one the consumer of the current wake may legitimately
// send: current epoch, current or no wake id, acks within the tails.
func (s *sim) scriptedCallback(arg byte, streams []string) (CallbackRequest, bool) {
	req := CallbackRequest{Epoch: s.c.Epoch, Done: arg&1 != 0}
	legit := s.c.Epoch > 0
	switch arg >> 1 & 3 {
	case 1:
		req.WakeID = s.c.WakeID
	case 2:
		req.WakeID = "w_forged"
		legit = false
	}
	if arg&8 != 0 && len(s.c.Streams) > 0 {
		// Ack a subscribed stream up to its tail.
		cur := s.c.Streams[int(arg>>4)%len(s.c.Streams)]
		tail := s.tails[cur.Path]
		if tail != "" {
			req.Acks = []StreamOffset{{Path: cur.Path, Offset: tail}}
		}
	}
	if arg&0x10 != 0 && arg&0x20 != 0 {
		// An ack beyond the tail.
		req.Acks = append(req.Acks, StreamOffset{Path: s.c.Streams[0].Path, Offset: off(1 << 40)})
		legit = false
	}
	if arg&0x40 != 0 {
		req.Subscribe = []string{streams[2+int(arg>>4&1)]}
	}
	if arg&0x80 != 0 {
		req.Unsubscribe = []string{streams[1+int(arg>>5&1)]}
	}
	return req, legit
}

func (s *sim) checkConsumer(t *testing.T, before Consumer, ev Event) {
	t.Helper()
	c := &s.c
	for _, cur := range c.Streams {
		tail := s.tails.of(cur.Path)
		if s.m.CompareOffsets(cur.Acked, tail) > 0 {
			t.Fatalf("%s acked %s beyond its tail %s", cur.Path, cur.Acked, tail)
		}
		if old, ok := before.Stream(cur.Path); ok && s.m.CompareOffsets(cur.Acked, old.Acked) < 0 {
			t.Fatalf("S4: %s acked offset moved back from %s to %s", cur.Path, old.Acked, cur.Acked)
		}
	}
	zero := func(ts ...time.Time) bool {
		for _, x := range ts {
			if !x.IsZero() {
				return false
			}
		}
		return true
	}
	switch c.State {
	case StateIdle:
		if !zero(c.WakingDeadline, c.NextRetryAt, c.LivenessDeadline) {
			t.Fatalf("IDLE consumer with deadlines: %+v", c)
		}
		if _, tailsKnown := ev.(StreamDeleted); !tailsKnown && s.m.PendingWork(c, s.tails) {
			t.Fatalf("lost wake: IDLE with pending work after %T: %+v tails %v", ev, c, s.tails)
		}
	case StateWaking:
		if zero(c.WakingDeadline) == zero(c.NextRetryAt) || !zero(c.LivenessDeadline) {
			t.Fatalf("WAKING consumer with deadlines %v %v %v", c.WakingDeadline, c.NextRetryAt, c.LivenessDeadline)
		}
	case StateLive:
		if zero(c.LivenessDeadline) || !zero(c.WakingDeadline, c.NextRetryAt) {
			t.Fatalf("LIVE consumer with deadlines %v %v %v", c.WakingDeadline, c.NextRetryAt, c.LivenessDeadline)
		}
	default:
		t.Fatalf("state %q", c.State)
	}
	for _, d := range []time.Time{c.WakingDeadline, c.NextRetryAt, c.LivenessDeadline} {
		if !d.IsZero() && d.Before(s.now) && !d.Equal(before.WakingDeadline) && !d.Equal(before.NextRetryAt) && !d.Equal(before.LivenessDeadline) {
			t.Fatalf("a deadline was set in the past: %v at %v", d, s.now)
		}
	}
	if r, ok := ev.(WebhookResult); ok && r.Delivered && r.Done && r.Epoch == before.Epoch && r.WakeID == before.WakeID {
		for _, old := range before.Streams {
			cur, ok := c.Stream(old.Path)
			if ok && old.Notified != "" && s.m.CompareOffsets(cur.Acked, old.Notified) < 0 {
				t.Fatalf("synchronous done left %s at %s below its notified tail %s", old.Path, cur.Acked, old.Notified)
			}
		}
	}
}
