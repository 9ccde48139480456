// Package auth is Herald's access control: API keys with scopes, the
// admin key that bootstraps them, platform JWTs, and the middleware that
// routes declare their access rule with.
//
// A request presents a credential as "Authorization: Bearer <credential>".
// The Authenticator resolves it to a Principal (who, which tenant, which
// scopes, which stream paths); Require checks the principal against the
// route's Rule and records it in the request context. Failures are 401
// (no valid credential) or 403 (valid, but not allowed here), with a JSON
// error body.
package auth

import (
	"fmt"
	"slices"
	"strings"
)

// Scope is one permission a key or token carries.
type Scope string

// The scopes. ScopeAdmin grants every other scope too, and the key API.
const (
	ScopeStreamsRead        Scope = "streams:read"
	ScopeStreamsWrite       Scope = "streams:write"
	ScopeSubscriptionsRead  Scope = "subscriptions:read"
	ScopeSubscriptionsWrite Scope = "subscriptions:write"
	ScopeEndpointsRead      Scope = "endpoints:read"
	ScopeEndpointsWrite     Scope = "endpoints:write"
	ScopeEventsPublish      Scope = "events:publish"
	ScopeDeliveriesRead     Scope = "deliveries:read"
	ScopeDeliveriesWrite    Scope = "deliveries:write"
	ScopeAdmin              Scope = "admin"
)

// AllScopes lists every scope, in a stable order.
var AllScopes = []Scope{
	ScopeStreamsRead, ScopeStreamsWrite,
	ScopeSubscriptionsRead, ScopeSubscriptionsWrite,
	ScopeEndpointsRead, ScopeEndpointsWrite,
	ScopeEventsPublish,
	ScopeDeliveriesRead, ScopeDeliveriesWrite,
	ScopeAdmin,
}

// scopeSet is a set of scopes as bits (bit i: AllScopes[i]), so the check
// on every request is one AND.
type scopeSet uint16

func bit(s Scope) (scopeSet, bool) {
	i := slices.Index(AllScopes, s)
	if i < 0 {
		return 0, false
	}
	return 1 << i, true
}

func (set scopeSet) has(s Scope) bool {
	b, ok := bit(s)
	return ok && set&b != 0
}

// ParseScope returns the scope named s, or an error naming the scopes
// there are.
func ParseScope(s string) (Scope, error) {
	if _, ok := bit(Scope(s)); !ok {
		names := make([]string, len(AllScopes))
		for i, sc := range AllScopes {
			names[i] = string(sc)
		}
		return "", fmt.Errorf("unknown scope %q; scopes are %s", s, strings.Join(names, ", "))
	}
	return Scope(s), nil
}

// ParseScopes parses a list of scope names. The result is in AllScopes
// order without duplicates.
func ParseScopes(names []string) ([]Scope, error) {
	var set scopeSet
	for _, n := range names {
		s, err := ParseScope(n)
		if err != nil {
			return nil, err
		}
		b, _ := bit(s)
		set |= b
	}
	return set.list(), nil
}

func (set scopeSet) list() []Scope {
	var out []Scope
	for i, s := range AllScopes {
		if set&(1<<i) != 0 {
			out = append(out, s)
		}
	}
	return out
}

func setOf(scopes []Scope) scopeSet {
	var set scopeSet
	for _, s := range scopes {
		if b, ok := bit(s); ok {
			set |= b
		}
	}
	return set
}
