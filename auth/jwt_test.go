package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

var hsSecret = []byte("platform-shared-secret-0123456789abcdef")

func claims(mod func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{
		"iss": "https://idp.example", "aud": "herald", "sub": "user-1",
		"iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix(),
		"org_id": "acme", "scope": "openid streams:read events:publish",
	}
	if mod != nil {
		mod(c)
	}
	return c
}

func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hsVerifier(t *testing.T) *JWTVerifier {
	t.Helper()
	v, err := NewJWTVerifier(JWTConfig{HS256Secret: hsSecret, Issuer: "https://idp.example", Audience: "herald"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHS256Tokens(t *testing.T) {
	t.Parallel()
	v := hsVerifier(t)
	ctx := context.Background()
	p, err := v.Verify(ctx, sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(nil)), t0)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "jwt:user-1" || p.Kind != KindToken || p.Tenant != "acme" ||
		!slices.Equal(p.Scopes, []Scope{ScopeStreamsRead, ScopeEventsPublish}) || !p.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("principal %+v", p)
	}
	// Scopes as an array, the tenant claim first in the list wins.
	p, err = v.Verify(ctx, sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) {
		delete(c, "scope")
		c["scopes"] = []string{"admin"}
		c["tenant"] = "first"
	})), t0)
	if err != nil || !p.Admin || p.Tenant != "first" {
		t.Fatalf("array scopes: %+v, %v", p, err)
	}

	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims(nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		token string
		want  error
	}{
		{"expired", sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["exp"] = t0.Add(-time.Minute).Unix() })), ErrKeyExpired},
		{"no expiry", sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { delete(c, "exp") })), ErrInvalidKey},
		{"wrong issuer", sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), ErrInvalidKey},
		{"wrong audience", sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["aud"] = "other" })), ErrInvalidKey},
		{"not yet valid", sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["nbf"] = t0.Add(time.Hour).Unix() })), ErrInvalidKey},
		{"wrong secret", sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdefghij"), "", claims(nil)), ErrInvalidKey},
		{"alg none", none, ErrInvalidKey},
		{"RS256 where HS256 is configured", sign(t, jwt.SigningMethodRS256, rsaKey, "", claims(nil)), ErrInvalidKey},
		{"HS384", sign(t, jwt.SigningMethodHS384, hsSecret, "", claims(nil)), ErrInvalidKey},
		{"scope claim of the wrong type", sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["scope"] = 7 })), ErrInvalidKey},
		{"garbage", "a.b.c", ErrInvalidKey},
	} {
		if _, err := v.Verify(ctx, tc.token, t0); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Within the leeway, an expired token still passes (clock skew).
	if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["exp"] = t0.Add(-10 * time.Second).Unix() })), t0); err != nil {
		t.Errorf("within leeway: %v", err)
	}
}

