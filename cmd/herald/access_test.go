package main

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func tcpAddr(s string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		panic(err)
	}
	return a
}

// Beyond loopback, access control must be on or explicitly waived.
func TestListenBeyondLoopbackNeedsAccessControl(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  accessConfig
		addr string
		ok   bool
	}{
		{"loopback v4, auth off", accessConfig{}, "127.0.0.1:4437", true},
		{"loopback v6, auth off", accessConfig{}, "[::1]:4437", true},
		{"every interface, auth off", accessConfig{}, "0.0.0.0:4437", false},
		{"every v6 interface, auth off", accessConfig{}, "[::]:4437", false},
		{"private address, auth off", accessConfig{}, "10.1.2.3:4437", false},
		{"every interface, admin key", accessConfig{AdminKey: testAdminKey}, "0.0.0.0:4437", true},
		{"every interface, platform tokens", accessConfig{JWKSURL: "https://idp.example/jwks", JWTIssuer: "i", JWTAudience: "a"}, "0.0.0.0:4437", true},
		{"every interface, waived", accessConfig{InsecureNoAuth: true}, "0.0.0.0:4437", true},
	} {
		err := c.cfg.checkListen(tcpAddr(c.addr))
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v", c.name, err)
		}
		if err != nil && (!errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--insecure-no-auth")) {
			t.Errorf("%s: the refusal does not say what to do: %v", c.name, err)
		}
	}
}

func TestAdminKeyFromEnvironmentOrFile(t *testing.T) {
	t.Parallel()
	cfg, err := parseServeFlags(nil, io.Discard, io.Discard, envOf(map[string]string{adminKeyEnv: testAdminKey}))
	if err != nil || cfg.Access.AdminKey != testAdminKey || !cfg.Access.enabled() {
		t.Fatalf("from the environment: %+v, %v", cfg, err)
	}
	file := filepath.Join(t.TempDir(), "admin.key")
	if err := os.WriteFile(file, []byte(testAdminKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = parseServeFlags([]string{"--admin-key-file", file}, io.Discard, io.Discard, noEnv)
	if err != nil || cfg.Access.AdminKey != testAdminKey {
		t.Fatalf("from a file: %+v, %v", cfg, err)
	}
	for name, c := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"both":               {[]string{"--admin-key-file", file}, map[string]string{adminKeyEnv: testAdminKey}},
		"too short":          {nil, map[string]string{adminKeyEnv: "short"}},
		"missing":            {[]string{"--admin-key-file", filepath.Join(t.TempDir(), "none")}, nil},
		"jwt without issuer": {[]string{"--jwt-jwks-url", "https://idp.example/jwks", "--jwt-audience", "herald"}, nil},
		"bad origin":         {[]string{"--cors-origins", "console.example"}, nil},
		"origin with a path": {[]string{"--cors-origins", "https://console.example/app"}, nil},
	} {
		if _, err := parseServeFlags(c.args, io.Discard, io.Discard, envOf(c.env)); !errors.Is(err, errUsage) {
			t.Errorf("%s: err = %v, want a usage error", name, err)
		}
	}
}

// The CORS list is --cors-origins plus the public URL's origin: a page
// Herald serves behind a proxy, whose scheme and port Herald cannot see.
func TestCORSOriginsWithPublicURL(t *testing.T) {
	t.Parallel()
	c := accessConfig{CORSOrigins: "https://console.example, http://localhost:3000"}
	if got := c.corsOrigins(""); !slices.Equal(got, []string{"https://console.example", "http://localhost:3000"}) {
		t.Errorf("without a public URL: %v", got)
	}
	if got := c.corsOrigins("https://Herald.Example:443/base/"); !slices.Equal(got, []string{"https://console.example", "http://localhost:3000", "https://herald.example"}) {
		t.Errorf("with a public URL: %v", got)
	}
}

func TestAllowedHostsDefaults(t *testing.T) {
	t.Parallel()
	c := accessConfig{}
	if got := c.allowedHosts(tcpAddr("127.0.0.1:4437"), ""); !slices.Equal(got, []string{"localhost", "127.0.0.1", "::1"}) {
		t.Errorf("loopback: %v", got)
	}
	if got := c.allowedHosts(tcpAddr("127.0.0.1:4437"), "https://tunnel.example:8443/"); !slices.Contains(got, "tunnel.example") {
		t.Errorf("loopback with a public URL: %v", got)
	}
	if got := c.allowedHosts(tcpAddr("0.0.0.0:4437"), ""); got != nil {
		t.Errorf("every interface: %v, want any host", got)
	}
	c.AllowedHosts = "herald.internal, herald.example"
	if got := c.allowedHosts(tcpAddr("0.0.0.0:4437"), ""); !slices.Equal(got, []string{"herald.internal", "herald.example"}) {
		t.Errorf("configured: %v", got)
	}
}

// --tenant-stream-prefix defaults to /tenants/{tenant}/, may come from
// the environment, and must be a plain path holding {tenant} once.
func TestTenantStreamPrefixFlag(t *testing.T) {
	t.Parallel()
	cfg, err := parseServeFlags(nil, io.Discard, io.Discard, noEnv)
	if err != nil || cfg.Access.TenantStreamPrefix != "/tenants/{tenant}/" {
		t.Fatalf("default: %q, %v", cfg.Access.TenantStreamPrefix, err)
	}
	cfg, err = parseServeFlags(nil, io.Discard, io.Discard, envOf(map[string]string{"HERALD_TENANT_STREAM_PREFIX": "/orgs/{tenant}/streams/"}))
	if err != nil || cfg.Access.TenantStreamPrefix != "/orgs/{tenant}/streams/" {
		t.Fatalf("from the environment: %q, %v", cfg.Access.TenantStreamPrefix, err)
	}
	// The installation's default events stream is the platform's.
	if _, err := parseServeFlags([]string{"--delivery-default-stream", "/tenants/acme/events"}, io.Discard, io.Discard, noEnv); !errors.Is(err, errUsage) {
		t.Errorf("a default events stream in a tenant's namespace: err = %v", err)
	}
	for _, bad := range []string{"tenants/{tenant}/", "/tenants/{tenant}", "/tenants/", "/{tenant}/{tenant}/", "/*/{tenant}/", "//{tenant}/", "/../{tenant}/", "/a/%2A/{tenant}/"} {
		_, err := parseServeFlags([]string{"--tenant-stream-prefix", bad}, io.Discard, io.Discard, noEnv)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--tenant-stream-prefix") {
			t.Errorf("%q: err = %v, want a usage error naming the flag", bad, err)
		}
	}
}
