package subscription

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// DSAttemptTimeout is how long a webhook attempt may stay unanswered
// before it counts as failed: a process killed while the request was in
// flight leaves this deadline in the row, and any replica retries once it
// passes.
const DSAttemptTimeout = WebhookRequestTimeout + 5*time.Second

// DSWakeAppendRetry is when a pull-wake's wake event is written again if
// the process that owed it died before recording it.
const DSWakeAppendRetry = 10 * time.Second

// Errors of the delivery requests.
var (
	// ErrFenced: a callback, ack or release whose generation or wake id
	// is not the subscription's current one (409 FENCED).
	ErrFenced = errors.New("subscription: stale wake generation")
	// ErrNothingToClaim: a claim of a pull-wake subscription with no
	// pending work and no wake to take.
	ErrNothingToClaim = errors.New("subscription: no wake to claim")
)

// ClaimedError is the 409 ALREADY_CLAIMED of a claim while another
// worker holds the lease: who holds it, at which generation.
type ClaimedError struct {
	Holder     string
	Generation int64
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("subscription: worker %q holds the lease of generation %d", e.Holder, e.Generation)
}

// Is makes errors.Is(err, ErrAlreadyClaimed) true.
func (e *ClaimedError) Is(target error) bool { return target == ErrAlreadyClaimed }

// DSSub is what the machine decides on: a reserved-API subscription as
// a consumer (Consumer, in the states of the query-string model) with its
// type and lease. Its delivery state is the consumer's: the generation
// is Epoch, a wake is WakeID, the lease runs until LivenessDeadline (and
// Holder holds it), a webhook attempt in flight has its WakingDeadline,
// a retry (or an owed wake event) its NextRetryAt, a failing webhook its
// FailingSince; its links are Streams.
type DSSub struct {
	Type  string
	Lease time.Duration
	Consumer
}

// Sending reports whether a webhook attempt is in flight.
func (s *DSSub) Sending() bool { return !s.WakingDeadline.IsZero() }

// Failed reports whether the last webhook attempt failed (status
// "failed").
func (s *DSSub) Failed() bool { return !s.FailingSince.IsZero() }

// Due is the earliest time the subscription needs a Tick, zero for none:
// the next webhook attempt (or its deadline), or the owed wake event,
// and while a lease is held its end. A webhook's lease before its 2xx is
// no deadline: the attempt's outcome decides, so a retry is never held
// up behind a lease that ran out meanwhile.
func (s *DSSub) Due() time.Time {
	if s.State == StateIdle {
		return time.Time{}
	}
	due := s.nextAttempt()
	if s.State == StateLive && !s.LivenessDeadline.IsZero() && (due.IsZero() || s.LivenessDeadline.Before(due)) {
		due = s.LivenessDeadline
	}
	return due
}

// nextAttempt is when the attempt in flight counts as failed, or the
// next attempt (a retry, an owed wake event) is due; zero for none.
func (s *DSSub) nextAttempt() time.Time {
	if s.Sending() {
		return s.WakingDeadline
	}
	return s.NextRetryAt
}

// DSEffect is what a decision asks the engine to do once it is stored.
type DSEffect int

// Effects of a decision.
const (
	// DSNone: nothing to send.
	DSNone DSEffect = iota
	// DSSendWebhook: POST the current wake (attempt Attempts).
	DSSendWebhook
	// DSAppendWake: write the current wake's event to the wake stream.
	DSAppendWake
)

// DSAck is one ack: a stream (absolute path) and the offset processed.
type DSAck struct {
	Path   string
	Offset string
}

// DSMachine decides the transitions of reserved-API subscriptions, over
// the consumer states of Machine (IDLE, WAKING, LIVE) and with its rules
// where they are the same: a wake starts a cycle (epoch + 1, a new wake
// id, the tails recorded as its snapshot), acks never move back, a
// synchronous done acks each stream to its snapshot. The differences are
// the reserved API's: its wake is a webhook or a wake event, a lease is
// claimed by a worker, its retries follow DSRetryBase. Like Machine it is
// pure: the next state is a function of the state, the event, the stream
// tails and the time (and the bytes read from Rand).
type DSMachine struct {
	// Rand supplies wake ids and jitter; crypto/rand.Reader when nil.
	Rand io.Reader
}

func (m *DSMachine) machine() *Machine { return &Machine{Rand: m.Rand} }

// Pending reports whether a linked stream's tail is beyond its ack.
func (m *DSMachine) Pending(s *DSSub, tails Tails) bool {
	return m.machine().PendingWork(&s.Consumer, tails)
}