func TestJWTConfigChecks(t *testing.T) {
	t.Parallel()
	for _, cfg := range []JWTConfig{
		{Issuer: "i", Audience: "a"},
		{HS256Secret: hsSecret, JWKSURL: "https://idp.example/jwks", Issuer: "i", Audience: "a"},
		{HS256Secret: []byte("short"), Issuer: "i", Audience: "a"},
		{HS256Secret: hsSecret, Audience: "a"},
		{HS256Secret: hsSecret, Issuer: "i"},
		{JWKSURL: "http://169.254.169.254/jwks", Issuer: "i", Audience: "a"},
	} {
		if _, err := NewJWTVerifier(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

// jwksServer serves a JWK Set that the test can change, and counts
// fetches.
type jwksServer struct {
	mu      sync.Mutex
	keys    []jwkset.JWK
	fetches atomic.Int64
	srv     *httptest.Server
}

func newJWKSServer(t *testing.T) *jwksServer {
	s := &jwksServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		set := jwkset.JWKSMarshal{}
		for _, k := range s.keys {
			set.Keys = append(set.Keys, k.Marshal())
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(set); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *jwksServer) set(t *testing.T, pubs map[string]any) {
	t.Helper()
	var keys []jwkset.JWK
	for kid, pub := range pubs {
		j, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid}})
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, j)
	}
	s.mu.Lock()
	s.keys = keys
	s.mu.Unlock()
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

func jwksVerifier(t *testing.T, url string, allow []netip.Prefix) *JWTVerifier {
	t.Helper()
	v, err := NewJWTVerifier(JWTConfig{JWKSURL: url, JWKSAllowCIDRs: allow, JWKSAllowHTTP: true, Issuer: "https://idp.example", Audience: "herald",
		JWKSMinRefreshInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(context.Background())
	t.Cleanup(v.Close)
	return v
}

func TestJWKSTokens(t *testing.T) {
	t.Parallel()
	js := newJWKSServer(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	js.set(t, map[string]any{"rsa-1": &rsaKey.PublicKey, "ec-1": &ecKey.PublicKey})
	v := jwksVerifier(t, js.srv.URL, nil) // http:// to loopback: JWKSAllowHTTP alone allows it
	ctx := context.Background()

	for _, tok := range []string{
		sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(nil)),
		sign(t, jwt.SigningMethodES256, ecKey, "ec-1", claims(nil)),
	} {
		if p, err := v.Verify(ctx, tok, t0); err != nil || p.Tenant != "acme" || !p.Has(ScopeStreamsRead) {
			t.Fatalf("JWKS token: %+v, %v", p, err)
		}
	}
	// The RSA public key used as an HMAC secret (alg confusion) is refused,
	// as is a key the set does not have, and a valid signature under
	// another kid's key.
	pubDER, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"HS256 with the public key": sign(t, jwt.SigningMethodHS256, pubPEM, "rsa-1", claims(nil)),
		"HS256 with the DER key":    sign(t, jwt.SigningMethodHS256, pubDER, "rsa-1", claims(nil)),
		"unknown signer":            sign(t, jwt.SigningMethodRS256, other, "rsa-1", claims(nil)),
		"wrong issuer":              sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(func(c jwt.MapClaims) { c["iss"] = "x" })),
	} {
		if _, err := v.Verify(ctx, tok, t0); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: %v, want ErrInvalidKey", name, err)
		}
	}
	expired := sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(func(c jwt.MapClaims) { c["exp"] = t0.Add(-time.Hour).Unix() }))
	if _, err := v.Verify(ctx, expired, t0); !errors.Is(err, ErrKeyExpired) {
		t.Errorf("expired: %v", err)
	}
}

func TestJWKSKeyRotation(t *testing.T) {
	t.Parallel()
	js := newJWKSServer(t)
	k1, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	js.set(t, map[string]any{"k1": &k1.PublicKey})
	v := jwksVerifier(t, js.srv.URL, loopback)
	ctx := context.Background()
	if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodRS256, k1, "k1", claims(nil)), t0); err != nil {
		t.Fatal(err)
	}
	fetched := js.fetches.Load()
	// The provider rotates: a token with the new kid makes Herald fetch
	// the set again, and verifies.
	js.set(t, map[string]any{"k2": &k2.PublicKey})
	if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodRS256, k2, "k2", claims(nil)), t0); err != nil {
		t.Fatalf("token of the rotated-in key: %v", err)
	}
	if js.fetches.Load() != fetched+1 {
		t.Fatalf("fetches %d, want %d", js.fetches.Load(), fetched+1)
	}
	// The removed key no longer verifies: the refetch replaced the set.
	if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodRS256, k1, "k1", claims(nil)), t0); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("token of the removed key: %v", err)
	}
}

