package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi"
	"github.com/heraldstreams/herald/internal/privfile"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/webhook"
)

// adminKeyEnv gives the admin key directly. It has no flag: a flag's value
// is visible to every user in the process list.
const adminKeyEnv = "HERALD_ADMIN_KEY"

// accessConfig is how `herald serve` controls access.
type accessConfig struct {
	// AdminKey is the bootstrap key: HERALD_ADMIN_KEY, or the contents of
	// AdminKeyFile.
	AdminKey     string
	AdminKeyFile string
	// InsecureNoAuth lets Herald listen beyond loopback with access
	// control off.
	InsecureNoAuth bool
	// PublicMetrics serves /_herald/metrics without a credential.
	PublicMetrics bool
	// CORSOrigins are the browser origins that may call Herald across
	// origins (see httpapi.Config.CORSOrigins).
	CORSOrigins  string
	AllowedHosts string
	// Platform tokens.
	JWTSecretFile  string
	JWKSURL        string
	JWKSAllowCIDRs string
	JWTIssuer      string
	JWTAudience    string
	JWTTenantClaim string
	JWTScopeClaim  string
	// TenantStreamPrefix is the template of a tenant's stream namespace.
	TenantStreamPrefix string
	// JWTRequireTenant refuses platform tokens without a tenant claim.
	JWTRequireTenant bool
	// JWKSAllowHTTP allows an http:// JWKS URL on a loopback address.
	JWKSAllowHTTP bool
}

func (c *accessConfig) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.AdminKeyFile, "admin-key-file", "", "file holding the admin key, which turns access control on and creates the other keys (or "+adminKeyEnv+"; at least 32 characters: openssl rand -base64 32)")
	fs.BoolVar(&c.InsecureNoAuth, "insecure-no-auth", false, "listen beyond loopback with access control off: anyone who reaches the port may do anything (logged as a warning at every start)")
	fs.BoolVar(&c.PublicMetrics, "public-metrics", false, "serve /_herald/metrics without a credential (default: an admin credential when access control is on)")
	fs.StringVar(&c.CORSOrigins, "cors-origins", "", "comma-separated browser origins (scheme://host[:port], or * for any) whose pages may call Herald across origins: every route with access control off (where loopback origins may too, and no other), Herald's API and the subscription routes with it on (where stream routes answer any origin)")
	fs.StringVar(&c.AllowedHosts, "allowed-hosts", "", "comma-separated Host names Herald answers, any port (default: localhost, 127.0.0.1 and ::1 when listening on loopback, any otherwise); closes DNS rebinding")
	fs.StringVar(&c.JWTSecretFile, "jwt-hs256-secret-file", "", "accept platform JWTs signed with HS256 by the secret in this file (at least 32 bytes)")
	fs.StringVar(&c.JWKSURL, "jwt-jwks-url", "", "accept platform JWTs signed by a key of this JWK Set (https://, fetched through the SSRF-safe sender)")
	fs.StringVar(&c.JWKSAllowCIDRs, "jwt-jwks-allow-cidrs", "", "comma-separated private ranges the JWK Set may be fetched from over https:// (an identity provider inside your network)")
	fs.StringVar(&c.JWTIssuer, "jwt-issuer", "", "the iss a platform JWT must carry (required with platform tokens)")
	fs.StringVar(&c.JWTAudience, "jwt-audience", "", "the aud a platform JWT must carry (required with platform tokens)")
	fs.StringVar(&c.JWTTenantClaim, "jwt-tenant-claim", "", "claim holding the tenant (default: tenant, then org_id)")
	fs.BoolVar(&c.JWTRequireTenant, "jwt-require-tenant", false, "refuse platform JWTs without a tenant claim (401 INVALID_TENANT_CLAIM), so that no token acts for every tenant")
	fs.BoolVar(&c.JWKSAllowHTTP, "jwt-jwks-allow-http", false, "allow an http:// --jwt-jwks-url on a loopback address or localhost (an identity provider on this machine); otherwise it must be https://")
	fs.StringVar(&c.JWTScopeClaim, "jwt-scope-claim", "", "claim holding the scopes, space-separated or an array (default: scope, then scopes)")
	fs.StringVar(&c.TenantStreamPrefix, "tenant-stream-prefix", auth.DefaultTenantStreamPrefix, "stream namespace of each tenant, with {tenant} for its name: a tenant's credentials reach only the streams under it (starts and ends with '/')")
}

// readSecrets reads the admin key and JWT secret from the environment and
// files, after flag parsing.
func (c *accessConfig) readSecrets(env func(string) (string, bool)) error {
	if v, ok := env(adminKeyEnv); ok && strings.TrimSpace(v) != "" {
		if c.AdminKeyFile != "" {
			return fmt.Errorf("%w: set one of %s and --admin-key-file, not both", errUsage, adminKeyEnv)
		}
		c.AdminKey = strings.TrimSpace(v)
	}
	if c.AdminKeyFile != "" {
		key, err := readSecretFile("--admin-key-file", c.AdminKeyFile)
		if err != nil {
			return err
		}
		c.AdminKey = key
		if c.AdminKey == "" {
			return fmt.Errorf("%w: --admin-key-file %s is empty", errUsage, c.AdminKeyFile)
		}
	}
	return nil
}

// maxSecretFile bounds an admin key or JWT secret file: a secret is a
// line, and a mistaken path (a log, a database) must not be read whole.
const maxSecretFile = 64 << 10