// Settle issues a wake when the subscription is idle and has pending
// work: generation + 1, a new wake id, the tails recorded as the wake's
// snapshot, and the first delivery (a webhook with its lease started, or
// a wake event due now).
func (m *DSMachine) Settle(s *DSSub, tails Tails, now time.Time) (DSEffect, error) {
	if s.State != StateIdle || !m.Pending(s, tails) {
		return DSNone, nil
	}
	id, err := NewWakeID(m.machine().rand())
	if err != nil {
		return DSNone, err
	}
	m.idle(s)
	s.State, s.Epoch, s.WakeID = StateWaking, s.Epoch+1, id
	for i := range s.Streams {
		s.Streams[i].Notified = tails.of(s.Streams[i].Path)
	}
	if s.Type == DSTypeWebhook {
		s.LivenessDeadline = now.Add(s.Lease)
		return m.attempt(s, now), nil
	}
	// The effect writes the event now; the deadline writes it again
	// only if its writer died before recording it.
	s.NextRetryAt = now.Add(DSWakeAppendRetry)
	return DSAppendWake, nil
}

// attempt starts a webhook attempt of the current wake.
func (m *DSMachine) attempt(s *DSSub, now time.Time) DSEffect {
	s.Attempts++
	s.WakingDeadline, s.NextRetryAt = now.Add(DSAttemptTimeout), time.Time{}
	return DSSendWebhook
}

// Tick fires the due deadlines: an expired lease clears the holder and
// the wake (a new one follows when work is pending), a webhook attempt
// past its deadline counts as failed, a due retry is sent, a wake event
// not recorded as written is written again.
func (m *DSMachine) Tick(s *DSSub, tails Tails, now time.Time) (DSEffect, error) {
	next := s.nextAttempt()
	attemptDue := !next.IsZero() && !now.Before(next)
	if s.Type == DSTypePullWake && s.State != StateIdle && !s.WakeWritten && attemptDue {
		// The wake's event is owed (its writer died, or failed).
		s.NextRetryAt = now.Add(DSWakeAppendRetry)
		return DSAppendWake, nil
	}
	switch s.State {
	case StateLive:
		if !now.Before(s.LivenessDeadline) {
			m.idle(s)
		}
	case StateWaking:
		if s.Type != DSTypeWebhook || !attemptDue {
			break
		}
		if s.Sending() {
			return DSNone, m.fail(s, now)
		}
		return m.attempt(s, now), nil
	}
	return m.Settle(s, tails, now)
}

// WakeWritten records that the wake event of generation gen is in the
// wake stream.
func (m *DSMachine) WakeWritten(s *DSSub, gen int64) {
	if s.State != StateIdle && s.Epoch == gen {
		s.WakeWritten = true
		s.NextRetryAt = time.Time{}
	}
}

// WebhookResult applies the answer to attempt of the wake (gen, wakeID):
// a 2xx with {"done": true} acks every stream to the wake's snapshot and
// ends the wake (a new one follows when work is pending); any other 2xx
// holds the lease until callbacks end it; a failure schedules a retry.
// The answer of an earlier wake or attempt changes nothing.
func (m *DSMachine) WebhookResult(s *DSSub, gen int64, wakeID string, attempt int, delivered, done bool, tails Tails, now time.Time) (DSEffect, error) {
	if s.Epoch != gen || s.WakeID != wakeID || s.State != StateWaking || s.Attempts != attempt || !s.Sending() {
		return DSNone, nil
	}
	switch {
	case delivered && done:
		m.machine().ackNotified(&s.Consumer)
		m.idle(s)
		return m.Settle(s, tails, now)
	case delivered:
		s.State = StateLive
		s.WakingDeadline, s.NextRetryAt, s.FailingSince = time.Time{}, time.Time{}, time.Time{}
		return DSNone, nil
	}
	return DSNone, m.fail(s, now)
}

// fail records a failed webhook attempt and schedules its retry.
func (m *DSMachine) fail(s *DSSub, now time.Time) error {
	d, err := m.retryDelay(s.Attempts)
	if err != nil {
		return err
	}
	if s.FailingSince.IsZero() {
		s.FailingSince = now
	}
	s.WakingDeadline, s.NextRetryAt = time.Time{}, now.Add(d)
	return nil
}

