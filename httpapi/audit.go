package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/internal/audit"
	"github.com/heraldstreams/herald/internal/httpjson"
)

// The audit log: one record (message "audit") for every change made
// through Herald (the management API, subscriptions, stream creation and
// deletion; appends are data, not changes of what exists) and for every
// request refused for its credential or its origin. Each names who
// (principal, kind, tenant), from where (client), what (route, path and
// what the handler added: the key made, the subscription deleted) and the
// outcome (status, and a refusal's code).

// audited serves a change and logs it with who made it and its outcome.
// route is the route's pattern, "" for r.Pattern (a mounted route).
func (s *Server) audited(w http.ResponseWriter, r *http.Request, p *auth.Principal, route string, h http.Handler, attrs ...slog.Attr) {
	ctx, rec := audit.NewContext(r.Context())
	sw := &statusWriter{ResponseWriter: w}
	h.ServeHTTP(sw, r.WithContext(ctx))
	if route == "" {
		route = r.Pattern
	}
	if p == nil {
		p = auth.Anonymous // access control off
	}
	record := append([]slog.Attr{
		slog.String("principal", p.ID), slog.String("kind", string(p.Kind)), slog.String("tenant", p.Tenant),
		slog.String("client", r.RemoteAddr),
		slog.String("route", route), slog.String("path", r.URL.Path), slog.Int("status", sw.status()),
	}, attrs...)
	s.audit.LogAttrs(r.Context(), slog.LevelInfo, "audit", append(record, rec.Attrs()...)...)
}

// auditRefusal logs a request refused for its credential (401, 403) or
// its origin: the credential's id when it names one (a key's id is
// public, its secret never logged), the client's address, the route and
// the refusal's code.
func (s *Server) auditRefusal(r *http.Request, principal string, status int, code string) {
	s.audit.LogAttrs(r.Context(), slog.LevelInfo, "audit",
		slog.String("principal", principal), slog.String("client", r.RemoteAddr),
		slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", status), slog.String("code", code), slog.String("outcome", "refused"))
}

// refuse answers a request refused before its credential is looked at
// (its origin) and audits it.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err *httpjson.Error) {
	s.auditRefusal(r, "", err.Status, err.Code)
	s.fail(w, r, err)
}

// credentialID names the credential a refused request presented, for the
// audit log: the principal of a valid one refused a route (403), or the
// id of a stored key's token (its public part), whether or not the key
// exists. A token that did not verify names nothing: its claims are the
// sender's word.
func (s *Server) credentialID(r *http.Request, status int) string {
	token := auth.BearerToken(r.Header.Get("Authorization"))
	if token == "" {
		return ""
	}
	if status == http.StatusForbidden {
		if p, err := s.auth.Authenticate(r.Context(), token); err == nil {
			return p.ID
		}
	}
	if id, ok := auth.ParseKey(token); ok {
		return id
	}
	return ""
}

// subscriptionAudit is what the audit record of a subscription change
// names: the subscription's id and pattern.
func subscriptionAudit(r *http.Request) slog.Attr {
	return slog.Group("subscription", slog.String("id", r.URL.Query().Get("subscription")), slog.String("pattern", r.URL.Path))
}
