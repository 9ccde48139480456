package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/store"
)

// Stream responses carry the browser security headers, and CORS headers
// for a browser's request: any origin ("*") with access control on, the
// loopback page's own origin with it off.
func TestSecurityAndCORSHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	f := &fakeStore{t: t, get: func(*store.StreamGetParams) (*store.Stream, error) { return nil, store.ErrNotFound }}
	on, err := auth.New(auth.Config{AdminKey: strings.Repeat("a", auth.MinAdminKeyLength)})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		auth        *auth.Authenticator
		origin, acl string
	}{
		{on, "https://app.example", "*"},
		{nil, "http://localhost:5173", "http://localhost:5173"},
	} {
		testSecurityAndCORSHeaders(t, newTestServer(f, Config{Auth: mode.auth}), mode.origin, mode.acl)
	}
}

func testSecurityAndCORSHeaders(t *testing.T, s *Server, origin, allowOrigin string) {
	t.Helper()
	for _, c := range []struct{ method, target string }{
		{"HEAD", "/v1/missing"}, // store error
		{"GET", "/v1/a/../b"},   // request error
		{"PATCH", "/v1/s"},      // unknown method
		{"OPTIONS", "/v1/s"},    // preflight
	} {
		// A browser's cross-origin request carries Origin: CORS headers.
		w := do(s, c.method, c.target, nil, map[string]string{"Origin": origin, "Authorization": "Bearer " + strings.Repeat("a", auth.MinAdminKeyLength)})
		h := w.Header()
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cross-Origin-Resource-Policy") != "cross-origin" || h.Get("Access-Control-Allow-Origin") != allowOrigin {
			t.Errorf("%s %s from %s: missing security or CORS headers: %v", c.method, c.target, origin, h)
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

// Herald's own API and the subscription routes answer no CORS wildcard:
// a foreign origin is refused, Herald's own origin and the configured ones
// are echoed.
func TestManagementRoutesRefuseForeignOrigins(t *testing.T) {
	t.Parallel()
	f := &fakeStore{t: t, get: func(*store.StreamGetParams) (*store.Stream, error) { return nil, store.ErrNotFound }}
	on, err := auth.New(auth.Config{AdminKey: strings.Repeat("a", auth.MinAdminKeyLength)})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(f, Config{Auth: on, CORSOrigins: []string{"https://console.example"}})
	s.Mount(APIs{Subscriptions: &fakeSubscriptions{}})
	for _, target := range []string{"/_herald/nothing", "/_herald/healthz", "/v1/s?subscription=abc", "/callback/x"} {
		for _, method := range []string{"GET", "PUT", "OPTIONS"} {
			// A foreign origin; a loopback page, which only development
			// mode answers; the listed origin on another scheme or port;
			// Herald's own host on the scheme it is not served on.
			for _, origin := range []string{"https://evil.example", "http://localhost:3000", "http://console.example", "https://console.example:8443", "https://example.com"} {
				w := do(s, method, target, nil, map[string]string{"Origin": origin})
				if w.Code != http.StatusForbidden || errorCode(t, w) != "ORIGIN_NOT_ALLOWED" || w.Header().Get("Access-Control-Allow-Origin") != "" {
					t.Errorf("%s %s from %s: %d %v", method, target, origin, w.Code, w.Header())
				}
			}
			w := do(s, method, target, nil, map[string]string{"Origin": "https://evil.example"})
			if w.Code != http.StatusForbidden || errorCode(t, w) != "ORIGIN_NOT_ALLOWED" || w.Header().Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("%s %s from a foreign origin: %d %v", method, target, w.Code, w.Header())
			}
			if h := w.Header(); h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s %s: security headers missing: %v", method, target, h)
			}
		}
		for _, origin := range []string{"https://console.example", "http://example.com"} { // configured; the server's own (httptest's Host)
			w := do(s, "OPTIONS", target, nil, map[string]string{"Origin": origin, "Access-Control-Request-Method": "PATCH"})
			if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != origin || w.Header().Get("Vary") != "Origin" ||
				!strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "PATCH") {
				t.Errorf("preflight %s from %s: %d %v", target, origin, w.Code, w.Header())
			}
		}
	}
}

