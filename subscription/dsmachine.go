package subscription

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Phases of a reserved-API subscription (docs/subscriptions.md, The
// reserved subscription API: delivery).
//
// They are the consumer states of the query-string model (State): a
// reserved-API subscription is stored as a consumer, in the same rows.
const (
	// DSIdle: no wake in flight, no lease held.
	DSIdle = string(StateIdle)
	// DSWaking: a wake was issued and is not yet taken: a webhook being
	// delivered (or waiting for its retry), or a wake event written to
	// the wake stream and not yet claimed.
	DSWaking = string(StateWaking)
	// DSLive: a lease is held, by a worker's claim or by a webhook that
	// answered 2xx without done.
	DSLive = string(StateLive)
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

// DSLink is one stream linked to a subscription, with its cursor.
type DSLink struct {
	// Path is the absolute stream path.
	Path string
	// Glob and Explicit say how the stream is linked: by the pattern,
	// by the streams list, or both.
	Glob, Explicit bool
	// Acked is the last processed offset, inclusive; OffsetStart when
	// nothing was.
	Acked string
	// Notified is the stream's tail in the current wake's snapshot, ""
	// when the stream was linked after it.
	Notified string
}

// LinkType is the link's serialized type: explicit wins over glob.
func (l *DSLink) LinkType() string {
	if l.Explicit {
		return "explicit"
	}
	return "glob"
}

// DSState is the durable delivery state of a reserved-API subscription.
// Every field is plain data the store keeps; Due is when the engine must
// call Tick.
type DSState struct {
	Phase      string
	Generation int64
	WakeID     string
	// Holder is the worker that claimed the lease ("" for a webhook).
	Holder string
	// LeaseUntil is when the lease ends, zero when none runs.
	LeaseUntil time.Time
	// Attempts counts the webhook attempts of the current wake.
	Attempts int
	// Sending: a webhook attempt is in flight; NextAttemptAt is then its
	// deadline, else when the next attempt (a retry) is due.
	Sending       bool
	NextAttemptAt time.Time
	// Failed: the last webhook attempt failed (status "failed").
	Failed bool
	// WakeWritten: the pull-wake event of the current wake is in the
	// wake stream.
	WakeWritten bool
}

// Due is the earliest time the subscription needs a Tick, zero for none:
// the next webhook attempt (or its deadline), or the owed wake event,
// and while a lease is held its end. A webhook's lease before its 2xx is
// no deadline: the attempt's outcome decides, so a retry is never held
// up behind a lease that ran out meanwhile.
func (s *DSState) Due() time.Time {
	if s.Phase == DSIdle {
		return time.Time{}
	}
	due := s.NextAttemptAt
	if s.Phase == DSLive && !s.LeaseUntil.IsZero() && (due.IsZero() || s.LeaseUntil.Before(due)) {
		due = s.LeaseUntil
	}
	return due
}

// DSSub is what the machine decides on: a subscription's type, lease,
// links and state.
type DSSub struct {
	Type  string
	Lease time.Duration
	Links []DSLink
	State DSState
}

// DSEffect is what a decision asks the engine to do once it is stored.
type DSEffect int

// Effects of a decision.
const (
	// DSNone: nothing to send.
	DSNone DSEffect = iota
	// DSSendWebhook: POST the current wake (attempt State.Attempts).
	DSSendWebhook
	// DSAppendWake: write the current wake's event to the wake stream.
	DSAppendWake
)

// DSAck is one ack: a stream (absolute path) and the offset processed.
type DSAck struct {
	Path   string
	Offset string
}

// DSMachine decides the transitions of reserved-API subscriptions. Like
// Machine it is pure: the next state is a function of the state, the
// event, the stream tails and the time (and the bytes read from Rand).
type DSMachine struct {
	// Rand supplies wake ids and jitter; crypto/rand.Reader when nil.
	Rand io.Reader
}

func (m *DSMachine) machine() *Machine { return &Machine{Rand: m.Rand} }

// Pending reports whether a linked stream's tail is beyond its ack.
func (m *DSMachine) Pending(s *DSSub, tails Tails) bool {
	for _, l := range s.Links {
		if m.machine().CompareOffsets(tails.of(l.Path), l.Acked) > 0 {
			return true
		}
	}
	return false
}

// Settle issues a wake when the subscription is idle and has pending
// work: generation + 1, a new wake id, the tails recorded as the wake's
// snapshot, and the first delivery (a webhook with its lease started, or
// a wake event due now).
func (m *DSMachine) Settle(s *DSSub, tails Tails, now time.Time) (DSEffect, error) {
	if s.State.Phase != DSIdle || !m.Pending(s, tails) {
		return DSNone, nil
	}
	id, err := NewWakeID(m.machine().rand())
	if err != nil {
		return DSNone, err
	}
	st := &s.State
	*st = DSState{Phase: DSWaking, Generation: st.Generation + 1, WakeID: id}
	for i := range s.Links {
		s.Links[i].Notified = tails.of(s.Links[i].Path)
	}
	if s.Type == DSTypeWebhook {
		st.LeaseUntil = now.Add(s.Lease)
		return m.attempt(s, now), nil
	}
	// The effect writes the event now; the deadline writes it again
	// only if its writer died before recording it.
	st.NextAttemptAt = now.Add(DSWakeAppendRetry)
	return DSAppendWake, nil
}

// attempt starts a webhook attempt of the current wake.
func (m *DSMachine) attempt(s *DSSub, now time.Time) DSEffect {
	s.State.Attempts++
	s.State.Sending = true
	s.State.NextAttemptAt = now.Add(DSAttemptTimeout)
	return DSSendWebhook
}

// Tick fires the due deadlines: an expired lease clears the holder and
// the wake (a new one follows when work is pending), a webhook attempt
// past its deadline counts as failed, a due retry is sent, a wake event
// not recorded as written is written again.
func (m *DSMachine) Tick(s *DSSub, tails Tails, now time.Time) (DSEffect, error) {
	st := &s.State
	attemptDue := !st.NextAttemptAt.IsZero() && !now.Before(st.NextAttemptAt)
	if s.Type == DSTypePullWake && st.Phase != DSIdle && !st.WakeWritten && attemptDue {
		// The wake's event is owed (its writer died, or failed).
		st.NextAttemptAt = now.Add(DSWakeAppendRetry)
		return DSAppendWake, nil
	}
	switch st.Phase {
	case DSLive:
		if !now.Before(st.LeaseUntil) {
			m.idle(s)
		}
	case DSWaking:
		if s.Type != DSTypeWebhook || !attemptDue {
			break
		}
		if st.Sending {
			if err := m.fail(s, now); err != nil {
				return DSNone, err
			}
			return DSNone, nil
		}
		return m.attempt(s, now), nil
	}
	return m.Settle(s, tails, now)
}

// WakeWritten records that the wake event of generation gen is in the
// wake stream.
func (m *DSMachine) WakeWritten(s *DSSub, gen int64) {
	if s.State.Phase != DSIdle && s.State.Generation == gen {
		s.State.WakeWritten = true
		s.State.NextAttemptAt = time.Time{}
	}
}

// WebhookResult applies the answer to attempt of the wake (gen, wakeID):
// a 2xx with {"done": true} acks every stream to the wake's snapshot and
// ends the wake (a new one follows when work is pending); any other 2xx
// holds the lease until callbacks end it; a failure schedules a retry.
// The answer of an earlier wake or attempt changes nothing.
func (m *DSMachine) WebhookResult(s *DSSub, gen int64, wakeID string, attempt int, delivered, done bool, tails Tails, now time.Time) (DSEffect, error) {
	st := &s.State
	if st.Generation != gen || st.WakeID != wakeID || st.Phase != DSWaking || st.Attempts != attempt || !st.Sending {
		return DSNone, nil
	}
	switch {
	case delivered && done:
		for i := range s.Links {
			l := &s.Links[i]
			if l.Notified != "" && m.machine().CompareOffsets(l.Notified, l.Acked) > 0 {
				l.Acked = l.Notified
			}
		}
		m.idle(s)
		return m.Settle(s, tails, now)
	case delivered:
		st.Phase = DSLive
		st.Sending, st.Failed = false, false
		st.NextAttemptAt = time.Time{}
		return DSNone, nil
	}
	return DSNone, m.fail(s, now)
}

// fail records a failed webhook attempt and schedules its retry.
func (m *DSMachine) fail(s *DSSub, now time.Time) error {
	d, err := m.retryDelay(s.State.Attempts)
	if err != nil {
		return err
	}
	s.State.Sending = false
	s.State.Failed = true
	s.State.NextAttemptAt = now.Add(d)
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
	st := &s.State
	if st.Phase == DSLive && now.Before(st.LeaseUntil) {
		return DSNone, &ClaimedError{Holder: st.Holder, Generation: st.Generation}
	}
	if st.Phase == DSLive {
		m.idle(s)
	}
	eff, err := m.Settle(s, tails, now)
	if err != nil {
		return DSNone, err
	}
	if st.Phase != DSWaking {
		return DSNone, ErrNothingToClaim
	}
	// A wake issued by this claim is taken at once; its event is still
	// written, so the wake stream records every generation.
	st.Phase = DSLive
	st.Holder = worker
	st.LeaseUntil = now.Add(s.Lease)
	return eff, nil
}

// fence checks that a callback, ack or release speaks for the current
// wake (ErrFenced otherwise).
func (m *DSMachine) fence(s *DSSub, gen int64, wakeID string) error {
	st := &s.State
	if st.Phase == DSIdle || gen != st.Generation || wakeID == "" || wakeID != st.WakeID {
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
		l := s.link(a.Path)
		if l == nil {
			return DSNone, false, fmt.Errorf("%w: stream %s is not linked to the subscription", ErrInvalidOffset, a.Path)
		}
		if err := mm.checkAck(a.Path, a.Offset, tails.of(a.Path)); err != nil {
			return DSNone, false, err
		}
		if mm.CompareOffsets(a.Offset, l.Acked) > 0 {
			l.Acked = a.Offset
		}
	}
	st := &s.State
	if !done {
		// A callback claims a webhook's wake; every valid call extends
		// the lease.
		st.Phase = DSLive
		st.Sending, st.Failed = false, false
		st.NextAttemptAt = time.Time{}
		st.LeaseUntil = now.Add(s.Lease)
		return DSNone, false, nil
	}
	m.idle(s)
	eff, err = m.Settle(s, tails, now)
	return eff, st.Phase != DSIdle, err
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

// idle ends the wake: no holder, no lease, no attempt.
func (m *DSMachine) idle(s *DSSub) {
	s.State = DSState{Phase: DSIdle, Generation: s.State.Generation, WakeID: s.State.WakeID}
}

func (s *DSSub) link(path string) *DSLink {
	for i := range s.Links {
		if s.Links[i].Path == path {
			return &s.Links[i]
		}
	}
	return nil
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
