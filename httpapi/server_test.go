package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/store"
)

func TestSecurityAndCORSHeadersOnEveryResponse(t *testing.T) {
	f := &fakeStore{t: t, get: func(*store.StreamGetParams) (*store.Stream, error) { return nil, store.ErrNotFound }}
	s := newTestServer(f, Config{})
	for _, c := range []struct{ method, target string }{
		{"HEAD", "/v1/missing"},           // store error
		{"GET", "/v1/a/../b"},             // request error
		{"PUT", "/_herald/nothing"},       // reserved path
		{"GET", "/_herald/healthz"},       // Herald's own API
		{"PATCH", "/v1/s"},                // unknown method
		{"OPTIONS", "/v1/s"},              // preflight
		{"GET", "/v1/s?subscription=abc"}, // subscription API
	} {
		// A browser's cross-origin request carries Origin: CORS headers.
		w := do(s, c.method, c.target, nil, map[string]string{"Origin": "https://app.example"})
		h := w.Header()
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cross-Origin-Resource-Policy") != "cross-origin" || h.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s %s: missing security or CORS headers: %v", c.method, c.target, h)
		}
		if !strings.Contains(h.Get("Access-Control-Expose-Headers"), "Stream-Next-Offset") {
			t.Errorf("%s %s: Stream-Next-Offset not exposed to browsers", c.method, c.target)
		}
		// Without Origin (servers, SDKs): security headers, no CORS bytes.
		w = do(s, c.method, c.target, nil, nil)
		h = w.Header()
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cross-Origin-Resource-Policy") != "cross-origin" {
			t.Errorf("%s %s without Origin: missing security headers: %v", c.method, c.target, h)
		}
		if h.Get("Access-Control-Expose-Headers") != "" {
			t.Errorf("%s %s without Origin: CORS headers sent: %v", c.method, c.target, h)
		}
	}
}

func TestPreflight(t *testing.T) {
	s := newTestServer(&fakeStore{t: t}, Config{})
	w := do(s, "OPTIONS", "/v1/s", nil, map[string]string{
		"Origin": "https://example.com", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "if-none-match",
	})
	if w.Code != http.StatusNoContent || !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "if-none-match") ||
		!strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "PUT") {
		t.Errorf("preflight = %d %v", w.Code, w.Header())
	}
	w = do(s, "OPTIONS", "/v1/s", nil, map[string]string{"Origin": "https://example.com", "Access-Control-Request-Method": "POST"})
	for _, want := range []string{"If-None-Match", "Producer-Id", "Stream-Closed"} {
		if !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), want) {
			t.Errorf("default allowed headers lack %s: %q", want, w.Header().Get("Access-Control-Allow-Headers"))
		}
	}
}

func TestUnknownMethod(t *testing.T) {
	s := newTestServer(&fakeStore{t: t}, Config{})
	w := do(s, "PATCH", "/v1/s", nil, nil)
	expectError(t, w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	if !strings.Contains(w.Header().Get("Allow"), "POST") {
		t.Errorf("Allow = %q", w.Header().Get("Allow"))
	}
}

func TestReservedPaths(t *testing.T) {
	s := newTestServer(&fakeStore{t: t}, Config{})
	s.Handle("GET /_herald/v1/hello", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	s.Handle("POST /callback/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}))
	if w := do(s, "GET", "/_herald/v1/hello", nil, nil); w.Code != http.StatusTeapot {
		t.Errorf("mounted route = %d", w.Code)
	}
	if w := do(s, "POST", "/callback/c-1", nil, nil); w.Code != http.StatusAccepted {
		t.Errorf("mounted callback route = %d", w.Code)
	}
	// Stream operations under reserved prefixes never reach the store.
	for _, c := range []struct{ method, target string }{
		{"PUT", "/_herald/v1/hello"}, {"PUT", "/_herald"}, {"POST", "/_herald/stream"},
		{"GET", "/callback/c-1"}, {"PUT", "/callback/x"}, {"DELETE", "/callback"},
	} {
		expectError(t, do(s, c.method, c.target, nil, nil), http.StatusNotFound, "RESERVED_PATH")
	}
}

func TestHandleRejectsStreamPaths(t *testing.T) {
	s := newTestServer(&fakeStore{t: t}, Config{})
	for _, pattern := range []string{"/v1/x", "GET /streams/{id}", "/_heraldx/y"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Handle(%q) did not panic", pattern)
				}
			}()
			s.Handle(pattern, http.NotFoundHandler())
		}()
	}
}

func TestSubscriptionRequests(t *testing.T) {
	s := newTestServer(&fakeStore{t: t}, Config{})
	targets := []string{"/v1/*?subscription=sub-1", "/v1/x?subscriptions", "/v1/stream/__ds/subscriptions/sub-1", "/__ds/jwks.json"}
	for _, target := range targets {
		expectError(t, do(s, "PUT", target, nil, nil), http.StatusNotFound, "SUBSCRIPTIONS_UNAVAILABLE")
	}
	var got []string
	s.HandleSubscriptions(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RequestURI())
		w.WriteHeader(http.StatusOK)
	}))
	for _, target := range targets {
		if w := do(s, "PUT", target, nil, nil); w.Code != http.StatusOK {
			t.Errorf("%s = %d", target, w.Code)
		}
	}
	if len(got) != len(targets) {
		t.Errorf("subscription handler saw %v", got)
	}
	// Query parameters that merely contain the word stay stream requests.
	f := &fakeStore{t: t, delete: func(*store.StreamDeleteParams) error { return store.ErrNotFound }}
	s = newTestServer(f, Config{})
	s.HandleSubscriptions(http.NotFoundHandler())
	expectError(t, do(s, "DELETE", "/v1/x?my_subscription_id=1", nil, nil), http.StatusNotFound, "STREAM_NOT_FOUND")
}

func TestHealthAndReadiness(t *testing.T) {
	s := newTestServer(&fakeStore{t: t}, Config{})
	check := func(path string, want int) {
		t.Helper()
		if w := do(s, "GET", path, nil, nil); w.Code != want {
			t.Errorf("%s = %d, want %d", path, w.Code, want)
		}
	}
	check("/_herald/healthz", http.StatusOK)
	check("/_herald/readyz", http.StatusOK)
	s.SetReady(false)
	check("/_herald/readyz", http.StatusServiceUnavailable)
	s.SetReady(true)
	check("/_herald/readyz", http.StatusOK)
	s.Shutdown()
	s.Shutdown() // idempotent
	check("/_herald/readyz", http.StatusServiceUnavailable)
	check("/_herald/healthz", http.StatusOK)
}
