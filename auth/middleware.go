package auth

import (
	"net/http"
)

// Rule is the access rule a route declares. A route's rule must say who
// may call it (Explicit): Require and httpapi's router refuse a rule
// that does not, so a route declared without one is a programming error
// caught at start, never a route open to any credential.
type Rule struct {
	// Public routes need no credential (health, readiness).
	Public bool
	// AnyCredential routes let in any valid credential, whatever its
	// scopes (whoami).
	AnyCredential bool
	// CallbackToken routes check their own credential (a webhook
	// consumer's callback token); Require passes them through untouched.
	CallbackToken bool
	// Scope is the scope the credential must hold; "" for none.
	Scope Scope
	// StreamPath, when set, returns the stream path the request names,
	// which must be within the credential's reach (Principal.AllowsPath:
	// its path patterns and its tenant's namespace). A request whose path
	// it cannot name ("") is refused to a credential with a tenant or
	// path patterns: the check fails closed.
	StreamPath func(*http.Request) string
	// StreamPattern, when set, returns the glob pattern the request names
	// (a subscription's), every path of which must be within the
	// credential's reach (Principal.AllowsPattern); "" fails closed as
	// with StreamPath.
	StreamPattern func(*http.Request) string
	// Unseen, when set, is the answer for a credential of a tenant whose
	// namespace does not hold the path StreamPath names: another owner's
	// object answers exactly as if it did not exist (the stream routes
	// set the answer of an absent stream). Without it, or for a path
	// outside a key's own path patterns, the answer is 403 FORBIDDEN.
	Unseen *Error
	// Platform routes serve installation-wide data or settings (stats,
	// metrics): a credential of a tenant is refused (403
	// TENANT_FORBIDDEN), as it must learn nothing of other tenants.
	Platform bool
}

// Require returns next behind rule: the request's bearer credential is
// authenticated and checked, and its principal recorded in the request
// context (FromContext) before next runs. Failures are answered with a
// JSON error (401 or 403) and never reach next.
func (a *Authenticator) Require(rule Rule, next http.Handler) http.Handler {
	if !rule.Explicit() {
		panic("auth: route rule says nobody may call it: set Public, CallbackToken, AnyCredential or a Scope") // a programming error
	}
	if rule.Scope != "" {
		if _, err := ParseScope(string(rule.Scope)); err != nil {
			panic("auth: route rule: " + err.Error()) // a programming error, caught by any test of the route
		}
	}
	if rule.Public || rule.CallbackToken {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Check(r, rule)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), p)))
	})
}

// Check authenticates r and checks it against rule, for handlers that
// decide their rule per request. Errors are *Error.
func (a *Authenticator) Check(r *http.Request, rule Rule) (*Principal, error) {
	token := BearerToken(r.Header.Get("Authorization"))
	p, err := a.Authenticate(r.Context(), token)
	if err != nil {
		return nil, err
	}
	if rule.Scope != "" && !p.Has(rule.Scope) {
		return nil, forbidden("the credential lacks the " + string(rule.Scope) + " scope")
	}
	if rule.Platform && p.Tenant != "" {
		return nil, tenantForbidden("this route serves the whole installation: a credential of a tenant cannot read it")
	}
	if rule.StreamPath != nil && p.limited() {
		if path := rule.StreamPath(r); path == "" || !p.AllowsPath(path) {
			if rule.Unseen != nil && path != "" && p.Tenant != "" && !inNamespace(p.namespace, path) {
				return nil, rule.Unseen
			}
			return nil, forbidden("the credential is not allowed on this stream path")
		}
	}
	if rule.StreamPattern != nil && p.limited() {
		if pattern := rule.StreamPattern(r); pattern == "" || !p.AllowsPattern(pattern) {
			return nil, forbidden("the pattern reaches streams outside the credential's stream paths")
		}
	}
	return p, nil
}

// Explicit reports whether the rule says who may call its route: public,
// a callback token, any valid credential, or a scope.
func (r Rule) Explicit() bool {
	return r.Public || r.CallbackToken || r.AnyCredential || r.Scope != ""
}

// Route is one route of Herald's HTTP API as the package that serves it
// declares it: the method and net/http ServeMux path pattern, the access
// rule, and the handler. Feature APIs export their routes; httpapi's
// route table serves them (and only it mounts routes), checking the rule
// of the route a request matched before the handler runs.
type Route struct {
	Method  string
	Pattern string
	Rule    Rule
	// Handler serves the route; the principal is in the request context
	// (FromContext). Nil only for the protocol's stream routes, which
	// httpapi serves itself.
	Handler http.Handler `json:"-"`
}
