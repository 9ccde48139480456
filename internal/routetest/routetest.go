// Package routetest serves a feature API's declared routes on a mux of
// their own, for the tests of the package that declares them. Herald
// itself serves every route through httpapi's route table.
package routetest

import (
	"net/http"

	"github.com/heraldstreams/herald/auth"
)

// Handler serves routes, each behind its rule checked by a (auth.Require).
// With a nil a the routes are served bare: no credential is checked and
// no principal is in the request context, which a handler must treat as
// no access at all. The test may add routes of its own to the mux.
func Handler(a *auth.Authenticator, routes []auth.Route) *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range routes {
		h := rt.Handler
		if a != nil {
			h = a.Require(rt.Rule, h)
		}
		mux.Handle(rt.Method+" "+rt.Pattern, h)
	}
	return mux
}
