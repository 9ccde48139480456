package auth

import (
	"net/http"
	"time"

	"github.com/heraldstreams/herald/store"
)

// PortalTokensPath is the route that mints portal tokens.
const PortalTokensPath = "/_herald/v1/portal-tokens"

// Bounds of a portal token's lifetime.
const (
	MinPortalTTL     = time.Minute
	MaxPortalTTL     = 24 * time.Hour
	DefaultPortalTTL = 15 * time.Minute
)

// PortalScopes are the scopes of a portal token: what the tenant portal
// of the dashboard needs to show a tenant its endpoints and their
// deliveries (with each event's payload) and to let it manage them.
var PortalScopes = []Scope{ScopeEndpointsRead, ScopeEndpointsWrite, ScopeDeliveriesRead, ScopeDeliveriesWrite}

// portalRequest is the body of POST /_herald/v1/portal-tokens.
type portalRequest struct {
	Tenant string `json:"tenant"`
	TTL    string `json:"ttl"`
}

// portalToken is the answer: the token, shown only here, and the
// dashboard's address that hands it to the portal.
type portalToken struct {
	ID        string   `json:"id"`
	Token     string   `json:"token"`
	Tenant    string   `json:"tenant"`
	Scopes    []string `json:"scopes"`
	ExpiresAt string   `json:"expires_at"`
	URL       string   `json:"url,omitempty"`
}

// mintPortalToken makes a short-lived key of one tenant with
// PortalScopes, stored and listed like any other key (so it can be
// revoked), and answers it with the portal's URL, the token in its
// fragment. A credential limited to a tenant mints for its own tenant
// only; the token never outlives the credential that minted it (see
// expiryWithin).
func (k *KeysAPI) mintPortalToken(w http.ResponseWriter, r *http.Request) {
	caller, _ := FromContext(r.Context())
	var req portalRequest
	if err := decodeBody(w, r, &req); err != nil {
		k.fail(w, r, err)
		return
	}
	ttl, err := portalTTL(req.TTL)
	if err != nil {
		k.fail(w, r, err)
		return
	}
	if err := validTenant(req.Tenant); err != nil {
		k.fail(w, r, err)
		return
	}
	tenant, err := tenantOfNewKey(caller, req.Tenant)
	if err != nil {
		k.fail(w, r, err)
		return
	}
	if tenant == "" {
		k.fail(w, r, badRequest("INVALID_TENANT", "tenant", "tenant is required: a portal token shows one tenant's endpoints"))
		return
	}
	now := k.cfg.Now()
	// A token asked for no ttl gets the default, cut to the caller's
	// own expiry; an asked ttl beyond it is refused, as a key's
	// expires_at is.
	expires, ok := expiryWithin(caller, now.Add(ttl).UTC())
	if !ok && req.TTL == "" {
		expires, ok = expiryWithin(caller, time.Time{})
	}
	if !ok {
		k.fail(w, r, badRequest("INVALID_TTL", "ttl", "ttl must end by %s, when the credential minting the token expires: a token never outlives the credential that made it",
			caller.ExpiresAt.UTC().Format(time.RFC3339)))
		return
	}
	key := store.Key{Tenant: tenant, ExpiresAt: expires, Description: "portal token: the dashboard's tenant portal of " + tenant}
	if err := pathsInNamespace(key, k.cfg.Auth.TenantStreamPrefix()); err != nil {
		k.fail(w, r, err)
		return
	}
	for _, s := range PortalScopes {
		key.Scopes = append(key.Scopes, string(s))
	}
	v, err := k.issue(r.Context(), key, now)
	if err != nil {
		k.fail(w, r, err)
		return
	}
	out := portalToken{ID: v.ID, Token: v.Key, Tenant: v.Tenant, Scopes: v.Scopes, ExpiresAt: *v.ExpiresAt}
	if k.cfg.PortalURL != "" {
		out.URL = k.cfg.PortalURL + "#key=" + v.Key
	}
	writeJSON(w, http.StatusCreated, out)
}

// portalTTL reads a portal token's lifetime: a Go duration ("15m",
// "1h30m") within the bounds, DefaultPortalTTL when empty.
func portalTTL(s string) (time.Duration, error) {
	if s == "" {
		return DefaultPortalTTL, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < MinPortalTTL || d > MaxPortalTTL {
		return 0, badRequest("INVALID_TTL", "ttl", "ttl must be a duration from %s to %s, such as \"15m\" or \"2h\"", "1m", "24h")
	}
	return d, nil
}
