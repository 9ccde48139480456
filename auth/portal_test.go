package auth_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

type portalJSON struct {
	ID        string   `json:"id"`
	Token     string   `json:"token"`
	Tenant    string   `json:"tenant"`
	Scopes    []string `json:"scopes"`
	ExpiresAt string   `json:"expires_at"`
	URL       string   `json:"url"`
}

// mintPortal mints a portal token with key, failing unless it is made.
func mintPortal(t *testing.T, srv *httptest.Server, key, body string) portalJSON {
	t.Helper()
	return postCreated[portalJSON](t, srv, "/_herald/v1/portal-tokens", key, body)
}

// expiresIn is how long from now an answer's expires_at is.
func expiresIn(t *testing.T, at string) time.Duration {
	t.Helper()
	e, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		t.Fatalf("expires_at %q: %v", at, err)
	}
	return time.Until(e)
}

// TestPortalTokens: an admin mints a short-lived key of one tenant with
// the portal's scopes, handed over in the dashboard's URL; it is listed
// among the keys as a portal token and revoked like one.
func TestPortalTokens(t *testing.T) {
	t.Parallel()
	srv := keysServer(t)
	p := mintPortal(t, srv, adminKey, `{"tenant":"acme","ttl":"30m"}`)
	want := []string{"endpoints:read", "endpoints:write", "deliveries:read", "deliveries:write"}
	if !strings.HasPrefix(p.Token, "hk_"+p.ID+"_") || p.Tenant != "acme" || !slices.Equal(p.Scopes, want) || p.URL != testPortalURL+"#key="+p.Token {
		t.Fatalf("minted %+v", p)
	}
	if d := expiresIn(t, p.ExpiresAt); d < 29*time.Minute || d > 30*time.Minute {
		t.Fatalf("a 30m token expires in %s", d)
	}

	// It reaches its tenant's endpoints and nothing else.
	if status, body := call(t, srv, "GET", "/endpoints", p.Token, ""); status != 200 || string(body) != p.ID+" acme" {
		t.Fatalf("the token on an endpoints route: %d %s", status, body)
	}
	if status, _ := call(t, srv, "GET", "/streams/a", p.Token, ""); status != 403 {
		t.Fatalf("the token read a stream: %d", status)
	}
	if status, _ := call(t, srv, "POST", "/_herald/v1/portal-tokens", p.Token, `{"tenant":"acme"}`); status != 403 {
		t.Fatalf("the token minted a token: %d", status)
	}

	// Listed as a portal token, never with its secret; revoked at once.
	status, body := call(t, srv, "GET", "/_herald/v1/keys/"+p.ID, adminKey, "")
	var k keyJSON
	if err := json.Unmarshal(body, &k); status != 200 || err != nil || !strings.Contains(k.Description, "portal token") ||
		k.ExpiresAt == nil || *k.ExpiresAt != p.ExpiresAt || strings.Contains(string(body), p.Token) {
		t.Fatalf("the token's key: %d %s", status, body)
	}
	if status, body := call(t, srv, "DELETE", "/_herald/v1/keys/"+p.ID, adminKey, ""); status != 204 {
		t.Fatalf("revoking: %d %s", status, body)
	}
	if status, _ := call(t, srv, "GET", "/endpoints", p.Token, ""); status != 401 {
		t.Fatalf("a revoked token: %d", status)
	}

	// Without a ttl, 15 minutes.
	if d := expiresIn(t, mintPortal(t, srv, adminKey, `{"tenant":"acme"}`).ExpiresAt); d < 14*time.Minute || d > 15*time.Minute {
		t.Fatalf("a token without a ttl expires in %s", d)
	}
}

func TestPortalTokensRefuseBadInput(t *testing.T) {
	t.Parallel()
	srv := keysServer(t)
	for _, tc := range []struct {
		body        string
		status      int
		code, field string
	}{
		{`{"tenant":"acme","ttl":"30s"}`, 400, "INVALID_TTL", "ttl"},
		{`{"tenant":"acme","ttl":"25h"}`, 400, "INVALID_TTL", "ttl"},
		{`{"tenant":"acme","ttl":"soon"}`, 400, "INVALID_TTL", "ttl"},
		{`{"tenant":"acme","ttl":900}`, 400, "INVALID_JSON", "ttl"},
		{`{}`, 400, "INVALID_TENANT", "tenant"},
		{`{"tenant":"a b"}`, 400, "INVALID_TENANT", "tenant"},
		{`{"tenant":"acme","scopes":["admin"]}`, 400, "UNKNOWN_FIELD", "scopes"},
		{``, 400, "INVALID_JSON", ""},
	} {
		status, body := call(t, srv, "POST", "/_herald/v1/portal-tokens", adminKey, tc.body)
		code, field := errCode(t, body)
		if status != tc.status || code != tc.code || field != tc.field {
			t.Errorf("%s: %d %s %q, want %d %s %q", tc.body, status, code, field, tc.status, tc.code, tc.field)
		}
	}
	if _, body := call(t, srv, "GET", "/_herald/v1/keys", adminKey, ""); string(body) != `{"data":[],"next_cursor":null}` {
		t.Fatalf("after refused mints: %s", body)
	}
}

// TestPortalTokensOfATenantAdmin: an admin key of a tenant mints tokens
// of its own tenant only, never outliving itself; one limited to stream
// paths mints none.
func TestPortalTokensOfATenantAdmin(t *testing.T) {
	t.Parallel()
	srv := keysServer(t)
	soon := time.Now().Add(5 * time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339)
	acme := postCreated[keyJSON](t, srv, "/_herald/v1/keys", adminKey, `{"scopes":["admin"],"tenant":"acme","expires_at":"`+soon+`"}`)
	// Asked for no ttl, the default is cut to the key's own expiry;
	// asked for one beyond it, the mint is refused.
	p := mintPortal(t, srv, acme.Key, `{}`)
	if p.Tenant != "acme" {
		t.Fatalf("a tenant admin's token has tenant %q", p.Tenant)
	}
	if p.ExpiresAt != soon {
		t.Fatalf("the token expires at %s, want %s when the key that minted it does", p.ExpiresAt, soon)
	}
	status, body := call(t, srv, "POST", "/_herald/v1/portal-tokens", acme.Key, `{"ttl":"1h"}`)
	if code, field := errCode(t, body); status != 400 || code != "INVALID_TTL" || field != "ttl" || !strings.Contains(string(body), soon) {
		t.Fatalf("a token asked to outlive the key minting it: %d %s", status, body)
	}
	if p := mintPortal(t, srv, acme.Key, `{"ttl":"2m"}`); expiresIn(t, p.ExpiresAt) > 2*time.Minute {
		t.Fatalf("a 2m token within the key's life expires at %s", p.ExpiresAt)
	}
	if mintPortal(t, srv, acme.Key, `{"tenant":"acme"}`).Tenant != "acme" {
		t.Fatal("naming its own tenant")
	}
	status, body = call(t, srv, "POST", "/_herald/v1/portal-tokens", acme.Key, `{"tenant":"other"}`)
	if code, _ := errCode(t, body); status != 403 || code != "TENANT_FORBIDDEN" {
		t.Fatalf("a tenant admin minted another tenant's token: %d %s", status, body)
	}
	limited := postCreated[keyJSON](t, srv, "/_herald/v1/keys", adminKey, `{"scopes":["admin"],"paths":["/a/**"]}`)
	if status, _ := call(t, srv, "POST", "/_herald/v1/portal-tokens", limited.Key, `{"tenant":"acme"}`); status != 403 {
		t.Fatalf("a path-limited admin minted a token: %d", status)
	}
}