// Herald's API takes JSON bodies only: a text/plain or form POST, which a
// browser sends cross-site without a preflight, is 415.
func TestManagementBodiesMustBeJSON(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	s.Mount(APIs{Keys: []Route{{Method: http.MethodPost, Pattern: "/_herald/v1/things", Rule: auth.Rule{Scope: auth.ScopeAdmin}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})}}})
	for ct, want := range map[string]int{
		"":                                  http.StatusUnsupportedMediaType,
		"text/plain":                        http.StatusUnsupportedMediaType,
		"application/x-www-form-urlencoded": http.StatusUnsupportedMediaType,
		"multipart/form-data; boundary=x":   http.StatusUnsupportedMediaType,
		"application/json":                  http.StatusCreated,
		"application/json; charset=utf-8":   http.StatusCreated,
		"application/merge-patch+json":      http.StatusCreated,
	} {
		w := do(s, "POST", "/_herald/v1/things", strings.NewReader(`{}`), map[string]string{"Content-Type": ct})
		if w.Code != want {
			t.Errorf("Content-Type %q: status %d, want %d: %s", ct, w.Code, want, w.Body)
		}
		if want == http.StatusUnsupportedMediaType && errorCode(t, w) != "UNSUPPORTED_MEDIA_TYPE" {
			t.Errorf("Content-Type %q: code %s", ct, errorCode(t, w))
		}
	}
	// No body, no Content-Type needed.
	if w := do(s, "POST", "/_herald/v1/things", nil, nil); w.Code != http.StatusCreated {
		t.Errorf("empty POST: %d", w.Code)
	}
}

// With --allowed-hosts, another Host (a rebound DNS name) is refused on
// every route.
func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t, get: func(*store.StreamGetParams) (*store.Stream, error) { return nil, store.ErrNotFound }},
		Config{AllowedHosts: []string{"localhost", "127.0.0.1", "::1"}})
	for host, ok := range map[string]bool{
		"localhost:4437": true, "LOCALHOST": true, "127.0.0.1:1": true, "[::1]:4437": true, "localhost.": true,
		"evil.example": false, "evil.example:4437": false, "127.0.0.2": false, "": false,
	} {
		for target, method := range map[string]string{"/v1/s": "HEAD", "/_herald/healthz": "GET"} {
			r := httptest.NewRequest(method, target, nil)
			r.Host = host
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if refused := w.Code == http.StatusMisdirectedRequest; refused == ok {
				t.Errorf("Host %q %s: status %d", host, target, w.Code)
			}
			if !ok && method == "GET" && errorCode(t, w) != "HOST_NOT_ALLOWED" {
				t.Errorf("Host %q: code %s", host, errorCode(t, w))
			}
		}
	}
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	w := do(s, "OPTIONS", "/v1/s", nil, map[string]string{
		"Origin": "http://example.com", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "if-none-match",
	})
	if w.Code != http.StatusNoContent || !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "if-none-match") ||
		!strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "PUT") {
		t.Errorf("preflight = %d %v", w.Code, w.Header())
	}
	w = do(s, "OPTIONS", "/v1/s", nil, map[string]string{"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"})
	for _, want := range []string{"If-None-Match", "Producer-Id", "Stream-Closed"} {
		if !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), want) {
			t.Errorf("default allowed headers lack %s: %q", want, w.Header().Get("Access-Control-Allow-Headers"))
		}
	}
}

