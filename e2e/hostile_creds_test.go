package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestCredentialsNeverOutliveTheirMaker: against the real binary, a key
// made by a key (or a platform token) that expires never outlives it:
// asked with no expiry it gets its maker's, asked for a later one it is
// 400 INVALID_EXPIRES_AT; a platform token whose tenant claim is not a
// tenant name is 401 INVALID_TENANT_CLAIM, never a credential of every
// tenant.
func TestCredentialsNeverOutliveTheirMaker(t *testing.T) {
	t.Parallel()
	secret := []byte("e2e-platform-secret-0123456789abcdef")
	file := filepath.Join(t.TempDir(), "jwt.secret")
	if err := os.WriteFile(file, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	k := startKeyed(t, t.TempDir(), "--jwt-hs256-secret-file", file, "--jwt-issuer", "https://idp.example/", "--jwt-audience", "herald")

	type madeKey struct {
		Key       string `json:"key"`
		ExpiresAt string `json:"expires_at"`
	}
	makeKey := func(by, body string) (int, string, madeKey) {
		t.Helper()
		var out madeKey
		resp, raw := k.call(by, "POST", "/_herald/v1/keys", body, &out)
		return resp.StatusCode, raw, out
	}
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	status, raw, maker := makeKey(tenantAdminKey, `{"scopes":["admin"],"tenant":"acme","expires_at":"`+expires.Format(time.RFC3339)+`"}`)
	if status != http.StatusCreated {
		t.Fatalf("the maker: %d %s", status, raw)
	}
	// No expiry asked: the maker's.
	if status, raw, made := makeKey(maker.Key, `{"scopes":["streams:read"]}`); status != http.StatusCreated || made.ExpiresAt != expires.Format(time.RFC3339) {
		t.Fatalf("a key asked without expiry by a key expiring at %s: %d %s", expires.Format(time.RFC3339), status, raw)
	}
	// A later expiry: refused, nothing made.
	later := expires.Add(time.Hour).Format(time.RFC3339)
	if status, raw, _ := makeKey(maker.Key, `{"scopes":["streams:read"],"expires_at":"`+later+`"}`); status != http.StatusBadRequest || !strings.Contains(raw, `"code":"INVALID_EXPIRES_AT"`) {
		t.Fatalf("a key outliving its maker: %d %s", status, raw)
	}

	token := func(tenant any) string {
		c := jwt.MapClaims{"iss": "https://idp.example/", "aud": "herald", "sub": "svc", "scope": "admin",
			"iat": time.Now().Unix(), "exp": expires.Unix(), "tenant": tenant}
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tenant := range []any{7, []string{"acme", "globex"}, "", nil, "acme/../globex"} {
		resp, raw := k.call(token(tenant), "GET", "/_herald/v1/keys", "", nil)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(raw, `"code":"INVALID_TENANT_CLAIM"`) {
			t.Errorf("a token whose tenant claim is %#v: %d %s, want 401 INVALID_TENANT_CLAIM", tenant, resp.StatusCode, raw)
		}
	}
	// A good token's keys expire with it.
	if status, raw, made := makeKey(token("acme"), `{"scopes":["streams:read"]}`); status != http.StatusCreated || made.ExpiresAt != expires.Format(time.RFC3339) {
		t.Fatalf("a key made by a token expiring at %s: %d %s", expires.Format(time.RFC3339), status, raw)
	}
}