// readSecretFile reads the secret in the file a flag names, without the
// surrounding white space. Like the key-encryption key file, a file its
// group or other users may read or write is refused, naming the file and
// the chmod that fixes it: a secret others can read is no secret.
func readSecretFile(flagName, path string) (string, error) {
	b, err := privfile.Read(path, maxSecretFile)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", errUsage, flagName, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func (c *accessConfig) problems() []string {
	var p []string
	if c.AdminKey != "" && len(c.AdminKey) < auth.MinAdminKeyLength {
		p = append(p, fmt.Sprintf("the admin key must be at least %d characters (openssl rand -base64 32)", auth.MinAdminKeyLength))
	}
	if c.JWTSecretFile != "" && c.JWKSURL != "" {
		p = append(p, "set one of --jwt-hs256-secret-file and --jwt-jwks-url")
	}
	if c.jwtOn() && (c.JWTIssuer == "" || c.JWTAudience == "") {
		p = append(p, "platform tokens need --jwt-issuer and --jwt-audience")
	}
	if err := auth.CheckTenantStreamPrefix(c.TenantStreamPrefix); err != nil {
		p = append(p, "--tenant-stream-prefix: "+err.Error())
	}
	if _, err := webhook.ParseCIDRList(c.JWKSAllowCIDRs); err != nil {
		p = append(p, "--jwt-jwks-allow-cidrs: "+err.Error())
	}
	for _, o := range splitList(c.CORSOrigins) {
		if o == "*" {
			continue
		}
		if _, err := httpapi.ParseOrigin(o); err != nil {
			p = append(p, fmt.Sprintf("--cors-origins: %q is not an origin (scheme://host[:port])", o))
		}
	}
	return p
}

func (c *accessConfig) jwtOn() bool { return c.JWTSecretFile != "" || c.JWKSURL != "" }

// enabled reports whether access control is on: whenever an admin key or
// a token verifier is configured, whatever the address.
func (c *accessConfig) enabled() bool { return c.AdminKey != "" || c.jwtOn() }

// checkListen refuses to serve beyond loopback with access control off,
// unless the operator said --insecure-no-auth.
func (c *accessConfig) checkListen(addr net.Addr) error {
	if c.enabled() || c.InsecureNoAuth || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("%w: refusing to listen on %s with access control off: anyone who reaches it could read and change everything. "+
		"Configure an admin key (%s or --admin-key-file) or platform tokens, listen on loopback (--addr 127.0.0.1:4437), "+
		"or accept the risk with --insecure-no-auth", errUsage, addr, adminKeyEnv)
}

// isLoopback reports whether a listener's address is a loopback address.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	return ok && ip.Unmap().IsLoopback()
}

// corsOrigins is the origin list: the configured one, and the public
// URL's origin (a page Herald serves, reached through a proxy whose
// scheme or port Herald does not see).
func (c *accessConfig) corsOrigins(publicURL string) []string {
	list := splitList(c.CORSOrigins)
	if u, err := url.Parse(publicURL); err == nil && u.Host != "" {
		if o, err := httpapi.ParseOrigin(u.Scheme + "://" + u.Host); err == nil {
			list = append(list, o.String())
		}
	}
	return list
}

// allowedHosts is the Host list: the configured one, or the loopback names
// (and the public URL's host) when listening on loopback, or none (any).
func (c *accessConfig) allowedHosts(addr net.Addr, publicURL string) []string {
	if list := splitList(c.AllowedHosts); len(list) > 0 {
		return list
	}
	if !isLoopback(addr) {
		return nil
	}
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	return hosts
}

// newAuthenticator builds the access control of `herald serve` and logs
// what it is.
func (c *accessConfig) newAuthenticator(ctx context.Context, keys store.KeyStore, addr net.Addr, log *slog.Logger) (*auth.Authenticator, *auth.JWTVerifier, error) {
	if !c.enabled() {
		if c.InsecureNoAuth && !isLoopback(addr) {
			log.Warn("access control is OFF on a non-loopback address (--insecure-no-auth): anyone who reaches " + addr.String() + " may read, change and delete everything")
		} else {
			log.Info("access control is off (development): listening on loopback only; set " + adminKeyEnv + " to turn it on")
		}
		return auth.Off(), nil, nil
	}
	var jwtv *auth.JWTVerifier
	if c.jwtOn() {
		jc := auth.JWTConfig{JWKSURL: c.JWKSURL, JWKSAllowHTTP: c.JWKSAllowHTTP, RequireTenant: c.JWTRequireTenant,
			Issuer: c.JWTIssuer, Audience: c.JWTAudience, Logger: log}
		if c.JWTSecretFile != "" {
			secret, err := readSecretFile("--jwt-hs256-secret-file", c.JWTSecretFile)
			if err != nil {
				return nil, nil, err
			}
			jc.HS256Secret = []byte(secret)
		}
		allow, err := webhook.ParseCIDRList(c.JWKSAllowCIDRs)
		if err != nil {
			return nil, nil, err
		}
		jc.JWKSAllowCIDRs = allow
		if c.JWTTenantClaim != "" {
			jc.TenantClaims = []string{c.JWTTenantClaim}
		}
		if c.JWTScopeClaim != "" {
			jc.ScopeClaims = []string{c.JWTScopeClaim}
		}
		if jwtv, err = auth.NewJWTVerifier(jc); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	a, err := auth.New(auth.Config{Keys: keys, AdminKey: c.AdminKey, JWT: jwtv, TenantStreamPrefix: c.TenantStreamPrefix, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	if jwtv != nil {
		jwtv.Start(ctx) // the caller closes it
	}
	log.Info("access control is on", "admin_key", c.AdminKey != "", "platform_tokens", c.jwtOn())
	return a, jwtv, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
