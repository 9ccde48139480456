package httpapi

import (
	"net/http"
	"time"

	"github.com/heraldstreams/herald/auth"
)

// whoamiBody is the answer of GET /_herald/v1/whoami: what the caller's
// credential is and may do, never its secret. A page uses it to show only
// what the credential's scopes allow.
type whoamiBody struct {
	ID        string       `json:"id"`
	Kind      auth.Kind    `json:"kind"`
	Tenant    string       `json:"tenant"`
	Scopes    []auth.Scope `json:"scopes"`
	Paths     []string     `json:"paths"`
	Admin     bool         `json:"admin"`
	ExpiresAt *string      `json:"expires_at"`
	// AuthEnabled is false when access control is off (every request is
	// anonymous and may do anything).
	AuthEnabled bool `json:"auth_enabled"`
}

// whoami answers with the caller's principal (any valid credential).
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	p, ok := auth.FromContext(r.Context())
	if !ok {
		p = auth.Anonymous // access control off: guard recorded nothing
	}
	b := whoamiBody{ID: p.ID, Kind: p.Kind, Tenant: p.Tenant, Scopes: p.Scopes, Paths: p.Paths, Admin: p.Admin, AuthEnabled: s.auth.Enabled()}
	if b.Scopes == nil {
		b.Scopes = []auth.Scope{}
	}
	if b.Paths == nil {
		b.Paths = []string{}
	}
	if !p.ExpiresAt.IsZero() {
		e := p.ExpiresAt.UTC().Format(time.RFC3339)
		b.ExpiresAt = &e
	}
	writeJSON(w, http.StatusOK, b)
}
