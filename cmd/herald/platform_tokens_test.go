package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestPlatformTokensHostile: against a running Herald, a platform token
// whose tenant claim is not a tenant name is 401 INVALID_TENANT_CLAIM
// (never a token of every tenant), --jwt-require-tenant refuses one
// without a tenant, and a key a token makes expires with the token.
func TestPlatformTokensHostile(t *testing.T) {
	t.Parallel()
	secret := []byte("platform-shared-secret-0123456789abcdef")
	file := filepath.Join(t.TempDir(), "jwt.secret")
	if err := os.WriteFile(file, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	a := startHerald(t, "--jwt-hs256-secret-file", file, "--jwt-issuer", "https://idp.example/", "--jwt-audience", "herald", "--jwt-require-tenant")
	m := &matrix{t: t, app: a, base: "http://" + a.ln.Addr().String()}
	exp := time.Now().Add(10 * time.Minute).Truncate(time.Second)
	token := func(mod func(jwt.MapClaims)) string {
		c := jwt.MapClaims{"iss": "https://idp.example/", "aud": "herald", "sub": "svc", "scope": "admin",
			"iat": time.Now().Unix(), "exp": exp.Unix(), "tenant": "acme"}
		mod(c)
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for name, mod := range map[string]func(jwt.MapClaims){
		"a number":         func(c jwt.MapClaims) { c["tenant"] = 7 },
		"an array":         func(c jwt.MapClaims) { c["tenant"] = []string{"acme", "globex"} },
		"empty":            func(c jwt.MapClaims) { c["tenant"] = "" },
		"null":             func(c jwt.MapClaims) { c["tenant"] = nil },
		"no tenant claim":  func(c jwt.MapClaims) { delete(c, "tenant") },
		"a number, org_id": func(c jwt.MapClaims) { delete(c, "tenant"); c["org_id"] = 7 },
	} {
		status, body := m.call(t, "GET", "/_herald/v1/whoami", map[string]string{"Authorization": "Bearer " + token(mod)}, "")
		if status != 401 || !strings.Contains(body, `"code":"INVALID_TENANT_CLAIM"`) {
			t.Errorf("tenant claim %s: %d %s, want 401 INVALID_TENANT_CLAIM", name, status, body)
		}
	}
	good := map[string]string{"Authorization": "Bearer " + token(func(jwt.MapClaims) {}), "Content-Type": "application/json"}
	if status, body := m.call(t, "GET", "/_herald/v1/whoami", good, ""); status != 200 || !strings.Contains(body, `"tenant":"acme"`) {
		t.Fatalf("a token of acme: %d %s", status, body)
	}
	// The token's keys expire with it.
	status, body := m.call(t, "POST", "/_herald/v1/keys", good, `{"scopes":["streams:read"]}`)
	var k struct {
		ExpiresAt string `json:"expires_at"`
		Tenant    string `json:"tenant"`
	}
	if status != 201 || json.Unmarshal([]byte(body), &k) != nil || k.Tenant != "acme" || k.ExpiresAt != exp.UTC().Format(time.RFC3339) {
		t.Fatalf("a key of a token expiring at %s: %d %s", exp.UTC().Format(time.RFC3339), status, body)
	}
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	status, body = m.call(t, "POST", "/_herald/v1/keys", good, `{"scopes":["streams:read"],"expires_at":"`+later+`"}`)
	if status != 400 || !strings.Contains(body, `"code":"INVALID_EXPIRES_AT"`) {
		t.Fatalf("a key outliving the token: %d %s", status, body)
	}
}

// TestJWKSOverPlainHTTP: an http:// JWKS URL stops Herald at start unless
// --jwt-jwks-allow-http is given, and then only on loopback.
func TestJWKSOverPlainHTTP(t *testing.T) {
	t.Parallel()
	start := func(flags ...string) error {
		args := append([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--jwt-issuer", "https://idp.example/", "--jwt-audience", "herald"}, flags...)
		cfg, err := parseServeFlags(args, io.Discard, io.Discard, noEnv)
		if err != nil {
			return err
		}
		a, err := newApp(t.Context(), cfg, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			return err
		}
		a.api.Shutdown()
		return errors.Join(a.ln.Close(), a.stop(context.Background()))
	}
	for _, flags := range [][]string{
		{"--jwt-jwks-url", "http://127.0.0.1:1/jwks"},
		{"--jwt-jwks-url", "http://10.1.2.3/jwks", "--jwt-jwks-allow-cidrs", "10.0.0.0/8"},
		{"--jwt-jwks-url", "http://10.1.2.3/jwks", "--jwt-jwks-allow-cidrs", "10.0.0.0/8", "--jwt-jwks-allow-http"},
		{"--jwt-jwks-url", "http://idp.example/jwks", "--jwt-jwks-allow-http"},
	} {
		if err := start(flags...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "http") {
			t.Errorf("%v: %v, want a usage error", flags, err)
		}
	}
	if err := start("--jwt-jwks-url", "http://127.0.0.1:1/jwks", "--jwt-jwks-allow-http"); err != nil {
		t.Fatalf("an http:// JWKS on loopback with --jwt-jwks-allow-http: %v", err)
	}
}