// Claim gives a pull-wake subscription's lease to worker: the wake in
// flight, or, when idle with pending work, a wake issued now. Errors:
// *ClaimedError while another lease runs, ErrNothingToClaim when there is
// no work, ErrDSInvalid for a webhook subscription.
func (m *DSMachine) Claim(s *DSSub, worker string, tails Tails, now time.Time) (DSEffect, error) {
	if s.Type != DSTypePullWake {
		return DSNone, fmt.Errorf("%w: only pull-wake subscriptions are claimed", ErrDSInvalid)
	}
	if s.State == StateLive && now.Before(s.LivenessDeadline) {
		return DSNone, &ClaimedError{Holder: s.Holder, Generation: s.Epoch}
	}
	if s.State == StateLive {
		m.idle(s)
	}
	eff, err := m.Settle(s, tails, now)
	if err != nil {
		return DSNone, err
	}
	if s.State != StateWaking {
		return DSNone, ErrNothingToClaim
	}
	// A wake issued by this claim is taken at once; its event is still
	// written, so the wake stream records every generation.
	s.State = StateLive
	s.Holder = worker
	s.LivenessDeadline = now.Add(s.Lease)
	return eff, nil
}

// fence checks that a callback, ack or release speaks for the current
// wake (ErrFenced otherwise).
func (m *DSMachine) fence(s *DSSub, gen int64, wakeID string) error {
	if s.State == StateIdle || gen != s.Epoch || wakeID == "" || wakeID != s.WakeID {
		return fmt.Errorf("%w: generation %d, wake %q is not the current wake", ErrFenced, gen, wakeID)
	}
	return nil
}

// Ack applies a webhook callback or a pull-wake ack of the wake (gen,
// wakeID): each ack moves its stream's cursor forward (never back), and
// done ends the wake (next reports whether a new wake was issued because
// work is still pending); without done the lease is extended. Errors:
// ErrFenced, ErrInvalidOffset for an offset beyond the tail or of a
// stream not linked.
func (m *DSMachine) Ack(s *DSSub, gen int64, wakeID string, acks []DSAck, done bool, tails Tails, now time.Time) (eff DSEffect, next bool, err error) {
	if err := m.fence(s, gen, wakeID); err != nil {
		return DSNone, false, err
	}
	mm := m.machine()
	for _, a := range acks {
		l, ok := s.Stream(a.Path)
		if !ok {
			return DSNone, false, fmt.Errorf("%w: stream %s is not linked to the subscription", ErrInvalidOffset, a.Path)
		}
		if err := mm.checkAck(a.Path, a.Offset, tails.of(a.Path)); err != nil {
			return DSNone, false, err
		}
		if mm.CompareOffsets(a.Offset, l.Acked) > 0 {
			l.Acked = a.Offset
		}
	}
	if !done {
		// A callback claims a webhook's wake; every valid call extends
		// the lease.
		s.State = StateLive
		s.WakingDeadline, s.NextRetryAt, s.FailingSince = time.Time{}, time.Time{}, time.Time{}
		s.LivenessDeadline = now.Add(s.Lease)
		return DSNone, false, nil
	}
	m.idle(s)
	eff, err = m.Settle(s, tails, now)
	return eff, s.State != StateIdle, err
}

// Release ends the wake (gen, wakeID) without acking; pending work
// issues a new one. Errors: ErrFenced.
func (m *DSMachine) Release(s *DSSub, gen int64, wakeID string, tails Tails, now time.Time) (DSEffect, error) {
	if err := m.fence(s, gen, wakeID); err != nil {
		return DSNone, err
	}
	m.idle(s)
	return m.Settle(s, tails, now)
}

// idle ends the wake: no holder, no lease, no attempt (goIdle's rule,
// and the reserved API's holder and wake event).
func (m *DSMachine) idle(s *DSSub) {
	goIdle(&s.Consumer)
	s.Attempts, s.FailingSince, s.Holder, s.WakeWritten = 0, time.Time{}, "", false
}

// retryDelay is the wait before the retry after attempt n: 1 s doubling
// to at most 60 s, with 20% jitter either way.
func (m *DSMachine) retryDelay(n int) (time.Duration, error) {
	base := DSRetryBase(n)
	var b [8]byte
	if _, err := io.ReadFull(m.machine().rand(), b[:]); err != nil {
		return 0, fmt.Errorf("subscription: reading jitter: %w", err)
	}
	spread := base / 5
	jitter := time.Duration(binary.BigEndian.Uint64(b[:])%uint64(2*spread+1)) - spread
	return base + jitter, nil
}

// DSRetryBase is the retry delay after attempt n before jitter: 1 s, 2 s,
// 4 s, ... up to 60 s.
func DSRetryBase(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 7 {
		return 60 * time.Second
	}
	return min(time.Duration(1<<(n-1))*time.Second, 60*time.Second)
}

// CompareDSOffsets orders two offsets of one stream (Machine.CompareOffsets):
// OffsetStart, and "" for a stream that does not exist, sort first.
func CompareDSOffsets(a, b string) int {
	if a == "" {
		a = OffsetStart
	}
	if b == "" {
		b = OffsetStart
	}
	return (&Machine{}).CompareOffsets(a, b)
}
