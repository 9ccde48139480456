package auth

import (
	"context"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func TestTenantNamespaceAndStreamOwner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		template, tenant, ns string
	}{
		{DefaultTenantStreamPrefix, "acme", "/tenants/acme/"},
		{"/orgs/{tenant}/streams/", "globex", "/orgs/globex/streams/"},
		{"/t-{tenant}-x/", "acme", "/t-acme-x/"},
		{DefaultTenantStreamPrefix, "", ""},
		{DefaultTenantStreamPrefix, "a/b", ""},
		{DefaultTenantStreamPrefix, "..", ""},
		{DefaultTenantStreamPrefix, "a b", ""},
		{"/no-placeholder/", "acme", ""},
	} {
		if got := TenantNamespace(tc.template, tc.tenant); got != tc.ns {
			t.Errorf("TenantNamespace(%q, %q) = %q, want %q", tc.template, tc.tenant, got, tc.ns)
		}
	}
	for _, tc := range []struct {
		template, path, tenant string
		ok                     bool
	}{
		{DefaultTenantStreamPrefix, "/tenants/acme/events", "acme", true},
		{DefaultTenantStreamPrefix, "/tenants/acme/a/b/c", "acme", true},
		{DefaultTenantStreamPrefix, "/tenants/acme", "acme", true},
		{DefaultTenantStreamPrefix, "/tenants/acme/", "acme", true},
		{DefaultTenantStreamPrefix, "/tenants/acmex/events", "acmex", true},
		{DefaultTenantStreamPrefix, "/tenants", "", false},
		{DefaultTenantStreamPrefix, "/tenants/", "", false},
		{DefaultTenantStreamPrefix, "/tenants/../events", "", false},
		{DefaultTenantStreamPrefix, "/events", "", false},
		{DefaultTenantStreamPrefix, "/private/tenants/acme/x", "", false},
		{"/orgs/{tenant}/streams/", "/orgs/acme/streams/x", "acme", true},
		{"/orgs/{tenant}/streams/", "/orgs/acme/streams", "acme", true},
		{"/orgs/{tenant}/streams/", "/orgs/acme/other/x", "", false},
		{"/orgs/{tenant}/streams/", "/orgs/acme", "", false},
		{"/t-{tenant}-x/", "/t-acme-x/y", "acme", true},
		{"/t-{tenant}-x/", "/t-acme-y/y", "", false},
		{"/t-{tenant}-x/", "/t--x/y", "", false},
	} {
		tenant, ok := StreamOwner(tc.template, tc.path)
		if tenant != tc.tenant || ok != tc.ok {
			t.Errorf("StreamOwner(%q, %q) = %q, %v; want %q, %v", tc.template, tc.path, tenant, ok, tc.tenant, tc.ok)
		}
		// StreamOwner and TenantNamespace agree.
		if ok && !inNamespace(TenantNamespace(tc.template, tenant), tc.path) {
			t.Errorf("%q is owned by %q but not in its namespace", tc.path, tenant)
		}
	}
}