func TestUnknownMethod(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	w := do(s, "PATCH", "/v1/s", nil, nil)
	expectError(t, w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	if !strings.Contains(w.Header().Get("Allow"), "POST") {
		t.Errorf("Allow = %q", w.Header().Get("Allow"))
	}
}

func TestReservedPaths(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	s.Mount(APIs{Keys: []Route{
		{Method: http.MethodGet, Pattern: "/_herald/v1/hello", Rule: auth.Rule{Public: true}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTeapot)
		})},
		{Method: http.MethodPost, Pattern: "/callback/{id}", Rule: auth.Rule{CallbackToken: true}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
		})},
	}})
	if w := do(s, "GET", "/_herald/v1/hello", nil, nil); w.Code != http.StatusTeapot {
		t.Errorf("mounted route = %d", w.Code)
	}
	if w := do(s, "POST", "/callback/c-1", nil, nil); w.Code != http.StatusAccepted {
		t.Errorf("mounted callback route = %d", w.Code)
	}
	// Requests under reserved prefixes never reach the store. A stream
	// create there is RESERVED_PATH; a path without a route NOT_FOUND; a
	// route's path with another method 405 with the route's methods.
	for _, c := range []struct {
		method, target string
		status         int
		code, allow    string
	}{
		{"PUT", "/_herald", http.StatusNotFound, "RESERVED_PATH", ""},
		{"PUT", "/_herald/v1/stream", http.StatusNotFound, "RESERVED_PATH", ""},
		{"PUT", "/callback", http.StatusNotFound, "RESERVED_PATH", ""},
		{"GET", "/_herald/v1/nothing-here", http.StatusNotFound, "NOT_FOUND", ""},
		{"POST", "/_herald/stream", http.StatusNotFound, "NOT_FOUND", ""},
		{"DELETE", "/callback", http.StatusNotFound, "NOT_FOUND", ""},
		{"GET", "/_herald/", http.StatusNotFound, "NOT_FOUND", ""},
		{"PUT", "/_herald/v1/hello", http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "GET, HEAD, OPTIONS"},
		{"DELETE", "/_herald/v1/hello", http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "GET, HEAD, OPTIONS"},
		{"GET", "/callback/c-1", http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "POST, OPTIONS"},
	} {
		w := do(s, c.method, c.target, nil, nil)
		expectError(t, w, c.status, c.code)
		if got := w.Header().Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow = %q, want %q", c.method, c.target, got, c.allow)
		}
	}
}

// TestReservedRoutesHaveOneSpelling: an escape that is not needed
// anywhere in a reserved path (not only in its prefix), a lower-case one,
// or an encoded slash outside a consumer id is 400 NON_CANONICAL_PATH,
// never the route its decoded form names; nor does a stream path that
// decodes into a reserved prefix reach a reserved route or the store.
func TestReservedRoutesHaveOneSpelling(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	served := 0
	teapot := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
		w.WriteHeader(http.StatusTeapot)
	})
	s.Mount(APIs{Keys: []Route{
		{Method: http.MethodGet, Pattern: "/_herald/v1/keys", Rule: auth.Rule{Public: true}, Handler: teapot},
		{Method: http.MethodGet, Pattern: "/_herald/v1/keys/{id}", Rule: auth.Rule{Public: true}, Handler: teapot},
		{Method: http.MethodPost, Pattern: "/callback/{id}", Rule: auth.Rule{CallbackToken: true}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served++
			w.WriteHeader(http.StatusAccepted)
		})},
	}})
	for _, c := range []struct{ method, target string }{
		{"GET", "/_herald/v1/%6beys"},
		{"GET", "/_herald/v1/%6Beys"},
		{"GET", "/_herald/%761/keys"},
		{"GET", "/%5fherald/v1/keys"},
		{"GET", "/%5Fherald/v1/keys"},
		{"GET", "/_herald%2fv1/keys"},
		{"GET", "/_herald/v1%2Fkeys"},
		{"GET", "/_herald/v1/keys/%6b1"},
		{"GET", "/_herald/v1/keys/a%2Fb"},
		{"GET", "/_herald/v1/keys/k%2D1"},
		{"GET", "/_herald/v1/keys/k%3a1"},
		{"GET", "/_herald/v1/keys/k%7e1"},
		{"POST", "/callback/%63-1"},
		{"POST", "/%63allback/c-1"},
		{"POST", "/callback%2Fc-1"},
		{"POST", "/callback/s:%2fa"},
		{"POST", "/callback/s:%2Fa/x"},
		{"GET", "/_herald/v1/%2Fkeys"},
		{"PUT", "/%5fherald/stream"},
	} {
		w := do(s, c.method, c.target, nil, nil)
		expectError(t, w, http.StatusBadRequest, "NON_CANONICAL_PATH")
	}
	// A byte that needs its escape is no second spelling of a route: it
	// names no route, or an id that does not exist.
	for _, target := range []string{"/_herald/v1/keys%3F", "/_herald/v1/keys%20"} {
		expectError(t, do(s, "GET", target, nil, nil), http.StatusNotFound, "NOT_FOUND")
	}
	if served != 0 {
		t.Fatalf("an encoded spelling reached a route %d times", served)
	}
	// The literal spellings are served, and a consumer id holds its
	// stream path encoded.
	for _, c := range []struct {
		method, target string
		want           int
	}{
		{"GET", "/_herald/v1/keys", http.StatusTeapot},
		{"GET", "/_herald/v1/keys/k1", http.StatusTeapot},
		{"GET", "/_herald/v1/keys/a%20b", http.StatusTeapot},
		{"POST", "/callback/c-1", http.StatusAccepted},
		{"POST", "/callback/sub-1:%2Fagents%2Ftask%201", http.StatusAccepted},
	} {
		if w := do(s, c.method, c.target, nil, nil); w.Code != c.want {
			t.Errorf("%s %s = %d %s, want %d", c.method, c.target, w.Code, w.Body, c.want)
		}
	}
}

