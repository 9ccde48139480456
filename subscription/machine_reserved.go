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

// ReservedTerms are what makes a consumer a reserved-API subscription's:
// its delivery type (DSTypeWebhook or DSTypePullWake) and lease, from
// its configuration. They are zero for a query-string consumer. The one
// machine reads them to choose the reserved API's rules where the two
// front doors differ (retry schedule, lease, wake event, fencing).
type ReservedTerms struct {
	Type  string
	Lease time.Duration
}

// IsReserved reports whether c is a reserved-API subscription.
func (c *Consumer) IsReserved() bool { return c.Reserved.Type != "" }

// Sending reports whether a webhook attempt is in flight.
func (c *Consumer) Sending() bool { return !c.WakingDeadline.IsZero() }

// Failed reports whether the last webhook attempt failed (a reserved
// subscription's status "failed").
func (c *Consumer) Failed() bool { return !c.FailingSince.IsZero() }

// Due is the earliest time c needs a Tick, zero for none. A query-string
// consumer's is NextDeadline. A reserved subscription's is the next
// webhook attempt (or its deadline), or the owed wake event, and while a
// lease is held its end; a webhook's lease before its 2xx is no deadline:
// the attempt's outcome decides, so a retry is never held up behind a
// lease that ran out meanwhile.
func (c *Consumer) Due() time.Time {
	if !c.IsReserved() {
		return c.NextDeadline()
	}
	if c.State == StateIdle {
		return time.Time{}
	}
	due := c.nextAttempt()
	if c.State == StateLive && !c.LivenessDeadline.IsZero() && (due.IsZero() || c.LivenessDeadline.Before(due)) {
		due = c.LivenessDeadline
	}
	return due
}

// nextAttempt is when the attempt in flight counts as failed, or the
// next attempt (a retry, an owed wake event) is due; zero for none.
func (c *Consumer) nextAttempt() time.Time {
	if c.Sending() {
		return c.WakingDeadline
	}
	return c.NextRetryAt
}

// DSAck is one ack: a stream (absolute path) and the offset processed.
type DSAck struct {
	Path   string
	Offset string
}

// The reserved API's transitions, over the states of Machine (IDLE,
// WAKING, LIVE) and with its rules where they are the same: a wake starts
// a cycle (epoch + 1, a new wake id, the tails recorded as its snapshot),
// acks never move back, a synchronous done acks each stream to its
// snapshot. Decide picks them by the consumer's ReservedTerms; the
// differences are the reserved API's: its wake is a webhook or a wake
// event, a lease is claimed by a worker, its retries follow DSRetryBase,
// a stale wake is FENCED.

// dsSettle issues a wake when the subscription is idle and has pending
// work: generation + 1, a new wake id, the tails recorded as the wake's
// snapshot, and the first delivery (a webhook with its lease started, or
// a wake event due now).
func (m *Machine) dsSettle(s *Consumer, tails Tails, now time.Time) ([]Effect, error) {
	if s.State != StateIdle || !m.PendingWork(s, tails) {
		return nil, nil
	}
	id, err := NewWakeID(m.rand())
	if err != nil {
		return nil, err
	}
	dsIdle(s)
	s.State, s.Epoch, s.WakeID = StateWaking, s.Epoch+1, id
	for i := range s.Streams {
		s.Streams[i].Notified = tails.of(s.Streams[i].Path)
	}
	if s.Reserved.Type == DSTypeWebhook {
		s.LivenessDeadline = now.Add(s.Reserved.Lease)
		return dsAttempt(s, now), nil
	}
	// The effect writes the event now; the deadline writes it again
	// only if its writer died before recording it.
	s.NextRetryAt = now.Add(DSWakeAppendRetry)
	return []Effect{AppendWake{Epoch: s.Epoch, WakeID: s.WakeID}}, nil
}

// dsAttempt starts a webhook attempt of the current wake.
func dsAttempt(s *Consumer, now time.Time) []Effect {
	s.Attempts++
	s.WakingDeadline, s.NextRetryAt = now.Add(DSAttemptTimeout), time.Time{}
	return []Effect{SendWake{Wake: WakePayload{ConsumerID: s.ID, Epoch: s.Epoch, WakeID: s.WakeID}, Attempt: s.Attempts}}
}

// dsTick fires the due deadlines: an expired lease clears the holder and
// the wake (a new one follows when work is pending), a webhook attempt
// past its deadline counts as failed, a due retry is sent, a wake event
// not recorded as written is written again.
func (m *Machine) dsTick(s *Consumer, tails Tails, now time.Time) ([]Effect, error) {
	next := s.nextAttempt()
	attemptDue := !next.IsZero() && !now.Before(next)
	if s.Reserved.Type == DSTypePullWake && s.State != StateIdle && !s.WakeWritten && attemptDue {
		// The wake's event is owed (its writer died, or failed).
		s.NextRetryAt = now.Add(DSWakeAppendRetry)
		return []Effect{AppendWake{Epoch: s.Epoch, WakeID: s.WakeID}}, nil
	}
	switch s.State {
	case StateLive:
		if !now.Before(s.LivenessDeadline) {
			dsIdle(s)
		}
	case StateWaking:
		if s.Reserved.Type != DSTypeWebhook || !attemptDue {
			break
		}
		if s.Sending() {
			return nil, m.dsFail(s, now)
		}
		return dsAttempt(s, now), nil
	}
	return m.dsSettle(s, tails, now)
}

// dsWakeWritten records that the current wake's event is in the wake
// stream. A webhook subscription has no wake stream: its retry stays.
func dsWakeWritten(s *Consumer, ev WakeEventWritten) {
	if s.Reserved.Type == DSTypePullWake && s.State != StateIdle && s.Epoch == ev.Epoch && s.WakeID == ev.WakeID {
		s.WakeWritten = true
		s.NextRetryAt = time.Time{}
	}
}

