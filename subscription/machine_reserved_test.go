package subscription

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

var dsT0 = time.Date(2026, 5, 9, 0, 0, 0, 0, time.UTC)

const (
	off1 = "0000000000000000_0000000000000010"
	off2 = "0000000000000000_0000000000000020"
)

// dsMachine is a machine whose random bytes count up, so each wake id
// differs from the last.
func dsMachine() *dsDriver {
	seq := make([]byte, 1<<16)
	for i := range seq {
		seq[i] = byte(i * 7)
	}
	return &dsDriver{m: &Machine{Rand: bytes.NewReader(seq)}}
}

// dsEffect names what a decision asks of the engine, for short checks.
type dsEffect int

const (
	dsNone dsEffect = iota
	dsSendWebhook
	dsAppendWake
)

// dsDriver feeds the reserved API's inputs to Machine.Decide, as the
// engine does, and stores the decided consumer in place.
type dsDriver struct{ m *Machine }

func (d *dsDriver) decide(s *Consumer, ev Event, now time.Time) (dsEffect, error) {
	next, effects, err := d.m.Decide(*s, ev, now)
	if err != nil {
		return dsNone, err
	}
	*s = next
	eff := dsNone
	for _, e := range effects {
		switch e := e.(type) {
		case SendWake:
			if e.Attempt != s.Attempts || e.Wake.Epoch != s.Epoch || e.Wake.WakeID != s.WakeID {
				return dsNone, fmt.Errorf("a webhook of another wake: %+v", e)
			}
			eff = dsSendWebhook
		case AppendWake:
			if e.Epoch != s.Epoch || e.WakeID != s.WakeID {
				return dsNone, fmt.Errorf("a wake event of another wake: %+v", e)
			}
			eff = dsAppendWake
		default:
			return dsNone, fmt.Errorf("an effect a reserved-API subscription never gets: %T", e)
		}
	}
	return eff, nil
}

func (d *dsDriver) Settle(s *Consumer, tails Tails, now time.Time) (dsEffect, error) {
	return d.decide(s, TailsChanged{Tails: tails}, now)
}

func (d *dsDriver) Tick(s *Consumer, tails Tails, now time.Time) (dsEffect, error) {
	return d.decide(s, Tick{Tails: tails}, now)
}

func (d *dsDriver) WakeWritten(s *Consumer, gen int64) {
	if _, err := d.decide(s, WakeEventWritten{Epoch: gen, WakeID: s.WakeID}, time.Time{}); err != nil {
		panic(err)
	}
}

func (d *dsDriver) WebhookResult(s *Consumer, gen int64, wakeID string, attempt int, delivered, done bool, tails Tails, now time.Time) (dsEffect, error) {
	return d.decide(s, WebhookResult{Epoch: gen, WakeID: wakeID, Attempt: attempt, Delivered: delivered, Done: done, Tails: tails}, now)
}

func (d *dsDriver) Claim(s *Consumer, worker string, tails Tails, now time.Time) (dsEffect, error) {
	return d.decide(s, ReservedClaim{Worker: worker, Tails: tails}, now)
}

func (d *dsDriver) Ack(s *Consumer, gen int64, wakeID string, acks []DSAck, done bool, tails Tails, now time.Time) (dsEffect, bool, error) {
	eff, err := d.decide(s, ReservedAck{Epoch: gen, WakeID: wakeID, Acks: acks, Done: done, Tails: tails}, now)
	return eff, err == nil && done && s.State != StateIdle, err
}

func (d *dsDriver) Release(s *Consumer, gen int64, wakeID string, tails Tails, now time.Time) (dsEffect, error) {
	return d.decide(s, ReservedRelease{Epoch: gen, WakeID: wakeID, Tails: tails}, now)
}

func newDSSub(typ string) *Consumer {
	return &Consumer{State: StateIdle, Reserved: ReservedTerms{Type: typ, Lease: 30 * time.Second},
		Streams: []StreamCursor{{Path: "/events/a", Glob: true, Acked: OffsetStart}, {Path: "/events/b", Explicit: true, Acked: off1}}}
}

func TestDSSettleIssuesOneWake(t *testing.T) {
	t.Parallel()
	m := dsMachine()
	s := newDSSub(DSTypeWebhook)
	// Nothing pending: nothing happens.
	if eff, err := m.Settle(s, Tails{"/events/b": off1}, dsT0); err != nil || eff != dsNone || s.State != StateIdle {
		t.Fatalf("settle without work = %v, %v, %+v", eff, err, *s)
	}
	tails := Tails{"/events/a": off1, "/events/b": off1}
	eff, err := m.Settle(s, tails, dsT0)
	if err != nil || eff != dsSendWebhook || s.State != StateWaking || s.Epoch != 1 || s.WakeID == "" ||
		!s.LivenessDeadline.Equal(dsT0.Add(30*time.Second)) || s.Streams[0].Notified != off1 || !s.Sending() {
		t.Fatalf("settle = %v, %v, %+v %+v", eff, err, *s, s.Streams)
	}
	// A wake in flight: more work issues no second wake.
	if eff, _ := m.Settle(s, Tails{"/events/a": off2}, dsT0); eff != dsNone || s.Epoch != 1 {
		t.Fatalf("settle while waking = %v, generation %d", eff, s.Epoch)
	}
}

