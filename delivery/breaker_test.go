package delivery

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestBreakerTripsAtThreshold(t *testing.T) {
	t.Parallel()
	b := Breaker{}
	var h Health
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i < DefaultBreakerThreshold; i++ {
		var sig Signal
		h, sig = b.Observe(h, Observation{At: at, Error: fmt.Sprintf("HTTP 503 #%d", i)})
		if sig != SignalNone || h.Disabled() {
			t.Fatalf("failure %d: signal %v, disabled %v", i, sig, h.Disabled())
		}
		at = at.Add(time.Minute)
	}
	h, sig := b.Observe(h, Observation{At: at, Error: "HTTP 503 last"})
	if sig != SignalTrip {
		t.Fatalf("failure %d: signal %v, want trip", DefaultBreakerThreshold, sig)
	}
	if !h.DisabledAt.Equal(at) || !h.Disabled() {
		t.Fatalf("DisabledAt = %v, want %v", h.DisabledAt, at)
	}
	if !strings.Contains(h.DisabledReason, "10 consecutive failed attempts") || !strings.Contains(h.DisabledReason, "HTTP 503 last") {
		t.Fatalf("reason = %q", h.DisabledReason)
	}

	// Further failures and even a late success do not trip again or
	// re-enable: the owner must.
	h, sig = b.Observe(h, Observation{At: at.Add(time.Minute), Error: "again"})
	if sig != SignalNone || h.ConsecutiveFailures != 11 || !h.DisabledAt.Equal(at) {
		t.Fatalf("after trip: signal %v, failures %d, disabled at %v", sig, h.ConsecutiveFailures, h.DisabledAt)
	}
	h, sig = b.Observe(h, Observation{Success: true, At: at.Add(2 * time.Minute)})
	if sig != SignalNone || !h.Disabled() || h.ConsecutiveFailures != 0 {
		t.Fatalf("late success: signal %v, disabled %v, failures %d", sig, h.Disabled(), h.ConsecutiveFailures)
	}

	h = b.Reenable(h)
	if h.Disabled() || h.DisabledReason != "" || h.ConsecutiveFailures != 0 {
		t.Fatalf("after Reenable: %+v", h)
	}
	if h.LastFailureAt.IsZero() || h.LastSuccessAt.IsZero() {
		t.Fatal("Reenable dropped the history")
	}
}

func TestBreakerSuccessResets(t *testing.T) {
	t.Parallel()
	b := Breaker{Threshold: 3}
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var h Health
	var sig Signal
	h, _ = b.Observe(h, Observation{At: at, Error: "x"})
	h, _ = b.Observe(h, Observation{At: at, Error: "x"})
	h, sig = b.Observe(h, Observation{Success: true, At: at.Add(time.Second)})
	if sig != SignalRecover || h.ConsecutiveFailures != 0 || !h.LastSuccessAt.Equal(at.Add(time.Second)) {
		t.Fatalf("success after failures: signal %v, health %+v", sig, h)
	}
	h, sig = b.Observe(h, Observation{Success: true, At: at.Add(2 * time.Second)})
	if sig != SignalNone {
		t.Fatalf("success after success: signal %v, want none", sig)
	}
	// The count starts again: two more failures do not trip a threshold
	// of three.
	h, _ = b.Observe(h, Observation{At: at, Error: "x"})
	h, sig = b.Observe(h, Observation{At: at, Error: "x"})
	if sig != SignalNone || h.Disabled() {
		t.Fatal("tripped on a count that a success had reset")
	}
	if _, sig = b.Observe(h, Observation{At: at, Error: "x"}); sig != SignalTrip {
		t.Fatalf("third failure: signal %v, want trip", sig)
	}
}

func TestBreakerCapsStoredError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 1000) // 2000 bytes
	h, _ := Breaker{}.Observe(Health{}, Observation{At: time.Unix(0, 0), Error: long})
	if len(h.LastError) > maxHealthErrorLen || !strings.HasPrefix(long, h.LastError) {
		t.Fatalf("LastError is %d bytes or split a character", len(h.LastError))
	}
	if got := SignalTrip.String() + SignalRecover.String() + SignalNone.String(); got != "triprecovernone" {
		t.Fatalf("signal names = %q", got)
	}
}
