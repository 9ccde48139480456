package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/store"
)

type errorResponse struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder) errorResponse {
	t.Helper()
	var e errorResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" {
		t.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	return e
}

func TestRequire(t *testing.T) {
	t.Parallel()
	m, c := newMemKeys(), &clock{now: t0}
	a := newAuth(t, m, c)
	_, reader := addKey(t, m, store.Key{Scopes: []string{"streams:read"}, Paths: []string{"/agents/*"}})
	_, tenant := addKey(t, m, store.Key{Scopes: []string{"streams:read"}, Tenant: "acme"})
	_, writer := addKey(t, m, store.Key{Scopes: []string{"streams:write"}})
	_, expired := addKey(t, m, store.Key{Scopes: []string{"streams:read"}, ExpiresAt: t0})

	var seen *Principal
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = FromContext(r.Context())
		w.WriteHeader(http.StatusTeapot)
	})
	streamPath := func(r *http.Request) string { return r.URL.Path }
	read := a.Require(Rule{Scope: ScopeStreamsRead, StreamPath: streamPath}, next)

	for _, tc := range []struct {
		name, auth, path string
		status           int
		code             string
	}{
		{"no header", "", "/agents/a", 401, "UNAUTHENTICATED"},
		{"not bearer", "Basic " + reader, "/agents/a", 401, "UNAUTHENTICATED"},
		{"unknown key", "Bearer hk_aaaaaaaaaaaaaaaa_" + strings.Repeat("A", 43), "/agents/a", 401, "INVALID_KEY"},
		{"expired", "Bearer " + expired, "/agents/a", 401, "KEY_EXPIRED"},
		{"missing scope", "Bearer " + writer, "/agents/a", 403, "FORBIDDEN"},
		{"outside paths", "Bearer " + reader, "/other/a", 403, "FORBIDDEN"},
		{"deeper than the pattern", "Bearer " + reader, "/agents/a/b", 403, "FORBIDDEN"},
		{"allowed", "Bearer " + reader, "/agents/a", http.StatusTeapot, ""},
		{"scheme is case-insensitive", "bearer " + reader, "/agents/a", http.StatusTeapot, ""},
		{"admin everywhere", "Bearer " + adminKey, "/other/a", http.StatusTeapot, ""},
		{"tenant in its namespace", "Bearer " + tenant, "/tenants/acme/a/b", http.StatusTeapot, ""},
		{"tenant outside its namespace", "Bearer " + tenant, "/agents/a", 403, "FORBIDDEN"},
		{"tenant in another's namespace", "Bearer " + tenant, "/tenants/globex/a", 403, "FORBIDDEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			read.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.code == "" {
				if seen == nil {
					t.Fatal("the handler saw no principal")
				}
				return
			}
			if seen != nil {
				t.Fatal("a refused request reached the handler")
			}
			if e := decodeError(t, rec); e.Error.Code != tc.code {
				t.Fatalf("code %q, want %q", e.Error.Code, tc.code)
			}
			if tc.status == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without a Bearer challenge: %q", rec.Header().Get("WWW-Authenticate"))
			}
		})
	}

	// A path-limited or tenant key is refused where the route cannot name
	// a path.
	blind := a.Require(Rule{Scope: ScopeStreamsRead, StreamPath: func(*http.Request) string { return "" }}, next)
	for _, key := range []string{reader, tenant} {
		req := httptest.NewRequest(http.MethodGet, "/agents/a", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		blind.ServeHTTP(rec, req)
		if rec.Code != 403 {
			t.Fatalf("no path to check: status %d, want 403", rec.Code)
		}
	}

	// Public and callback-token routes are not checked here.
	for _, rule := range []Rule{{Public: true}, {CallbackToken: true}} {
		rec := httptest.NewRecorder()
		a.Require(rule, next).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/callback/x", nil))
		if rec.Code != http.StatusTeapot {
			t.Fatalf("%+v: status %d", rule, rec.Code)
		}
	}
}

func TestRequireRefusesAnUnknownScope(t *testing.T) {
	t.Parallel()
	a := newAuth(t, newMemKeys(), &clock{now: t0})
	defer func() {
		if recover() == nil {
			t.Fatal("a rule with an unknown scope was accepted")
		}
	}()
	a.Require(Rule{Scope: "streams:rread"}, http.NotFoundHandler())
}

// TestRequirePlatform: a route of installation-wide data refuses a
// credential of a tenant, whatever its scopes, with TENANT_FORBIDDEN, and
// serves platform credentials.
func TestRequirePlatform(t *testing.T) {
	t.Parallel()
	m, c := newMemKeys(), &clock{now: t0}
	a := newAuth(t, m, c)
	_, tenantAdmin := addKey(t, m, store.Key{Scopes: []string{"admin"}, Tenant: "acme"})
	_, platformAdmin := addKey(t, m, store.Key{Scopes: []string{"admin"}})
	h := a.Require(Rule{Scope: ScopeAdmin, Platform: true}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	for key, want := range map[string]int{tenantAdmin: 403, platformAdmin: http.StatusTeapot, adminKey: http.StatusTeapot} {
		req := httptest.NewRequest(http.MethodGet, "/_herald/v1/stats", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("status %d, want %d: %s", rec.Code, want, rec.Body)
		}
		if want == 403 {
			if e := decodeError(t, rec); e.Error.Code != "TENANT_FORBIDDEN" {
				t.Fatalf("code %q, want TENANT_FORBIDDEN", e.Error.Code)
			}
		}
	}
}

// A rule says who may call its route; Require refuses one that says
// nothing, rather than letting in any credential.
func TestRuleMustBeExplicit(t *testing.T) {
	t.Parallel()
	for _, r := range []Rule{{Public: true}, {CallbackToken: true}, {AnyCredential: true}, {Scope: ScopeStreamsRead}} {
		if !r.Explicit() {
			t.Errorf("%+v is not explicit", r)
		}
	}
	for _, r := range []Rule{{}, {Platform: true}, {StreamPath: func(*http.Request) string { return "/a" }}} {
		if r.Explicit() {
			t.Errorf("%+v is explicit", r)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Require(%+v) did not panic", r)
				}
			}()
			Off().Require(r, http.NotFoundHandler())
		}()
	}
}