func TestJWKSUnknownKidFetchesAreRateLimited(t *testing.T) {
	t.Parallel()
	js := newJWKSServer(t)
	k1, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	js.set(t, map[string]any{"k1": &k1.PublicKey})
	v, err := NewJWTVerifier(JWTConfig{JWKSURL: js.srv.URL, JWKSAllowCIDRs: loopback, JWKSAllowHTTP: true, Issuer: "https://idp.example", Audience: "herald",
		JWKSMinRefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	v.Start(context.Background())
	t.Cleanup(v.Close)
	for range 20 {
		if _, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, k1, "nope", claims(nil)), t0); !errors.Is(err, ErrInvalidKey) {
			t.Fatal(err)
		}
	}
	if n := js.fetches.Load(); n != 1 {
		t.Fatalf("20 tokens with an unknown kid made %d fetches, want the first one only", n)
	}
}

func TestJWKSURLIsCheckedByTheSafeSender(t *testing.T) {
	t.Parallel()
	js := newJWKSServer(t)
	// Loopback, private and metadata addresses are refused unless the
	// operator allows their range (the webhook sender also checks every
	// address it dials, so a name resolving there is refused too).
	for _, tc := range []struct {
		url   string
		allow []netip.Prefix
	}{
		{js.srv.URL, nil},
		{js.srv.URL, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		{"https://10.1.2.3/jwks", nil},
		{"https://169.254.169.254/jwks", nil},
		{"file:///etc/passwd", nil},
	} {
		if _, err := NewJWTVerifier(JWTConfig{JWKSURL: tc.url, JWKSAllowCIDRs: tc.allow, Issuer: "i", Audience: "a"}); err == nil {
			t.Errorf("JWKS URL %s with allow list %v was accepted", tc.url, tc.allow)
		}
	}
	if js.fetches.Load() != 0 {
		t.Fatalf("a refused JWKS was fetched %d times", js.fetches.Load())
	}
}

func TestJWKSUnreachableAtStartIsUnavailableThenRecovers(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	js := newJWKSServer(t)
	inner := js.srv.Config.Handler
	js.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		inner.ServeHTTP(w, r)
	})
	k1, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	js.set(t, map[string]any{"k1": &k1.PublicKey})
	v := jwksVerifier(t, js.srv.URL, loopback)
	tok := sign(t, jwt.SigningMethodRS256, k1, "k1", claims(nil))
	if _, err := v.Verify(context.Background(), tok, t0); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("identity provider down: %v, want ErrUnavailable (retry), not a 401", err)
	}
	up.Store(true)
	if _, err := v.Verify(context.Background(), tok, t0); err != nil {
		t.Fatalf("identity provider back: %v", err)
	}
}

func TestAuthenticatorAcceptsPlatformTokens(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Keys: newMemKeys(), JWT: hsVerifier(t), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(context.Background(), sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(nil)))
	if err != nil || p.Kind != KindToken || p.Tenant != "acme" {
		t.Fatalf("platform token: %+v, %v", p, err)
	}
	expired := sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["exp"] = t0.Add(-time.Hour).Unix() }))
	if _, err := a.Authenticate(context.Background(), expired); !errors.Is(err, ErrKeyExpired) {
		t.Fatalf("expired platform token: %v", err)
	}
}

// A platform token's tenant is limited to its namespace under the
// Authenticator's template.
func TestPlatformTokenTenantNamespace(t *testing.T) {
	t.Parallel()
	a, err := New(Config{JWT: hsVerifier(t), TenantStreamPrefix: "/orgs/{tenant}/", Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(context.Background(), sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(nil)))
	if err != nil || !p.AllowsPath("/orgs/acme/events") || p.AllowsPath("/tenants/acme/events") || p.AllowsPath("/events") {
		t.Fatalf("platform token of acme: namespace %q, %v", p.Namespace(), err)
	}
	// A tenant claim that is no path segment is no tenant name: the
	// token is refused, so it reaches no stream.
	if p, err := a.Authenticate(context.Background(), sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["tenant"] = "acme/../globex" }))); !errors.Is(err, ErrInvalidTenantClaim) {
		t.Fatalf("odd tenant: %+v, %v; want INVALID_TENANT_CLAIM", p, err)
	}
}
