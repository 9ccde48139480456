package httpapi

import (
	"net/http"
	"strings"

	"github.com/heraldstreams/herald/api"
	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi/apierr"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/ui"
)

// Route is one route Herald serves: method, pattern, the access rule it
// declares and its handler. Routes lists them all, so a test can walk
// every route with every kind of credential.
//
// Routes under /_herald/ and /callback/ have a net/http ServeMux path
// pattern; the stream and subscription routes, which live at any path,
// have "/{stream}" and "/{pattern}" with the query that selects them.
type Route = auth.Route

// Patterns of the routes that live at any path.
const (
	streamPattern        = "/{stream}"
	subscriptionPattern  = "/{pattern}?subscription={id}"
	subscriptionsPattern = "/{pattern}?subscriptions"
)

// APIs are the feature APIs the route table serves besides the stream
// routes and Herald's own (health, readiness, whoami, the stream list).
// A feature left nil or empty is not served.
type APIs struct {
	// Subscriptions serves the subscription and consumer routes and the
	// callback API (docs/subscriptions.md); *wake.Engine implements it.
	// Without it a subscription request gets 404
	// SUBSCRIPTIONS_UNAVAILABLE.
	Subscriptions SubscriptionEngine
	// Reserved serves the Durable Streams protocol's reserved
	// subscription API under the stream root's __ds/ prefix
	// (docs/subscriptions.md); *wake.Reserved implements it. Without it
	// those paths have no route (404).
	Reserved ReservedService
	// Keys are the routes of the key API (auth.KeysAPI.Routes).
	Keys []Route
	// Delivery are the routes of the event delivery API
	// (deliveryapi.API.Routes).
	Delivery []Route
	// Metrics serves the Prometheus metrics, to the admin of the whole
	// installation, or to anyone when PublicMetrics is set.
	Metrics       http.Handler
	PublicMetrics bool
	// Stats serves the dashboard's figures of the whole installation.
	Stats http.Handler
	// Dashboard serves the dashboard's files.
	Dashboard http.Handler
	// OpenAPI serves the OpenAPI document.
	OpenAPI http.Handler
}

// SubscriptionEngine serves the subscription API, the consumer API and
// callbacks; *wake.Engine implements it.
type SubscriptionEngine interface {
	SubscriptionService
	ConsumerService
}

// The access rules the table declares more than once.
var (
	public       = auth.Rule{Public: true}
	installation = auth.Rule{Scope: auth.ScopeAdmin, Platform: true}
	streamRead   = auth.Rule{Scope: auth.ScopeStreamsRead, StreamPath: requestPath, Unseen: errStreamUnseen}
	streamWrite  = auth.Rule{Scope: auth.ScopeStreamsWrite, StreamPath: requestPath, Unseen: errStreamUnseen}
	subsRead     = auth.Rule{Scope: auth.ScopeSubscriptionsRead}
)

