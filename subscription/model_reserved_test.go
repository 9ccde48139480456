package subscription

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// FuzzDecideReserved drives a reserved-API subscription (webhook or
// pull-wake, by the script's first byte) through the one machine with the
// reserved API's events, and checks after every step the invariants the
// two front doors share (FuzzDecide's) and the reserved API's own:
//
//   - S1/S2: a new wake has a higher epoch and a wake id never seen; a
//     webhook retry keeps both and counts its attempt up;
//   - S4: cursors never move back and never pass the tail;
//   - no lost wake: an event that leaves the subscription IDLE leaves it
//     without pending work;
//   - nothing is held forever: a LIVE subscription has its lease as a
//     deadline, a WAKING webhook its attempt, a pull-wake wake not yet
//     written its rewrite;
//   - a holder only while LIVE, and only for pull-wake;
//   - acks and releases of another wake are FENCED, an ack of the current
//     wake within the tails succeeds, and a failed decision changes
//     nothing.
func FuzzDecideReserved(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 0, 3, 9, 4, 1, 1, 2})
	f.Add([]byte{1, 0, 0, 5, 0, 6, 0, 4, 3, 1, 3, 2, 0})
	f.Add([]byte{1, 0, 1, 7, 1, 5, 0, 4, 0x0b, 1, 3})
	f.Fuzz(runReservedScript)
}

// TestRandomReservedScripts runs FuzzDecideReserved's checks on
// reproducible random scripts.
func TestRandomReservedScripts(t *testing.T) {
	t.Parallel()
	randomScripts(t, rand.NewPCG(3, 4), 1, runReservedScript)
}

func runReservedScript(t *testing.T, script []byte) {
	if len(script) < 1 || len(script) > 401 {
		return
	}
	typ := DSTypeWebhook
	if script[0]&1 != 0 {
		typ = DSTypePullWake
	}
	m := &Machine{Rand: rand.NewChaCha8([32]byte{7})}
	streams := []string{pA, pB, pC}
	c := Consumer{ID: "__ds/s1", State: StateIdle, Reserved: ReservedTerms{Type: typ, Lease: 30 * time.Second},
		Streams: []StreamCursor{{Path: pA, Glob: true, Acked: OffsetStart}, {Path: pB, Explicit: true, Acked: OffsetStart}}}
	s := &sim{t: t, m: m, c: c, tails: Tails{}, now: t0}
	steps := []time.Duration{time.Millisecond, time.Second, DSAttemptTimeout, 30 * time.Second, time.Hour}
	seen := map[string]bool{}
	var lastEpoch int64
	lastAttempt := 0

	for i := 1; i+1 < len(script); i += 2 {
		op, arg := script[i], script[i+1]
		before := s.c.Clone()
		var ev Event
		legit, fenced := false, false
		switch op % 8 {
		case 0: // events on a linked stream
			s.append(streams[int(arg)%2], int64(arg/2%5)+1)
			ev = TailsChanged{Tails: s.tailsCopy()}
		case 1: // time passes
			s.now = s.now.Add(steps[int(arg)%len(steps)])
			ev = Tick{Tails: s.tailsCopy()}
		case 2: // the next deadline fires
			if d := s.c.Due(); !d.IsZero() && d.After(s.now) {
				s.now = d
			}
			ev = Tick{Tails: s.tailsCopy()}
		case 3: // a webhook attempt is answered (maybe a stale one)
			epoch, wake, attempt := s.c.Epoch, s.c.WakeID, s.c.Attempts
			if arg&8 != 0 {
				epoch, wake = epoch-1, "w_earlier"
			}
			ev = WebhookResult{Epoch: epoch, WakeID: wake, Attempt: attempt, Delivered: arg&1 != 0, Done: arg&2 != 0, Tails: s.tailsCopy()}
		case 4: // a callback or ack of the current wake, or of another
			ack := ReservedAck{Epoch: s.c.Epoch, WakeID: s.c.WakeID, Done: arg&1 != 0, Tails: s.tailsCopy()}
			legit = s.c.State != StateIdle
			if arg&2 != 0 {
				cur := s.c.Streams[int(arg>>2)%len(s.c.Streams)]
				if tail, ok := s.tails[cur.Path]; ok {
					ack.Acks = []DSAck{{Path: cur.Path, Offset: tail}}
				}
			}
			if arg&0x10 != 0 {
				ack.Epoch, ack.WakeID = ack.Epoch-1, "w_stale"
				legit, fenced = false, true
			}
			if arg&0x20 != 0 {
				ack.Acks = append(ack.Acks, DSAck{Path: pC, Offset: off(1)})
				legit = false
			}
			ev = ack
		case 5: // a claim
			ev = ReservedClaim{Worker: []string{"w1", "w2"}[arg&1], Tails: s.tailsCopy()}
		case 6: // a release of the current wake, or of another
			rel := ReservedRelease{Epoch: s.c.Epoch, WakeID: s.c.WakeID, Tails: s.tailsCopy()}
			if arg&1 != 0 {
				rel.WakeID = "w_forged"
				fenced = true
			}
			ev = rel
		case 7: // the owed wake event is written
			ev = WakeEventWritten{Epoch: s.c.Epoch, WakeID: s.c.WakeID}
		}

		next, effects, err := m.Decide(s.c, ev, s.now)
		if err != nil {
			if legit {
				t.Fatalf("step %d: a legitimate %+v failed: %v", i/2, ev, err)
			}
			if fenced && s.c.State != StateIdle && !errors.Is(err, ErrFenced) {
				t.Fatalf("step %d: %+v of another wake: %v, want FENCED", i/2, ev, err)
			}
			if !equalConsumer(s.c, before) {
				t.Fatalf("step %d: a failed decision changed the subscription", i/2)
			}
			continue
		}
		if fenced && before.State != StateIdle {
			t.Fatalf("step %d: %+v of another wake was applied", i/2, ev)
		}
		s.c = next
		for _, e := range effects {
			switch e := e.(type) {
			case SendWake:
				if typ != DSTypeWebhook {
					t.Fatalf("a pull-wake subscription got a webhook: %+v", e)
				}
				w := e.Wake
				switch {
				case w.Epoch < lastEpoch:
					t.Fatalf("S1: epoch %d after %d", w.Epoch, lastEpoch)
				case w.Epoch == lastEpoch:
					if e.Attempt != lastAttempt+1 {
						t.Fatalf("S2: retry %+v after attempt %d", e, lastAttempt)
					}
				default:
					if seen[w.WakeID] || e.Attempt != 1 {
						t.Fatalf("S2: new wake %+v reuses an id or starts at attempt %d", w, e.Attempt)
					}
				}
				lastEpoch, lastAttempt = w.Epoch, e.Attempt
				seen[w.WakeID] = true
			case AppendWake:
				if typ != DSTypePullWake || e.Epoch != s.c.Epoch || e.WakeID != s.c.WakeID {
					t.Fatalf("a wake event %+v of subscription %+v", e, s.c)
				}
				if e.Epoch < lastEpoch || e.Epoch > lastEpoch && seen[e.WakeID] {
					t.Fatalf("S1/S2: wake event %+v after epoch %d", e, lastEpoch)
				}
				lastEpoch = e.Epoch
				seen[e.WakeID] = true
			default:
				t.Fatalf("an effect a reserved-API subscription never gets: %T", e)
			}
		}
		s.checkReserved(t, before, ev)
	}
}

