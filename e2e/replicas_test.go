package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/secretbox"
)

// limitReceiver accepts every webhook after hold, recording when each
// arrived and the most requests it held at once.
type limitReceiver struct {
	hold    time.Duration
	mu      sync.Mutex
	at      []time.Time
	running int
	peak    int
}

func (rc *limitReceiver) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	rc.mu.Lock()
	rc.at = append(rc.at, time.Now())
	rc.running++
	rc.peak = max(rc.peak, rc.running)
	rc.mu.Unlock()
	time.Sleep(rc.hold)
	rc.mu.Lock()
	rc.running--
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *limitReceiver) snapshot() (at []time.Time, peak int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]time.Time(nil), rc.at...), rc.peak
}

// waitArrivals waits until the arrival times satisfy done, or fails after
// timeout with the replicas' logs, and returns them.
func waitArrivals(t *testing.T, rc *limitReceiver, timeout time.Duration, done func([]time.Time) bool, replicas ...*server) []time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		at, _ := rc.snapshot()
		if done(at) {
			return at
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, r := range replicas {
				logs.WriteString(r.logs.String())
			}
			t.Fatalf("%d deliveries after %v, still waiting\n%s", len(at), timeout, logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a receiver fed by other processes
	}
}

// startReplicas starts n herald serve replicas on one fresh PostgreSQL
// schema, sharing the first one's key-encryption key, each with the
// extra flags.
func startReplicas(t *testing.T, n int, extra ...string) []*server {
	t.Helper()
	pg := postgresURL(t)
	kek := filepath.Join(t.TempDir(), secretbox.DefaultFileName)
	out := make([]*server, n)
	for i := range out {
		flags := append([]string{"--store", "postgres", "--postgres-url", pg, "--kek-file", kek}, extra...)
		out[i] = startHerald(t, t.TempDir(), flags...)
	}
	return out
}

// publishAlternating publishes n events to the stream, alternating the
// replicas, so both match and send.
func publishAlternating(t *testing.T, replicas []*server, stream string, n int) {
	t.Helper()
	for i := range n {
		base := replicas[i%len(replicas)].base
		resp, out := do(t, "POST", base+"/_herald/v1/events", map[string]string{"Content-Type": "application/json"},
			fmt.Sprintf(`{"id":"e-%d","type":"limit.event","stream":%q,"data":{"i":%d}}`, i, stream, i))
		if resp.StatusCode/100 != 2 {
			t.Fatalf("publish %d: %d %s", i, resp.StatusCode, out)
		}
	}
}

// An endpoint's rate_limit holds across two replicas together: 10
// deliveries a second in all, not 10 each. Not parallel: it measures a
// rate, which other tests' load on the machine would lower.
func TestReplicasShareRateLimit(t *testing.T) {
	r := startReplicas(t, 2, deliveryFlags...)
	a, b := r[0], r[1]
	rc := &limitReceiver{}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	createEndpoint(t, a.base, fmt.Sprintf(`{"url":%q,"streams":["/rate"],"event_types":["limit.*"],"rate_limit":10}`, hook.URL+"/hook"))
	const n, window = 80, 3 * time.Second
	publishAlternating(t, []*server{a, b}, "/rate", n)
	// The window is whole once a delivery arrived after it (or all did).
	at := waitArrivals(t, rc, 30*time.Second, func(at []time.Time) bool {
		return len(at) == n || (len(at) > 0 && at[len(at)-1].Sub(at[0]) >= window)
	}, a, b)
	in := 0
	for _, x := range at {
		if x.Sub(at[0]) < window {
			in++
		}
	}
	rate := float64(in) / window.Seconds()
	t.Logf("two replicas delivered %d in the first %v: %.1f/s (rate_limit 10)", in, window, rate)
	// At 10/s a 3 s window holds 30 (one more from the burst); at 10/s
	// per replica it would hold 60.
	if in < 24 || in > 36 {
		t.Fatalf("%d deliveries in %v (%.1f/s), want about 30 (10/s across both replicas)", in, window, rate)
	}
}

// An endpoint's max_in_flight holds across two replicas together: the
// receiver never holds more than 2 requests at once.
func TestReplicasShareMaxInFlight(t *testing.T) {
	t.Parallel()
	r := startReplicas(t, 2, deliveryFlags...)
	a, b := r[0], r[1]
	rc := &limitReceiver{hold: 150 * time.Millisecond}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	createEndpoint(t, a.base, fmt.Sprintf(`{"url":%q,"streams":["/busy"],"event_types":["limit.*"],"max_in_flight":2}`, hook.URL+"/hook"))
	const n = 30
	publishAlternating(t, []*server{a, b}, "/busy", n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		at, peak := rc.snapshot()
		if peak > 2 {
			t.Fatalf("%d requests in flight at once, max_in_flight is 2", peak)
		}
		if len(at) >= n {
			t.Logf("%d deliveries, at most %d at once", len(at), peak)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d delivered\n%s\n%s", len(at), n, a.logs, b.logs)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