func TestDSWebhookDoneAcksTheSnapshotOnly(t *testing.T) {
	t.Parallel()
	m := dsMachine()
	s := newDSSub(DSTypeWebhook)
	if _, err := m.Settle(s, Tails{"/events/a": off1, "/events/b": off1}, dsT0); err != nil {
		t.Fatal(err)
	}
	st := *s
	// An answer to another wake changes nothing.
	if eff, _ := m.WebhookResult(s, st.Epoch, "w_other", st.Attempts, true, true, Tails{}, dsT0); eff != dsNone || s.State != StateWaking {
		t.Fatal("a stale answer was applied")
	}
	// Done, while /events/a grew past the snapshot: acked to the
	// snapshot, and woken again for the rest.
	eff, err := m.WebhookResult(s, st.Epoch, st.WakeID, st.Attempts, true, true, Tails{"/events/a": off2, "/events/b": off1}, dsT0)
	if err != nil || s.Streams[0].Acked != off1 || eff != dsSendWebhook || s.Epoch != 2 || s.WakeID == st.WakeID {
		t.Fatalf("done = %v, %v, links %+v state %+v", eff, err, s.Streams, *s)
	}
}

func TestDSWebhookFailureRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	m := dsMachine()
	s := newDSSub(DSTypeWebhook)
	if _, err := m.Settle(s, Tails{"/events/a": off1}, dsT0); err != nil {
		t.Fatal(err)
	}
	st := *s
	if _, err := m.WebhookResult(s, st.Epoch, st.WakeID, 1, false, false, nil, dsT0); err != nil {
		t.Fatal(err)
	}
	// The retry is the deadline, not the lease the wake started with.
	if !s.Due().Equal(s.nextAttempt()) {
		t.Fatalf("due %v, want the retry at %v", s.Due(), s.nextAttempt())
	}
	d := s.nextAttempt().Sub(dsT0)
	if !s.Failed() || s.Sending() || d < 800*time.Millisecond || d > 1200*time.Millisecond {
		t.Fatalf("after a failure: %+v (retry in %v, want 1 s ± 20%%)", s.State, d)
	}
	// Not due yet: nothing; due: the same wake again, attempt 2.
	if eff, _ := m.Tick(s, Tails{"/events/a": off1}, dsT0); eff != dsNone {
		t.Fatal("a retry before it was due")
	}
	eff, err := m.Tick(s, Tails{"/events/a": off1}, s.nextAttempt())
	if err != nil || eff != dsSendWebhook || s.Attempts != 2 || s.WakeID != st.WakeID || s.Epoch != st.Epoch {
		t.Fatalf("retry = %v, %v, %+v", eff, err, *s)
	}
	// An attempt nobody answered (its process died) counts as failed
	// once its deadline passes.
	if _, err := m.Tick(s, nil, s.nextAttempt()); err != nil || s.Sending() || !s.Failed() {
		t.Fatalf("after the attempt's deadline: %v, %+v", err, *s)
	}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 6: 32 * time.Second, 7: 60 * time.Second, 30: 60 * time.Second} {
		if got := DSRetryBase(n); got != want {
			t.Errorf("DSRetryBase(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestDSCallbackFencesAndExtends(t *testing.T) {
	t.Parallel()
	m := dsMachine()
	s := newDSSub(DSTypeWebhook)
	tails := Tails{"/events/a": off2, "/events/b": off1}
	if _, err := m.Settle(s, tails, dsT0); err != nil {
		t.Fatal(err)
	}
	gen, wake := s.Epoch, s.WakeID
	if _, _, err := m.Ack(s, gen, "w_stale", nil, true, tails, dsT0); !errors.Is(err, ErrFenced) {
		t.Fatalf("a stale wake id: %v", err)
	}
	if _, _, err := m.Ack(s, gen+1, wake, nil, true, tails, dsT0); !errors.Is(err, ErrFenced) {
		t.Fatalf("a stale generation: %v", err)
	}
	if _, _, err := m.Ack(s, gen, wake, []DSAck{{Path: "/events/a", Offset: "0000000000000000_0000000000000099"}}, false, tails, dsT0); !errors.Is(err, ErrInvalidOffset) {
		t.Fatalf("an ack beyond the tail: %v", err)
	}
	if _, _, err := m.Ack(s, gen, wake, []DSAck{{Path: "/events/zzz", Offset: off1}}, false, tails, dsT0); !errors.Is(err, ErrInvalidOffset) {
		t.Fatalf("an ack of a stream not linked: %v", err)
	}
	// A heartbeat: acks, claims the wake, extends the lease.
	later := dsT0.Add(10 * time.Second)
	if _, next, err := m.Ack(s, gen, wake, []DSAck{{Path: "/events/a", Offset: off1}}, false, tails, later); err != nil || next ||
		s.State != StateLive || !s.LivenessDeadline.Equal(later.Add(30*time.Second)) || s.Streams[0].Acked != off1 {
		t.Fatalf("heartbeat: %v, %+v", err, *s)
	}
	// An ack never moves a cursor back.
	if _, _, err := m.Ack(s, gen, wake, []DSAck{{Path: "/events/a", Offset: OffsetStart}}, false, tails, later); err != nil || s.Streams[0].Acked != off1 {
		t.Fatalf("a lower ack: %v, %+v", err, s.Streams[0])
	}
	// Done with work left: next_wake, a new generation.
	eff, next, err := m.Ack(s, gen, wake, nil, true, tails, later)
	if err != nil || !next || eff != dsSendWebhook || s.Epoch != gen+1 {
		t.Fatalf("done with work left = %v, %v, %v, %+v", eff, next, err, *s)
	}
	// The finished wake's callback is fenced now.
	if _, _, err := m.Ack(s, gen, wake, nil, true, tails, later); !errors.Is(err, ErrFenced) {
		t.Fatalf("a callback of the finished wake: %v", err)
	}
}

func TestDSClaimLeaseAndExpiry(t *testing.T) {
	t.Parallel()
	m := dsMachine()
	s := newDSSub(DSTypePullWake)
	tails := Tails{"/events/a": off1, "/events/b": off1}
	if _, err := m.Claim(s, "w1", Tails{"/events/b": off1}, dsT0); !errors.Is(err, ErrNothingToClaim) {
		t.Fatalf("a claim without work: %v", err)
	}
	eff, err := m.Settle(s, tails, dsT0)
	if err != nil || eff != dsAppendWake || s.State != StateWaking || !s.LivenessDeadline.IsZero() {
		t.Fatalf("a pull-wake settle = %v, %v, %+v", eff, err, *s)
	}
	m.WakeWritten(s, s.Epoch)
	if !s.WakeWritten || !s.Due().IsZero() {
		t.Fatalf("the wake's event written: %+v", *s)
	}
	if _, err := m.Claim(s, "w1", tails, dsT0); err != nil || s.Holder != "w1" || s.State != StateLive || !s.Due().Equal(dsT0.Add(30*time.Second)) {
		t.Fatalf("claim: %v, %+v (due %v)", err, *s, s.Due())
	}
	var held *ClaimedError
	if _, err := m.Claim(s, "w2", tails, dsT0.Add(time.Second)); !errors.As(err, &held) || held.Holder != "w1" || held.Generation != 1 || !errors.Is(err, ErrAlreadyClaimed) {
		t.Fatalf("a claim while the lease runs: %v", err)
	}
	// The lease expires: no holder; work is pending, so a new wake.
	eff, err = m.Tick(s, tails, dsT0.Add(30*time.Second))
	if err != nil || eff != dsAppendWake || s.Holder != "" || s.Epoch != 2 || s.State != StateWaking {
		t.Fatalf("lease expiry = %v, %v, %+v", eff, err, *s)
	}
	// A worker that claims before the event was written takes the wake;
	// the event is still owed and written.
	if _, err := m.Claim(s, "w2", tails, dsT0.Add(31*time.Second)); err != nil || s.WakeWritten {
		t.Fatalf("claim before the event: %v, %+v", err, *s)
	}
	if eff, _ := m.Tick(s, tails, s.nextAttempt()); eff != dsAppendWake {
		t.Fatal("the owed wake event is not written again")
	}
	// Release with work left wakes again.
	eff, err = m.Release(s, s.Epoch, s.WakeID, tails, dsT0.Add(32*time.Second))
	if err != nil || eff != dsAppendWake || s.Epoch != 3 {
		t.Fatalf("release = %v, %v, %+v", eff, err, *s)
	}
	if _, err := m.Release(s, 2, "w_x", tails, dsT0); !errors.Is(err, ErrFenced) {
		t.Fatalf("a stale release: %v", err)
	}
	if _, err := m.Claim(newDSSub(DSTypeWebhook), "w", tails, dsT0); !errors.Is(err, ErrDSInvalid) {
		t.Fatalf("a claim of a webhook subscription: %v", err)
	}
}