func TestCheckTenantStreamPrefix(t *testing.T) {
	t.Parallel()
	for _, good := range []string{DefaultTenantStreamPrefix, "/{tenant}/", "/orgs/{tenant}/streams/", "/t-{tenant}/"} {
		if err := CheckTenantStreamPrefix(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{"", "/", "tenants/{tenant}/", "/tenants/{tenant}", "/tenants/", "/{tenant}/{tenant}/", "/*/{tenant}/", "/**/{tenant}/", "//{tenant}/", "/./{tenant}/", "/a/%2a/{tenant}/", "/a\x00/{tenant}/"} {
		if err := CheckTenantStreamPrefix(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := New(Config{TenantStreamPrefix: "/no/"}); err == nil {
		t.Error("New accepted a template without {tenant}")
	}
}

// A tenant's credential reaches only its namespace, whatever its paths;
// a platform credential reaches every path its patterns allow.
func TestPrincipalNamespace(t *testing.T) {
	t.Parallel()
	mk := func(tenant string, paths ...string) *Principal {
		p, err := newPrincipal("k", KindKey, tenant, []Scope{ScopeStreamsRead}, paths, time.Time{}, DefaultTenantStreamPrefix)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	acme, acmeAgents, platform, limited, odd := mk("acme"), mk("acme", "/tenants/acme/agents/**"), mk(""), mk("", "/agents/**"), mk("a b")
	for _, tc := range []struct {
		p       *Principal
		path    string
		allowed bool
	}{
		{acme, "/tenants/acme/events", true},
		{acme, "/tenants/acme", true},
		{acme, "/tenants/acme/a/b", true},
		{acme, "/tenants/globex/events", false},
		{acme, "/tenants/acmex/events", false},
		{acme, "/tenants", false},
		{acme, "/events", false},
		{acmeAgents, "/tenants/acme/agents/x", true},
		{acmeAgents, "/tenants/acme/events", false},
		{platform, "/tenants/acme/events", true},
		{platform, "/events", true},
		{limited, "/agents/x", true},
		{limited, "/tenants/acme/x", false},
		{odd, "/tenants/a b/x", false},
		{odd, "/x", false},
	} {
		if got := tc.p.AllowsPath(tc.path); got != tc.allowed {
			t.Errorf("%q/%v AllowsPath(%q) = %v", tc.p.Tenant, tc.p.Paths, tc.path, got)
		}
	}
	for _, tc := range []struct {
		p       *Principal
		pattern string
		allowed bool
	}{
		{acme, "/tenants/acme/**", true},
		{acme, "/tenants/acme/*", true},
		{acme, "/tenants/acme/orders/*/x", true},
		{acme, "/tenants/acme", true},
		{acme, "/tenants/*/orders", false},
		{acme, "/tenants/**", false},
		{acme, "/**", false},
		{acme, "/events", false},
		{acme, "/tenants/globex/**", false},
		{acme, "/tenants/acme/a*", false},
		{acmeAgents, "/tenants/acme/agents/*", true},
		{acmeAgents, "/tenants/acme/**", false},
		{platform, "/**", true},
		{limited, "/agents/*", true},
		{limited, "/agents/**", true},
		{limited, "/**", false},
		{limited, "/*/x", false},
		{odd, "/**", false},
	} {
		if got := tc.p.AllowsPattern(tc.pattern); got != tc.allowed {
			t.Errorf("%q/%v AllowsPattern(%q) = %v", tc.p.Tenant, tc.p.Paths, tc.pattern, got)
		}
	}
	if acme.Namespace() != "/tenants/acme/" || platform.Namespace() != "" || odd.Namespace() != "" {
		t.Errorf("namespaces: %q, %q, %q", acme.Namespace(), platform.Namespace(), odd.Namespace())
	}
}

// The Authenticator applies its template to stored keys and to platform
// tokens, so every caller of AllowsPath gets the boundary.
func TestAuthenticatorAppliesTenantStreamPrefix(t *testing.T) {
	t.Parallel()
	keys := newMemKeys()
	_, secret := addKey(t, keys, store.Key{Scopes: []string{"streams:read"}, Tenant: "acme"})
	a, err := New(Config{Keys: keys, TenantStreamPrefix: "/orgs/{tenant}/"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if !p.AllowsPath("/orgs/acme/x") || p.AllowsPath("/tenants/acme/x") || a.TenantStreamPrefix() != "/orgs/{tenant}/" {
		t.Fatalf("the configured prefix is not applied: namespace %q", p.Namespace())
	}
	if Off().TenantStreamPrefix() != DefaultTenantStreamPrefix {
		t.Fatal("Off has no default prefix")
	}
}

// The namespace check on the append path allocates nothing.
func TestAllowsPathAllocatesNothing(t *testing.T) {
	p, err := newPrincipal("k", KindKey, "acme", []Scope{ScopeStreamsWrite}, nil, time.Time{}, DefaultTenantStreamPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { p.AllowsPath("/tenants/acme/events") }); n != 0 {
		t.Fatalf("AllowsPath allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { StreamOwner(DefaultTenantStreamPrefix, "/tenants/acme/events") }); n != 0 {
		t.Fatalf("StreamOwner allocates %v times", n)
	}
}