// dsWebhookResult applies the answer to an attempt of the current wake:
// a 2xx with {"done": true} acks every stream to the wake's snapshot and
// ends the wake (a new one follows when work is pending); any other 2xx
// holds the lease until callbacks end it; a failure schedules a retry.
// The answer of an earlier wake or attempt changes nothing.
func (m *Machine) dsWebhookResult(s *Consumer, r WebhookResult, now time.Time) ([]Effect, error) {
	if s.Epoch != r.Epoch || s.WakeID != r.WakeID || s.State != StateWaking || s.Attempts != r.Attempt || !s.Sending() {
		return nil, nil
	}
	switch {
	case r.Delivered && r.Done:
		m.ackNotified(s)
		dsIdle(s)
		return m.dsSettle(s, r.Tails, now)
	case r.Delivered:
		s.State = StateLive
		s.WakingDeadline, s.NextRetryAt, s.FailingSince = time.Time{}, time.Time{}, time.Time{}
		return nil, nil
	}
	return nil, m.dsFail(s, now)
}

// dsFail records a failed webhook attempt and schedules its retry.
func (m *Machine) dsFail(s *Consumer, now time.Time) error {
	d, err := m.dsRetryDelay(s.Attempts)
	if err != nil {
		return err
	}
	if s.FailingSince.IsZero() {
		s.FailingSince = now
	}
	s.WakingDeadline, s.NextRetryAt = time.Time{}, now.Add(d)
	return nil
}

// dsClaim gives a pull-wake subscription's lease to a worker: the wake
// in flight, or, when idle with pending work, a wake issued now. Errors:
// *ClaimedError while another lease runs, ErrNothingToClaim when there is
// no work, ErrDSInvalid for a webhook subscription.
func (m *Machine) dsClaim(s *Consumer, ev ReservedClaim, now time.Time) ([]Effect, error) {
	if s.Reserved.Type != DSTypePullWake {
		return nil, fmt.Errorf("%w: only pull-wake subscriptions are claimed", ErrDSInvalid)
	}
	if s.State == StateLive && now.Before(s.LivenessDeadline) {
		return nil, &ClaimedError{Holder: s.Holder, Generation: s.Epoch}
	}
	if s.State == StateLive {
		dsIdle(s)
	}
	effects, err := m.dsSettle(s, ev.Tails, now)
	if err != nil {
		return nil, err
	}
	if s.State != StateWaking {
		return nil, ErrNothingToClaim
	}
	// A wake issued by this claim is taken at once; its event is still
	// written, so the wake stream records every generation.
	s.State = StateLive
	s.Holder = ev.Worker
	s.LivenessDeadline = now.Add(s.Reserved.Lease)
	return effects, nil
}

// dsFence checks that a callback, ack or release speaks for the current
// wake (ErrFenced otherwise).
func dsFence(s *Consumer, gen int64, wakeID string) error {
	if s.State == StateIdle || gen != s.Epoch || wakeID == "" || wakeID != s.WakeID {
		return fmt.Errorf("%w: generation %d, wake %q is not the current wake", ErrFenced, gen, wakeID)
	}
	return nil
}

// dsAck applies a webhook callback or a pull-wake ack of the current
// wake: each ack moves its stream's cursor forward (never back), and done
// ends the wake (a new one is issued at once when work is still pending:
// the response's next_wake); without done the lease is extended. Errors:
// ErrFenced, ErrInvalidOffset for an offset beyond the tail or of a
// stream not linked.
func (m *Machine) dsAck(s *Consumer, ev ReservedAck, now time.Time) ([]Effect, error) {
	if err := dsFence(s, ev.Epoch, ev.WakeID); err != nil {
		return nil, err
	}
	for _, a := range ev.Acks {
		l, ok := s.Stream(a.Path)
		if !ok {
			return nil, fmt.Errorf("%w: stream %s is not linked to the subscription", ErrInvalidOffset, a.Path)
		}
		if err := m.checkAck(a.Path, a.Offset, ev.Tails.of(a.Path)); err != nil {
			return nil, err
		}
		if m.CompareOffsets(a.Offset, l.Acked) > 0 {
			l.Acked = a.Offset
		}
	}
	if !ev.Done {
		// A callback claims a webhook's wake; every valid call extends
		// the lease.
		s.State = StateLive
		s.WakingDeadline, s.NextRetryAt, s.FailingSince = time.Time{}, time.Time{}, time.Time{}
		s.LivenessDeadline = now.Add(s.Reserved.Lease)
		return nil, nil
	}
	dsIdle(s)
	return m.dsSettle(s, ev.Tails, now)
}

// dsRelease ends the current wake without acking; pending work issues a
// new one. Errors: ErrFenced.
func (m *Machine) dsRelease(s *Consumer, ev ReservedRelease, now time.Time) ([]Effect, error) {
	if err := dsFence(s, ev.Epoch, ev.WakeID); err != nil {
		return nil, err
	}
	dsIdle(s)
	return m.dsSettle(s, ev.Tails, now)
}

// dsIdle ends the wake: no holder, no lease, no attempt (goIdle's rule,
// and the reserved API's holder and wake event).
func dsIdle(s *Consumer) {
	goIdle(s)
	s.Attempts, s.FailingSince, s.Holder, s.WakeWritten = 0, time.Time{}, "", false
}

// retryDelay is the wait before the retry after attempt n: 1 s doubling
// to at most 60 s, with 20% jitter either way.
func (m *Machine) dsRetryDelay(n int) (time.Duration, error) {
	base := DSRetryBase(n)
	var b [8]byte
	if _, err := io.ReadFull(m.rand(), b[:]); err != nil {
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
