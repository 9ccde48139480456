package e2e

import (
	"testing"
	"time"
)

// TestChaosTakeoverMeasure: of the deliveries a killed replica held, one
// sent again counts from the kill to its next arrival; one never sent
// again counts until now, unless it was answered 2xx before the kill
// (the replica recorded it between the look at its requests and its
// death: rightly never sent again), which is left out. Counting such a
// delivery until the end of the test made TestReplicaChaos report a
// takeover of a minute where every delivery the replica left was sent
// again within seconds.
func TestChaosTakeoverMeasure(t *testing.T) {
	t.Parallel()
	kill := time.Now().Add(-time.Minute)
	rc := newChaosReceiver(0)
	rc.arrivals = map[string][]time.Time{
		"resent":   {kill.Add(-time.Second), kill.Add(9 * time.Second)},
		"recorded": {kill.Add(-time.Second)},
		"lost":     {kill.Add(-time.Second)},
		"late":     {kill.Add(-time.Second), kill.Add(12 * time.Second)},
	}
	rc.answered = map[string]time.Time{
		"recorded": kill.Add(-time.Millisecond),
		"late":     kill.Add(-time.Millisecond), // answered, yet not recorded: sent again
		"resent":   kill.Add(10 * time.Second),
	}
	if got := rc.takeover(kill, []string{"resent", "recorded", "late"}); got != 12*time.Second {
		t.Fatalf("takeover = %v, want 12s (the delivery recorded before the kill left out)", got)
	}
	if got := rc.takeover(kill, []string{"resent", "lost"}); got < time.Minute {
		t.Fatalf("takeover = %v, want a minute or more: a delivery never answered nor sent again counts until now", got)
	}
}