func TestSubscriptionRequests(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	targets := []string{"/v1/*?subscription=sub-1", "/v1/x?subscriptions", "/v1/stream/__ds/subscriptions/sub-1", "/__ds/jwks.json"}
	for _, target := range targets {
		expectError(t, do(s, "PUT", target, nil, nil), http.StatusNotFound, "SUBSCRIPTIONS_UNAVAILABLE")
	}
	f := &fakeSubscriptions{del: func(string, string) error { return nil }}
	s.Mount(APIs{Subscriptions: f})
	// Each request reaches the subscription routes: the route of its
	// method and query, or their answer for one they do not take.
	if w := do(s, "DELETE", targets[0], nil, nil); w.Code != http.StatusNoContent || f.lastCall != "delete /v1/* sub-1" {
		t.Errorf("DELETE %s = %d, service saw %q", targets[0], w.Code, f.lastCall)
	}
	expectError(t, do(s, "PUT", targets[1], nil, nil), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	// A __ds segment below the stream root's first is no route of either
	// API; the root's own __ds/ is the reserved API's, unavailable until
	// it is mounted.
	expectError(t, do(s, "PUT", targets[2], nil, nil), http.StatusNotFound, "NOT_FOUND")
	expectError(t, do(s, "PUT", targets[3], nil, nil), http.StatusNotFound, "SUBSCRIPTIONS_UNAVAILABLE")
	// Query parameters that merely contain the word stay stream requests.
	st := &fakeStore{t: t, delete: func(*store.StreamDeleteParams) error { return store.ErrNotFound }}
	s = newTestServer(st, Config{})
	s.Mount(APIs{Subscriptions: &fakeSubscriptions{}})
	expectError(t, do(s, "DELETE", "/v1/x?my_subscription_id=1", nil, nil), http.StatusNotFound, "STREAM_NOT_FOUND")
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
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
	if w := do(s, "GET", "/_herald/readyz", nil, nil); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"reason":"not ready"`) {
		t.Errorf("readyz not ready = %d %s", w.Code, w.Body)
	}
	s.SetReady(true)
	check("/_herald/readyz", http.StatusOK)
	// A store whose heartbeat fails: not ready, with the reason (and no
	// address), while health stays up; ready again by itself after a
	// heartbeat that goes through.
	s.SetStoreHealth(fmt.Errorf("%w: dial tcp 10.0.0.7:5432: connection refused", store.ErrUnavailable))
	if w := do(s, "GET", "/_herald/readyz", nil, nil); w.Code != http.StatusServiceUnavailable ||
		!strings.Contains(w.Body.String(), `"reason":"the database cannot be reached"`) || strings.Contains(w.Body.String(), "10.0.0.7") {
		t.Errorf("readyz with the database away = %d %s", w.Code, w.Body)
	}
	check("/_herald/healthz", http.StatusOK)
	s.SetStoreHealth(errors.New("disk full"))
	if w := do(s, "GET", "/_herald/readyz", nil, nil); w.Code != http.StatusServiceUnavailable ||
		!strings.Contains(w.Body.String(), `"reason":"the store failed its heartbeat"`) {
		t.Errorf("readyz with the store failing = %d %s", w.Code, w.Body)
	}
	s.SetStoreHealth(nil)
	check("/_herald/readyz", http.StatusOK)
	s.Shutdown()
	s.Shutdown() // idempotent
	if w := do(s, "GET", "/_herald/readyz", nil, nil); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"reason":"shutting down"`) {
		t.Errorf("readyz shutting down = %d %s", w.Code, w.Body)
	}
	check("/_herald/healthz", http.StatusOK)
}

