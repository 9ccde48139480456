package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// hungReceiver accepts requests and never answers them until released,
// counting how many it holds at once.
type hungReceiver struct {
	release chan struct{}
	mu      sync.Mutex
	held    int
	maxHeld int
	changed chan struct{}
}

func newHungReceiver(t *testing.T) (*hungReceiver, *httptest.Server) {
	h := &hungReceiver{release: make(chan struct{}), changed: make(chan struct{}, 1)}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(h.release) }) // runs first: frees the handlers so Close returns
	return h, srv
}

func (h *hungReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.held++
	h.maxHeld = max(h.maxHeld, h.held)
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
	select {
	case <-h.release:
	case <-r.Context().Done():
	}
	h.mu.Lock()
	h.held--
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// waitHeld waits until the receiver holds at least n requests.
func (h *hungReceiver) waitHeld(t *testing.T, n int, timeout time.Duration, logs fmt.Stringer) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		held := h.held
		h.mu.Unlock()
		if held >= n {
			return
		}
		select {
		case <-h.changed:
		case <-deadline:
			t.Fatalf("the hung receiver holds %d requests, want %d\n%s", held, n, logs)
		}
	}
}

// An endpoint that never answers holds at most its share of the global
// send pool (a quarter), whatever its max_in_flight, so another endpoint's
// events go out at once rather than after the hung sends time out.
func TestDeliveryHungEndpointDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	hung, hungSrv := newHungReceiver(t)
	healthy, healthySrv := newEventReceiver(t)
	// A long attempt timeout: a starved endpoint would wait for it.
	s := startHerald(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8",
		"--delivery-timeout", "30s", "--delivery-lease", "40s", "--delivery-max-in-flight", "8")
	const share = 2 // 8 / 4

	createEndpoint(t, s.base, `{"url":"`+hungSrv.URL+`/hooks","streams":["/hung"],"max_in_flight":8}`)
	for i := range 20 {
		publishEvent(t, s.base, fmt.Sprintf(`{"id":"hung-%d","type":"t.hung","stream":"/hung","data":{"i":%d}}`, i, i))
	}
	hung.waitHeld(t, share, 10*time.Second, s.logs)

	var secret string
	_, secret = createEndpoint(t, s.base, `{"url":"`+healthySrv.URL+`/hooks","streams":["/ok"]}`)
	healthy.mu.Lock()
	healthy.secret = secret
	healthy.mu.Unlock()
	start := time.Now()
	var ids []string
	for i := range 10 {
		id := fmt.Sprintf("ok-%d", i)
		ids = append(ids, id)
		publishEvent(t, s.base, fmt.Sprintf(`{"id":%q,"type":"t.ok","stream":"/ok","data":{"i":%d}}`, id, i))
	}
	healthy.waitFor(ids, 3*time.Second, s.logs)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the healthy endpoint's 10 events took %v beside a hung endpoint", took)
	}

	hung.mu.Lock()
	maxHeld := hung.maxHeld
	hung.mu.Unlock()
	if maxHeld != share {
		t.Fatalf("the hung endpoint held %d sends at once, want its share %d of --delivery-max-in-flight 8", maxHeld, share)
	}
}

// publishEvent publishes one event through the API and wants a 202.
func publishEvent(t *testing.T, base, body string) {
	t.Helper()
	resp, out := do(t, "POST", base+"/_herald/v1/events", map[string]string{"Content-Type": "application/json"}, body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish: %d %s", resp.StatusCode, out)
	}
}
