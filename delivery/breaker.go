package delivery

import (
	"fmt"
	"time"
)

// DefaultBreakerThreshold is how many consecutive failed attempts disable an
// endpoint (docs/delivery.md, Circuit breaker).
const DefaultBreakerThreshold = 10

// maxHealthErrorLen caps the last error kept in Health.
const maxHealthErrorLen = 1024

// Health is an endpoint's circuit breaker state, stored with the endpoint.
type Health struct {
	// ConsecutiveFailures counts failed attempts since the last success,
	// across all of the endpoint's deliveries.
	ConsecutiveFailures int
	LastSuccessAt       time.Time
	LastFailureAt       time.Time
	LastError           string
	// DisabledAt is when the breaker tripped, zero while enabled.
	DisabledAt time.Time
	// DisabledReason says why, "" while enabled.
	DisabledReason string
}

// Disabled reports whether the breaker has tripped.
func (h Health) Disabled() bool { return !h.DisabledAt.IsZero() }

// Signal is what the engine must do after an observation.
type Signal int

// Breaker signals.
const (
	// SignalNone: nothing beyond storing the new Health.
	SignalNone Signal = iota
	// SignalTrip: disable the endpoint now (stop creating and attempting
	// its deliveries); Health carries the reason and time.
	SignalTrip
	// SignalRecover: a success ended a run of failures.
	SignalRecover
)

func (s Signal) String() string {
	switch s {
	case SignalNone:
		return "none"
	case SignalTrip:
		return "trip"
	case SignalRecover:
		return "recover"
	}
	return fmt.Sprintf("Signal(%d)", int(s))
}

// Observation is the outcome of one delivery attempt.
type Observation struct {
	Success bool
	At      time.Time
	// Error describes a failure ("HTTP 503", "dial tcp: timeout").
	Error string
}

// Breaker is a pure circuit breaker: it takes an endpoint's Health and one
// attempt's outcome and returns the new Health and a signal; the engine
// stores the one and acts on the other. A success resets the count; the
// Threshold-th consecutive failure trips it. A tripped breaker stays
// tripped, even through a late success, until the endpoint is re-enabled
// by its owner (Reenable).
type Breaker struct {
	// Threshold is the number of consecutive failures that trips the
	// breaker; 0 or less means DefaultBreakerThreshold.
	Threshold int
}

func (b Breaker) threshold() int {
	if b.Threshold <= 0 {
		return DefaultBreakerThreshold
	}
	return b.Threshold
}

// Observe records one attempt's outcome.
func (b Breaker) Observe(h Health, o Observation) (Health, Signal) {
	if o.Success {
		recovered := h.ConsecutiveFailures > 0 && !h.Disabled()
		h.ConsecutiveFailures = 0
		h.LastSuccessAt = o.At
		if recovered {
			return h, SignalRecover
		}
		return h, SignalNone
	}
	h.ConsecutiveFailures++
	h.LastFailureAt = o.At
	h.LastError = truncateUTF8(o.Error, maxHealthErrorLen)
	if h.Disabled() || h.ConsecutiveFailures < b.threshold() {
		return h, SignalNone
	}
	h.DisabledAt = o.At
	h.DisabledReason = fmt.Sprintf("%d consecutive failed attempts; last error: %s", h.ConsecutiveFailures, h.LastError)
	return h, SignalTrip
}

// Reenable is the owner turning a disabled endpoint back on: the breaker
// closes and the count starts again from zero. History is kept.
func (b Breaker) Reenable(h Health) Health {
	h.ConsecutiveFailures = 0
	h.DisabledAt = time.Time{}
	h.DisabledReason = ""
	return h
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