// table is Herald's route table: every route it serves, declared once
// with its method, pattern, access rule and handler. A request's rule is
// the rule of the route it matched (see route), never a position in this
// list. To add a route, declare it here (or in its feature's Routes,
// which this table takes whole), describe it in api/openapi.json and give
// the access and owner matrices (cmd/herald) a request for it: their
// tests walk this table and fail on a route they do not know.
func (s *Server) table(apis APIs) []Route {
	routes := []Route{
		// The Durable Streams protocol. Stream routes are limited by a
		// credential's stream paths and tenant namespace; serveStream
		// serves them with the request's parsed state, by method.
		{Method: http.MethodGet, Pattern: streamPattern, Rule: streamRead},
		{Method: http.MethodHead, Pattern: streamPattern, Rule: streamRead},
		{Method: http.MethodPost, Pattern: streamPattern, Rule: streamWrite},
		// A create outside the caller's namespace is refused (403): no
		// stream may be made there, whether or not one exists.
		{Method: http.MethodPut, Pattern: streamPattern, Rule: auth.Rule{Scope: auth.ScopeStreamsWrite, StreamPath: requestPath}},
		{Method: http.MethodDelete, Pattern: streamPattern, Rule: streamWrite},

		{Method: http.MethodGet, Pattern: HeraldPrefix + "healthz", Rule: public, Handler: http.HandlerFunc(s.healthz)},
		{Method: http.MethodGet, Pattern: HeraldPrefix + "readyz", Rule: public, Handler: http.HandlerFunc(s.readyz)},
		{Method: http.MethodGet, Pattern: HeraldPrefix + "v1/streams", Rule: auth.Rule{Scope: auth.ScopeStreamsRead}, Handler: http.HandlerFunc(s.listStreams)},
		{Method: http.MethodGet, Pattern: HeraldPrefix + "v1/whoami", Rule: auth.Rule{AnyCredential: true}, Handler: http.HandlerFunc(s.whoami)},
	}
	if apis.Metrics != nil {
		rule := installation
		if apis.PublicMetrics {
			rule = public
		}
		routes = append(routes, Route{Method: http.MethodGet, Pattern: HeraldPrefix + "metrics", Rule: rule, Handler: apis.Metrics})
	}
	if apis.Dashboard != nil {
		routes = append(routes, Route{Method: http.MethodGet, Pattern: ui.Prefix, Rule: public, Handler: apis.Dashboard})
	}
	if apis.Stats != nil {
		routes = append(routes, Route{Method: http.MethodGet, Pattern: HeraldPrefix + "v1/stats", Rule: installation, Handler: apis.Stats})
	}
	if apis.OpenAPI != nil {
		routes = append(routes, Route{Method: http.MethodGet, Pattern: api.Path, Rule: public, Handler: apis.OpenAPI})
	}
	routes = append(routes, apis.Keys...)
	if svc := apis.Subscriptions; svc != nil {
		routes = append(routes, s.subscriptionRoutes(svc)...)
	}
	if svc := apis.Reserved; svc != nil {
		routes = append(routes, s.reservedRoutes(svc)...)
	}
	return append(routes, apis.Delivery...)
}

// subscriptionRoutes are the routes of the subscription API, the
// consumer API and callbacks (docs/subscriptions.md):
//
//	PUT    /{pattern}?subscription={id}   create (201 with the secret, 200 when identical)
//	GET    /{pattern}?subscriptions       list by pattern; /** lists all
//	GET    /**?subscription={id}          get by id (never the secret)
//	DELETE /{pattern}?subscription={id}   delete, consumers included (204)
//	POST   /callback/{consumer_id}        the callback API
//	GET    /_herald/v1/subscriptions/{id}/consumers?limit=&cursor=   a page of a subscription's consumers
//	GET    /_herald/v1/consumers/{consumer_id}                       one consumer, with next_deadline_reason
//
// A subscription belongs to the tenant of the credential that created it
// (the platform's, for a credential without one); every request sees
// only what its credential may (callerOf). A create checks the pattern it
// names, which must lie within the credential's stream paths (a pattern
// wider than them is 403); the other subscription routes do not.
// Consumers are their subscription's owner's: a credential sees those of
// the subscriptions it may see, and only those whose streams all lie
// within its stream paths; any other is absent (404, or left out of the
// list).
func (s *Server) subscriptionRoutes(svc SubscriptionEngine) []Route {
	write := auth.Rule{Scope: auth.ScopeSubscriptionsWrite}
	create := auth.Rule{Scope: auth.ScopeSubscriptionsWrite, StreamPattern: requestPath}
	return []Route{
		{Method: http.MethodPut, Pattern: subscriptionPattern, Rule: create, Handler: s.createSubscription(svc)},
		{Method: http.MethodGet, Pattern: subscriptionPattern, Rule: subsRead, Handler: s.getSubscription(svc)},
		{Method: http.MethodGet, Pattern: subscriptionsPattern, Rule: subsRead, Handler: s.listSubscriptions(svc)},
		{Method: http.MethodDelete, Pattern: subscriptionPattern, Rule: write, Handler: s.deleteSubscription(svc)},
		// A callback carries its own credential, the consumer's token.
		{Method: http.MethodPost, Pattern: CallbackPrefix + "{consumer_id}", Rule: auth.Rule{CallbackToken: true}, Handler: s.callback(svc)},
		{Method: http.MethodGet, Pattern: subscriptionsPrefix + "{id}/consumers", Rule: subsRead, Handler: s.listConsumers(svc)},
		{Method: http.MethodGet, Pattern: consumersPrefix + "{consumer_id}", Rule: subsRead, Handler: s.getConsumer(svc)},
	}
}

