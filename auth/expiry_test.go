package auth_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/heraldstreams/herald/auth"
)

// TestKeysNeverOutliveTheirCreator: a key made by a credential that
// expires (a stored key, a platform token) expires with it when it asks
// for no expiry, and asking for a later one is 400 INVALID_EXPIRES_AT,
// nothing stored; the admin key, which never expires, makes keys that
// never do.
func TestKeysNeverOutliveTheirCreator(t *testing.T) {
	t.Parallel()
	secret := []byte("platform-shared-secret-0123456789abcdef")
	jwtv, err := auth.NewJWTVerifier(auth.JWTConfig{HS256Secret: secret, Issuer: "https://idp.example", Audience: "herald"})
	if err != nil {
		t.Fatal(err)
	}
	srv := keysServerWith(t, jwtv)
	at := func(d time.Duration) string {
		return time.Now().Add(d).UTC().Truncate(time.Second).Format(time.RFC3339)
	}

	// The admin key makes a key without an expiry.
	if k := postCreated[keyJSON](t, srv, "/_herald/v1/keys", adminKey, `{"scopes":["admin"]}`); k.ExpiresAt != nil {
		t.Fatalf("a key of the admin key expires at %s", *k.ExpiresAt)
	}

	soon := at(3 * time.Minute)
	shortAdmin := postCreated[keyJSON](t, srv, "/_herald/v1/keys", adminKey, `{"scopes":["admin"],"expires_at":"`+soon+`"}`)
	tokenExpiry := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "https://idp.example", "aud": "herald", "sub": "svc", "scope": "admin",
		"iat": time.Now().Unix(), "exp": tokenExpiry.Unix(),
	}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, key, expires string
	}{
		{"an admin key expiring in 3 min", shortAdmin.Key, soon},
		{"a platform token", tok, ""},
	} {
		creatorExpiry := c.expires
		// No expiry asked: the creator's.
		k := postCreated[keyJSON](t, srv, "/_herald/v1/keys", c.key, `{"scopes":["streams:read"]}`)
		if k.ExpiresAt == nil {
			t.Fatalf("%s made a key that never expires", c.name)
		}
		if creatorExpiry == "" {
			if got, err := time.Parse(time.RFC3339, *k.ExpiresAt); err != nil || !got.Equal(tokenExpiry) {
				t.Fatalf("%s made a key expiring at %s, want the token's exp %s", c.name, *k.ExpiresAt, tokenExpiry)
			}
			creatorExpiry = *k.ExpiresAt
		} else if *k.ExpiresAt != creatorExpiry {
			t.Fatalf("%s made a key expiring at %s, want %s", c.name, *k.ExpiresAt, creatorExpiry)
		}
		// A later expiry: refused, naming the limit; nothing stored.
		_, before := call(t, srv, "GET", "/_herald/v1/keys?limit=1000", adminKey, "")
		status, body := call(t, srv, "POST", "/_herald/v1/keys", c.key, `{"scopes":["streams:read"],"expires_at":"`+at(24*time.Hour)+`"}`)
		if code, field := errCode(t, body); status != 400 || code != "INVALID_EXPIRES_AT" || field != "expires_at" || !strings.Contains(string(body), creatorExpiry) {
			t.Fatalf("%s asked for a key outliving it: %d %s", c.name, status, body)
		}
		if _, after := call(t, srv, "GET", "/_herald/v1/keys?limit=1000", adminKey, ""); string(after) != string(before) {
			t.Fatalf("a refused key was stored:\n%s\n%s", before, after)
		}
		// An earlier one is kept as asked.
		early := at(time.Minute)
		if k := postCreated[keyJSON](t, srv, "/_herald/v1/keys", c.key, `{"scopes":["streams:read"],"expires_at":"`+early+`"}`); k.ExpiresAt == nil || *k.ExpiresAt != early {
			t.Fatalf("%s asked for %s, got %v", c.name, early, k.ExpiresAt)
		}
		// So is a portal token: its default ttl is cut to the creator's
		// life, an asked one beyond it refused.
		p := mintPortal(t, srv, c.key, `{"tenant":"acme"}`)
		if p.ExpiresAt != creatorExpiry {
			t.Fatalf("%s minted a portal token expiring at %s, want %s", c.name, p.ExpiresAt, creatorExpiry)
		}
		status, body = call(t, srv, "POST", "/_herald/v1/portal-tokens", c.key, `{"tenant":"acme","ttl":"24h"}`)
		if code, _ := errCode(t, body); status != 400 || code != "INVALID_TTL" {
			t.Fatalf("%s minted a portal token outliving it: %d %s", c.name, status, body)
		}
	}
}
