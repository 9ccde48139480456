package auth

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// TestJWTTenantClaimMustBeATenantName: a verified token whose tenant
// claim is present but not a tenant name is refused with
// INVALID_TENANT_CLAIM, never taken as a token without a tenant (which
// sees every tenant); the first tenant claim present decides, so a bad
// "tenant" does not fall through to "org_id".
func TestJWTTenantClaimMustBeATenantName(t *testing.T) {
	t.Parallel()
	v := hsVerifier(t)
	ctx := context.Background()
	for name, val := range map[string]any{
		"a number":       7,
		"a float":        1.5,
		"an array":       []string{"acme"},
		"an empty array": []any{},
		"an object":      map[string]any{"id": "acme"},
		"true":           true,
		"null":           nil,
		"empty":          "",
		"a slash":        "acme/../globex",
		"a wildcard":     "*",
		"a space":        "acme corp",
		"too long":       strings.Repeat("a", 129),
	} {
		tok := sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["tenant"] = val }))
		p, err := v.Verify(ctx, tok, t0)
		if !errors.Is(err, ErrInvalidTenantClaim) {
			t.Errorf("tenant claim %s: %+v, %v; want ErrInvalidTenantClaim", name, p, err)
		}
	}
	var ae *Error
	if !errors.As(ErrInvalidTenantClaim, &ae) || ae.Status != 401 || ae.Code != "INVALID_TENANT_CLAIM" {
		t.Fatalf("ErrInvalidTenantClaim = %+v", ae)
	}
	// org_id of the wrong type is refused too, when it is the claim used.
	tok := sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["org_id"] = 42 }))
	if _, err := v.Verify(ctx, tok, t0); !errors.Is(err, ErrInvalidTenantClaim) {
		t.Errorf("org_id 42: %v", err)
	}
	// A valid name is the tenant; no claim at all is a token of no tenant.
	tok = sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { c["tenant"] = "acme-1.eu_west" }))
	if p, err := v.Verify(ctx, tok, t0); err != nil || p.Tenant != "acme-1.eu_west" {
		t.Errorf("a valid tenant: %+v, %v", p, err)
	}
	tok = sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { delete(c, "org_id") }))
	if p, err := v.Verify(ctx, tok, t0); err != nil || p.Tenant != "" {
		t.Errorf("no tenant claim: %+v, %v", p, err)
	}
}

// TestJWTRequireTenant: with RequireTenant, a token without a tenant
// claim is refused; one with a tenant is accepted.
func TestJWTRequireTenant(t *testing.T) {
	t.Parallel()
	v, err := NewJWTVerifier(JWTConfig{HS256Secret: hsSecret, Issuer: "https://idp.example", Audience: "herald", RequireTenant: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tok := sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(func(c jwt.MapClaims) { delete(c, "org_id") }))
	if p, err := v.Verify(ctx, tok, t0); !errors.Is(err, ErrTenantClaimRequired) {
		t.Fatalf("no tenant claim: %+v, %v; want ErrTenantClaimRequired", p, err)
	}
	if ErrTenantClaimRequired.Status != 401 || ErrTenantClaimRequired.Code != "INVALID_TENANT_CLAIM" {
		t.Fatalf("ErrTenantClaimRequired = %+v", ErrTenantClaimRequired)
	}
	if p, err := v.Verify(ctx, sign(t, jwt.SigningMethodHS256, hsSecret, "", claims(nil)), t0); err != nil || p.Tenant != "acme" {
		t.Fatalf("a token of a tenant: %+v, %v", p, err)
	}
}

// TestJWKSURLMustBeHTTPS: an http:// JWK Set is refused unless
// JWKSAllowHTTP allows it, and then only on a loopback address or
// localhost, whatever the allow list says.
func TestJWKSURLMustBeHTTPS(t *testing.T) {
	t.Parallel()
	private := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8")}
	for _, c := range []struct {
		url       string
		allowHTTP bool
		allow     []netip.Prefix
		ok        bool
	}{
		{"http://127.0.0.1:8080/jwks", false, nil, false},
		{"http://127.0.0.1:8080/jwks", false, private, false},
		{"http://10.1.2.3/jwks", false, private, false},
		{"http://10.1.2.3/jwks", true, private, false},
		{"http://idp.example/jwks", true, nil, false},
		{"http://localhost.idp.example/jwks", true, nil, false},
		{"http://[::ffff:10.1.2.3]/jwks", true, private, false},
		{"http://127.0.0.1:8080/jwks", true, nil, true},
		{"http://127.9.9.9/jwks", true, nil, true},
		{"http://[::1]:8080/jwks", true, nil, true},
		{"http://localhost:8080/jwks", true, nil, true},
		{"https://idp.example/jwks", false, nil, true},
	} {
		v, err := NewJWTVerifier(JWTConfig{JWKSURL: c.url, JWKSAllowHTTP: c.allowHTTP, JWKSAllowCIDRs: c.allow, Issuer: "i", Audience: "a"})
		if (err == nil) != c.ok {
			t.Errorf("%s (allow http %v, allow list %v): %v, want ok %v", c.url, c.allowHTTP, c.allow, err, c.ok)
		}
		if err != nil && !c.allowHTTP && !strings.Contains(err.Error(), "https://") {
			t.Errorf("%s: the refusal does not say to use https://: %v", c.url, err)
		}
		if v != nil {
			v.Close()
		}
	}
}