// With access control off a request needs no credential, so a foreign
// page's requests must not reach any route: they are 403
// ORIGIN_NOT_ALLOWED without a CORS grant, whatever their method or body
// (a text/plain POST or a form is sent without a preflight), and the
// store is never touched. Loopback pages (any port), Herald's own origin
// and the listed origins are answered, preflights included.
func TestDevelopmentModeRefusesForeignOrigins(t *testing.T) {
	t.Parallel()
	f := &fakeStore{t: t, get: func(*store.StreamGetParams) (*store.Stream, error) { return nil, store.ErrNotFound }}
	s := newTestServer(f, Config{CORSOrigins: []string{"https://console.example", "http://lan-box:8080"}})
	s.Mount(APIs{Subscriptions: &fakeSubscriptions{}})
	requests := []struct {
		method, target, contentType string
	}{
		{"POST", "/v1/s", "text/plain"},
		{"POST", "/v1/s", "application/x-www-form-urlencoded"},
		{"PUT", "/v1/s", "application/json"},
		{"DELETE", "/v1/s", ""},
		{"GET", "/v1/s?offset=-1", ""},
		{"OPTIONS", "/v1/s", ""},
		{"PUT", "/v1/s?subscription=x", "application/json"},
		{"GET", "/_herald/v1/streams", ""},
	}
	for _, origin := range []string{
		"https://evil.example", "null", "http://evil.example:4437",
		"https://console.example:8443", "http://console.example", // listed host, another port or scheme
		"http://lan-box", "https://lan-box:8080",
		"http://localhost.evil.example", "http://127.0.0.1.nip.io:3000", "http://10.0.0.1:3000",
		"https://example.com", // Herald's own host (httptest's) on another scheme
	} {
		for _, req := range requests {
			w := do(s, req.method, req.target, strings.NewReader("x"), map[string]string{"Origin": origin, "Content-Type": req.contentType, "Access-Control-Request-Method": "DELETE"})
			if req.method == "OPTIONS" {
				// A preflight is answered, but without a grant: the
				// browser then never sends the request.
				if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != "" {
					t.Errorf("preflight from %s: %d %v", origin, w.Code, w.Header())
				}
				continue
			}
			if w.Code != http.StatusForbidden || errorCode(t, w) != "ORIGIN_NOT_ALLOWED" || w.Header().Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("%s %s from %s: %d %v %s", req.method, req.target, origin, w.Code, w.Header(), w.Body)
			}
		}
	}
	for _, origin := range []string{
		"http://localhost:3000", "http://localhost", "http://127.0.0.1:8080", "http://[::1]:5173", "https://localhost:8443",
		"https://console.example", "http://lan-box:8080", "http://example.com",
	} {
		w := do(s, "OPTIONS", "/v1/s", nil, map[string]string{"Origin": origin, "Access-Control-Request-Method": "DELETE"})
		if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != origin || w.Header().Get("Vary") != "Origin" ||
			!strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "DELETE") {
			t.Errorf("preflight from %s: %d %v", origin, w.Code, w.Header())
		}
		w = do(s, "HEAD", "/v1/missing", nil, map[string]string{"Origin": origin})
		if w.Code != http.StatusNotFound || w.Header().Get("Access-Control-Allow-Origin") != origin ||
			!strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "Stream-Next-Offset") {
			t.Errorf("HEAD from %s: %d %v", origin, w.Code, w.Header())
		}
	}
	// Without Origin (curl, SDKs, the conformance suite): served.
	if w := do(s, "HEAD", "/v1/missing", nil, nil); w.Code != http.StatusNotFound {
		t.Errorf("HEAD without Origin: %d", w.Code)
	}
}

// Origins are compared whole: scheme, host and port, the default port
// written or not, the host in any case.
func TestParseOrigin(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://App.Example":      "https://app.example",
		"https://app.example:443":  "https://app.example",
		"http://app.example:80/":   "http://app.example",
		"http://localhost:5173":    "http://localhost:5173",
		"http://[::1]:4437":        "http://[::1]:4437",
		"https://app.example:8443": "https://app.example:8443",
	} {
		o, err := ParseOrigin(in)
		if err != nil || o.String() != want {
			t.Errorf("ParseOrigin(%q) = %v, %v; want %s", in, o, err, want)
		}
	}
	for _, in := range []string{"null", "", "app.example", "ftp://app.example", "https://app.example/path", "https://u@app.example", "https://app.example?q", "https://"} {
		if o, err := ParseOrigin(in); err == nil {
			t.Errorf("ParseOrigin(%q) = %v, want an error", in, o)
		}
	}
}
