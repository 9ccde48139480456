package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldstreams/herald/glob"
)

// Kind says which credential a principal presented.
type Kind string

// Kinds of principal.
const (
	KindAdminKey Kind = "admin_key" // the bootstrap key (HERALD_ADMIN_KEY)
	KindKey      Kind = "key"       // a stored API key
	KindToken    Kind = "token"     // a platform JWT
	// KindAnonymous is every request while access control is off
	// (development on loopback, or --insecure-no-auth): it may do
	// anything, as an admin may.
	KindAnonymous Kind = "anonymous"
)

// Anonymous is the principal of every request while access control is off.
var Anonymous = &Principal{ID: "anonymous", Kind: KindAnonymous, Scopes: []Scope{ScopeAdmin}, Admin: true, scopes: setOf([]Scope{ScopeAdmin})}

// Principal is who a request acts as. It is immutable once built.
type Principal struct {
	// ID names the credential: "admin" for the admin key, the key id of a
	// stored key, "jwt:" + the subject of a platform token.
	ID   string
	Kind Kind
	// Tenant is the tenant the credential is limited to; "" for none.
	Tenant string
	// Scopes are the scopes granted (with ScopeAdmin, every scope).
	Scopes []Scope
	// Paths are the stream path patterns the credential is limited to;
	// empty means every path (of its tenant's namespace, for a tenant).
	Paths []string
	// Admin is true for the admin key and for credentials with
	// ScopeAdmin.
	Admin bool
	// ExpiresAt is when the credential stops working; zero when never.
	ExpiresAt time.Time

	scopes   scopeSet
	patterns []*glob.Pattern
	// namespace is the tenant's stream namespace (TenantNamespace), ""
	// for the platform and for a tenant without one, which reaches no
	// stream; nsPattern is namespace + "**", nil with it "".
	namespace string
	nsPattern *glob.Pattern
}

// newPrincipal builds a principal, compiling its path patterns; a
// tenant's principal is limited to its namespace under template (see
// TenantNamespace).
func newPrincipal(id string, kind Kind, tenant string, scopes []Scope, paths []string, expires time.Time, template string) (*Principal, error) {
	p := &Principal{ID: id, Kind: kind, Tenant: tenant, Scopes: scopes, Paths: paths, ExpiresAt: expires, scopes: setOf(scopes)}
	p.Admin = p.scopes.has(ScopeAdmin)
	if tenant != "" {
		p.namespace = TenantNamespace(template, tenant)
		if p.namespace != "" {
			pat, err := glob.Compile(p.namespace + "**")
			if err != nil {
				return nil, fmt.Errorf("auth: %s: tenant stream namespace: %w", id, err)
			}
			p.nsPattern = pat
		}
	}
	for _, raw := range paths {
		pat, err := glob.Compile(raw)
		if err != nil {
			return nil, fmt.Errorf("auth: %s: path pattern: %w", id, err)
		}
		p.patterns = append(p.patterns, pat)
	}
	return p, nil
}

// Has reports whether the principal holds scope s. Admin holds every
// scope.
func (p *Principal) Has(s Scope) bool {
	return p.Admin || p.scopes.has(s)
}

// AllowsPath reports whether the stream at path is within the
// principal's reach: its tenant's namespace, for a tenant (a prefix
// comparison), and its path patterns (any path, when it has none).
func (p *Principal) AllowsPath(path string) bool {
	if p.Tenant != "" && !inNamespace(p.namespace, path) {
		return false
	}
	if len(p.patterns) == 0 {
		return true
	}
	for _, pat := range p.patterns {
		if pat.Match(path) {
			return true
		}
	}
	return false
}

// AllowsPattern reports whether every stream path the glob pattern can
// match is within the principal's reach (see AllowsPath): inside its
// tenant's namespace and covered by one of its path patterns. It is
// conservative (glob.Pattern.Covers): false when unsure, and false for a
// pattern that does not compile.
func (p *Principal) AllowsPattern(pattern string) bool {
	if !p.limited() {
		return true
	}
	q, err := glob.Compile(pattern)
	if err != nil {
		return false
	}
	if p.Tenant != "" && (p.nsPattern == nil || !p.nsPattern.Covers(q)) {
		return false
	}
	if len(p.patterns) == 0 {
		return true
	}
	for _, pat := range p.patterns {
		if pat.Covers(q) {
			return true
		}
	}
	return false
}

// Namespace returns the principal's stream namespace (TenantNamespace):
// "" for the platform, and for a tenant that has none and so reaches no
// stream.
func (p *Principal) Namespace() string { return p.namespace }

// limited reports whether some stream paths are out of the principal's
// reach: it has a tenant or path patterns.
func (p *Principal) limited() bool { return p.Tenant != "" || len(p.patterns) > 0 }

// Expired reports whether the credential has expired at now.
func (p *Principal) Expired(now time.Time) bool {
	return !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt)
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal Require recorded, if any (none on
// public and callback routes).
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}