// errStreamUnseen is what a tenant's credential gets for a stream
// outside its namespace: the answer of an absent stream, word for word,
// so it learns nothing of another owner's streams.
var errStreamUnseen = &auth.Error{Status: http.StatusNotFound, Code: "STREAM_NOT_FOUND", Message: apierr.PublicMessage(store.ErrNotFound)}

// requestPath is the stream a stream route names: its path.
func requestPath(r *http.Request) string { return r.URL.Path }

// routeKey names a route: its method and pattern.
type routeKey struct{ method, pattern string }

// router is the table as served: the routes in table order, each by
// its key, and the mux of those under the reserved prefixes.
type router struct {
	routes        []Route
	byKey         map[routeKey]*Route
	mux           *http.ServeMux
	subscriptions bool
	// reserved: the reserved subscription API is served.
	reserved bool
}

// newRouter serves routes. It panics on a route without an explicit
// rule, with a scope Herald does not know, served twice, or (besides the
// stream and subscription routes) outside the reserved prefixes: each is
// a programming error, caught by any test that builds a server.
func (s *Server) newRouter(routes []Route) *router {
	rt := &router{routes: routes, byKey: make(map[routeKey]*Route, len(routes)), mux: http.NewServeMux()}
	for i := range routes {
		r := &routes[i]
		name := r.Method + " " + r.Pattern
		if !r.Rule.Explicit() {
			panic("httpapi: route " + name + " declares no access rule (Public, CallbackToken, AnyCredential or a Scope)")
		}
		if r.Rule.Scope != "" {
			if _, err := auth.ParseScope(string(r.Rule.Scope)); err != nil {
				panic("httpapi: route " + name + ": " + err.Error())
			}
		}
		k := routeKey{r.Method, r.Pattern}
		if _, dup := rt.byKey[k]; dup {
			panic("httpapi: route " + name + " is declared twice")
		}
		rt.byKey[k] = r
		switch r.Pattern {
		case streamPattern:
			continue
		case subscriptionPattern, subscriptionsPattern:
			rt.subscriptions = true
			continue
		}
		if !strings.HasPrefix(r.Pattern, HeraldPrefix) && !strings.HasPrefix(r.Pattern, CallbackPrefix) && !strings.HasPrefix(r.Pattern, s.dsPrefix) {
			panic("httpapi: route " + name + " is not under " + HeraldPrefix + ", " + CallbackPrefix + " or " + s.dsPrefix + ": stream paths belong to the protocol")
		}
		if r.Handler == nil {
			panic("httpapi: route " + name + " has no handler")
		}
		rt.reserved = rt.reserved || strings.HasPrefix(r.Pattern, s.dsPrefix)
		rt.mux.Handle(name, s.guard(r.Rule, r.Handler))
	}
	return rt
}

// Mount serves the route table with apis: Herald's own routes, the
// stream routes and the feature APIs in apis. Each call serves the whole
// table anew; call it before serving.
func (s *Server) Mount(apis APIs) {
	s.router.Store(s.newRouter(s.table(apis)))
}

// route is the route of method and pattern in the table, nil when there
// is none.
func (s *Server) route(method, pattern string) *Route {
	return s.router.Load().byKey[routeKey{method, pattern}]
}

// Routes returns every route the server serves with its access rule, in
// table order.
func (s *Server) Routes() []Route {
	return append([]Route(nil), s.router.Load().routes...)
}

// guard checks a mounted route's rule, then records the principal and
// audits the change.
func (s *Server) guard(rule auth.Rule, h http.Handler) http.Handler {
	if rule.Public || rule.CallbackToken {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.authorize(w, r, rule)
		if !ok {
			return
		}
		r = r.WithContext(auth.NewContext(r.Context(), p))
		if isChange(r.Method) {
			s.audited(w, r, p, "", h)
			return
		}
		h.ServeHTTP(w, r)
	})
}