func (s *sim) checkReserved(t *testing.T, before Consumer, ev Event) {
	t.Helper()
	c := &s.c
	for _, cur := range c.Streams {
		if s.m.CompareOffsets(cur.Acked, s.tails.of(cur.Path)) > 0 {
			t.Fatalf("%s acked %s beyond its tail", cur.Path, cur.Acked)
		}
		if old, ok := before.Stream(cur.Path); ok && s.m.CompareOffsets(cur.Acked, old.Acked) < 0 {
			t.Fatalf("S4: %s acked offset moved back from %s to %s", cur.Path, old.Acked, cur.Acked)
		}
	}
	if c.Holder != "" && (c.State != StateLive || c.Reserved.Type != DSTypePullWake) {
		t.Fatalf("a holder outside a pull-wake lease: %+v", c)
	}
	switch c.State {
	case StateIdle:
		if !c.Due().IsZero() || c.Holder != "" {
			t.Fatalf("IDLE subscription with a deadline or holder: %+v", c)
		}
		if s.m.PendingWork(c, s.tails) {
			t.Fatalf("lost wake: IDLE with pending work after %T: %+v tails %v", ev, c, s.tails)
		}
	case StateLive:
		if c.LivenessDeadline.IsZero() || c.Due().IsZero() || c.Due().After(c.LivenessDeadline) {
			t.Fatalf("LIVE without its lease as a deadline: %+v", c)
		}
	case StateWaking:
		owed := c.Reserved.Type == DSTypeWebhook || !c.WakeWritten
		if owed && c.Due().IsZero() {
			t.Fatalf("WAKING with a delivery owed and no deadline: %+v", c)
		}
	default:
		t.Fatalf("state %q", c.State)
	}
}

// TestDecideRejectsTheOtherDoorsEvents: a reserved-API event does not
// apply to a query-string consumer, nor a query-string callback or
// stream deletion to a reserved-API subscription; neither changes it.
func TestDecideRejectsTheOtherDoorsEvents(t *testing.T) {
	t.Parallel()
	m := seeded()
	reserved := *newDSSub(DSTypePullWake)
	for _, tc := range []struct {
		c  Consumer
		ev Event
	}{
		{idle(), ReservedClaim{Worker: "w"}},
		{waking(), ReservedAck{Epoch: 1, WakeID: wakeZero, Done: true}},
		{waking(), ReservedRelease{Epoch: 1, WakeID: wakeZero}},
		{waking(), WakeEventWritten{Epoch: 1, WakeID: wakeZero}},
		{reserved, Callback{Request: CallbackRequest{Epoch: 0, Done: true}}},
		{reserved, StreamDeleted{Path: "/events/a"}},
	} {
		next, effects, err := m.Decide(tc.c, tc.ev, t0)
		if !errors.Is(err, ErrDSInvalid) || effects != nil || !equalConsumer(next, tc.c) {
			t.Errorf("%T on %q = %v, %v, want ErrDSInvalid and no change", tc.ev, tc.c.ID, effects, err)
		}
	}
}
