// Package httpapi serves the Durable Streams protocol (docs/protocol.md)
// over HTTP on top of a store.Store, plus Herald's own health endpoints.
// Streams live at any path except the reserved prefixes /_herald/ (Herald's
// API) and /callback/; requests that carry ?subscription or
// ?subscriptions, or a __ds path segment, go to the subscription routes.
// Every route Herald serves is declared once, with its access rule, in
// the route table (routes.go); feature APIs hand it their routes (APIs).
//
// Every protocol rule comes from the protocol package; every storage error
// maps to one status and JSON code in errors.go.
package httpapi

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/internal/telemetry"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// Defaults of Config fields left zero.
const (
	DefaultLongPollTimeout = 30 * time.Second
	DefaultMaxBodyBytes    = 16 << 20
	DefaultMaxReadBytes    = 4 << 20
	// DefaultMaxCatchUpBytes bounds a catch-up response written from
	// files as it is read (see Config.MaxCatchUpBytes).
	DefaultMaxCatchUpBytes = 64 << 20
	DefaultSSEMaxDuration  = 60 * time.Second
	DefaultSSEKeepAlive    = 15 * time.Second
)

// Reserved path prefixes: no stream lives under them.
const (
	// HeraldPrefix is the prefix of Herald's own API.
	HeraldPrefix = "/_herald/"
	// CallbackPrefix is the prefix of consumer callbacks.
	CallbackPrefix = "/callback/"
)

// Config configures a Server.
type Config struct {
	// Store keeps the streams. Required.
	Store store.Store
	// Logger receives request errors; slog.Default() when nil.
	Logger *slog.Logger
	// LongPollTimeout is how long a long-poll waits for data before it
	// answers 204.
	LongPollTimeout time.Duration
	// MaxBodyBytes caps a create or append body; larger bodies get 413.
	MaxBodyBytes int64
	// MaxReadBytes caps the data of one catch-up response or SSE event
	// (at least one stored chunk is returned whatever its size).
	MaxReadBytes int
	// MaxCatchUpBytes caps the data of one catch-up response of a store
	// that keeps stream bytes in files (store.StreamFileReader), which
	// is written to the socket as it is read, through a small buffer or
	// with sendfile(2), so that it never holds the response in memory:
	// a larger response lets a client catch up in fewer requests.
	MaxCatchUpBytes int
	// SSEMaxDuration is how long an SSE response stays open before Herald
	// ends it so the client reconnects (docs/protocol.md, Server-Sent Events).
	SSEMaxDuration time.Duration
	// SSEKeepAlive is how often an idle SSE response gets a comment line
	// so that proxies do not cut it (default 15s).
	SSEKeepAlive time.Duration
	// MaxBufferedBytes bounds the bytes of request bodies held in memory
	// at once, across all requests; a request beyond it gets 503
	// SERVER_BUSY (see body.go).
	MaxBufferedBytes int64
	// BodyReadTimeout is how long a request body may take, beyond the
	// time its size needs at MinBodyRate, before it is cut with 408.
	BodyReadTimeout time.Duration
	// MinBodyRate is the slowest rate, in bytes a second, a request body
	// may arrive at on average once BodyReadTimeout has passed.
	MinBodyRate int64
	// MaxConnections bounds the connections open at once on the listener
	// returned by LimitListener.
	MaxConnections int
	// MaxClientConnections bounds the connections of one client address
	// among them (see LimitListener); zero: a quarter of
	// MaxConnections.
	MaxClientConnections int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Auth checks every request's credential against its route's rule;
	// auth.Off() when nil (development: every request may do anything).
	Auth *auth.Authenticator
	// TenantStreamPrefix is the template of tenants' stream namespaces,
	// whose streams hold only their tenant's events whoever writes them;
	// Auth's when "" (which matters with access control off).
	TenantStreamPrefix string
	// AuditLogger receives one record per change made through Herald's
	// API (who, which route, the outcome); Logger when nil.
	AuditLogger *slog.Logger
	// CORSOrigins are the browser origins ("scheme://host[:port]", or
	// "*" for any), besides Herald's own, that may call Herald across
	// origins (see originAllowed). With access control off, loopback
	// origins may too, and no other origin reaches any route; with it
	// on, stream routes answer every origin (a browser client still
	// needs a credential) and the others only these.
	CORSOrigins []string
	// AllowedHosts, when set, are the only Host names served (any port);
	// others get 421. It closes DNS rebinding against a Herald on
	// loopback.
	AllowedHosts []string
	// AccessLog, when set, receives one line per request (method, route,
	// path, the query with credential-like values redacted, status,
	// bytes, duration, request id), and requests get an X-Request-Id.
	// Nil: no access log.
	AccessLog *slog.Logger
	// TracerProvider, when set, makes each request a server span named by
	// its route pattern, continuing the caller's traceparent. Nil:
	// tracing off, at no cost to requests.
	TracerProvider trace.TracerProvider
	// StreamRoot is where streams live (subscription.NormalizeRoot's
	// form; "" is "/"): a stream path outside it is not found, and the
	// reserved subscription API lives at StreamRoot/__ds/.
	StreamRoot subscription.Root
}

// Server is the HTTP handler of the Durable Streams protocol and Herald's
// health endpoints. It is safe for concurrent use.
type Server struct {
	store           store.Store
	log             *slog.Logger
	longPollTimeout time.Duration
	maxBodyBytes    int64
	maxReadBytes    int
	maxCatchUpBytes int
	sseMaxDuration  time.Duration
	sseKeepAlive    time.Duration
	// liveLongPolls and liveSSE count the live reads open now.
	liveLongPolls atomic.Int64
	liveSSE       atomic.Int64
	// appends counts the appends stored.
	appends atomic.Int64
	// shared and sharedSSE are the responses and SSE events readers of
	// the same data share (shared.go); cursorNow the Stream-Cursor of
	// this interval.
	shared    sharedResponses
	sharedSSE sharedEvents
	cursorNow atomic.Pointer[cursorNow]
	now       func() time.Time

	// Limits on what clients can make the server hold (body.go, conns.go).
	bodies          bodyBudget
	bodyReadTimeout time.Duration
	minBodyRate     int64
	bodiesCut       atomic.Int64
	maxConnections  int64
	connsOpen       atomic.Int64
	connsRefused    atomic.Int64
	// maxClientConnections and clientConnsRefused: the per-client limit.
	maxClientConnections int64
	clientConnsRefused   atomic.Int64

	// Access control (access.go).
	auth         *auth.Authenticator
	tenantPrefix string
	audit        *slog.Logger
	origins      originPolicy
	allowedHosts []string
	authFailures *prometheus.CounterVec

	// Observation (observe.go).
	accessLog      *slog.Logger
	tracer         trace.Tracer // nil: tracing off
	httpMetrics    *httpMetrics
	appendDuration prometheus.Histogram
	requestPrefix  string
	requestSeq     atomic.Uint64

	// router serves the route table (routes.go).
	router atomic.Pointer[router]
	// root is where streams live; dsPrefix is root's __ds/ prefix, where
	// the reserved subscription API lives (reserved.go).
	root     subscription.Root
	dsPrefix string

	ready        atomic.Bool
	shuttingDown atomic.Bool
	// storeDown is why the store's last heartbeat failed; nil when it
	// went through (SetStoreHealth).
	storeDown atomic.Pointer[string]
	// shutdown is closed by Shutdown: live reads select on it.
	shutdown     chan struct{}
	shutdownOnce sync.Once
}

var _ http.Handler = (*Server)(nil)

// New returns a Server for cfg. It is ready (see SetReady) from the start:
// the store it is given is open.
func New(cfg Config) *Server {
	s := &Server{
		store:           cfg.Store,
		log:             cfg.Logger,
		longPollTimeout: cfg.LongPollTimeout,
		maxBodyBytes:    cfg.MaxBodyBytes,
		maxReadBytes:    cfg.MaxReadBytes,
		maxCatchUpBytes: cfg.MaxCatchUpBytes,
		sseMaxDuration:  cfg.SSEMaxDuration,
		sseKeepAlive:    cfg.SSEKeepAlive,
		now:             cfg.Now,
		bodyReadTimeout: cfg.BodyReadTimeout,
		minBodyRate:     cfg.MinBodyRate,
		maxConnections:  int64(cfg.MaxConnections),
		auth:            cfg.Auth,
		audit:           cfg.AuditLogger,
		origins:         newOriginPolicy(cfg.CORSOrigins),
		allowedHosts:    cfg.AllowedHosts,
		root:            cfg.StreamRoot,
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_auth_failures_total",
			Help: "Requests refused by access control, by error code (UNAUTHENTICATED, INVALID_KEY, KEY_EXPIRED, FORBIDDEN, AUTH_UNAVAILABLE).",
		}, []string{"code"}),
		accessLog:   cfg.AccessLog,
		httpMetrics: newHTTPMetrics(),
		appendDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_stream_append_duration_seconds",
			Help:    "Time the store took to make an append durable (group commit and fsync included), from its submission to its acknowledgement.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		requestPrefix: newRequestPrefix(),
		shutdown:      make(chan struct{}),
	}
	if cfg.TracerProvider != nil {
		s.tracer = telemetry.Tracer(cfg.TracerProvider)
	}
	s.bodies.limit = cfg.MaxBufferedBytes
	if s.bodies.limit <= 0 {
		s.bodies.limit = DefaultMaxBufferedBytes
	}
	if s.bodyReadTimeout <= 0 {
		s.bodyReadTimeout = DefaultBodyReadTimeout
	}
	if s.minBodyRate <= 0 {
		s.minBodyRate = DefaultMinBodyRate
	}
	if s.maxConnections <= 0 {
		s.maxConnections = DefaultMaxConnections
	}
	s.maxClientConnections = int64(cfg.MaxClientConnections)
	if s.maxClientConnections <= 0 {
		s.maxClientConnections = int64(DefaultMaxClientConnections(int(s.maxConnections)))
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.longPollTimeout <= 0 {
		s.longPollTimeout = DefaultLongPollTimeout
	}
	if s.maxBodyBytes <= 0 {
		s.maxBodyBytes = DefaultMaxBodyBytes
	}
	if s.maxReadBytes <= 0 {
		s.maxReadBytes = DefaultMaxReadBytes
	}
	if s.maxCatchUpBytes <= 0 {
		s.maxCatchUpBytes = DefaultMaxCatchUpBytes
	}
	if s.sseMaxDuration <= 0 {
		s.sseMaxDuration = DefaultSSEMaxDuration
	}
	if s.sseKeepAlive <= 0 {
		s.sseKeepAlive = DefaultSSEKeepAlive
	}
	if s.root == "" {
		s.root = "/"
	}
	s.dsPrefix = s.root.Reserved()
	if s.now == nil {
		s.now = time.Now
	}
	if s.auth == nil {
		s.auth = auth.Off()
	}
	s.tenantPrefix = cfg.TenantStreamPrefix
	if s.tenantPrefix == "" {
		s.tenantPrefix = s.auth.TenantStreamPrefix()
	}
	if s.audit == nil {
		s.audit = s.log
	}
	s.ready.Store(true)
	s.Mount(APIs{}) // Herald's own routes and the streams' until Mount
	return s
}

// SetReady sets whether /_herald/readyz reports ready (the store is open
// and the process accepts work).
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Shutdown makes in-flight long-polls answer 204 and SSE responses end at
// once, refuses new live reads with 503, and makes readyz report 503. It
// does not wait: the http.Server's own Shutdown waits for the handlers,
// which now return promptly. It is safe to call more than once.
func (s *Server) Shutdown() {
	s.shutdownOnce.Do(func() {
		s.shuttingDown.Store(true)
		close(s.shutdown)
	})
}

// Response header values shared by every response. net/http never
// modifies header value slices, so they can be shared.
var (
	valNosniff     = []string{"nosniff"}
	valCORP        = []string{"cross-origin"}
	valAllowOrigin = []string{"*"}
	valExpose      = []string{"Stream-Next-Offset, Stream-Cursor, Stream-Up-To-Date, Stream-Closed, Stream-TTL, Stream-Expires-At, Stream-SSE-Data-Encoding, Producer-Epoch, Producer-Seq, Producer-Expected-Seq, Producer-Received-Seq, ETag, Location, Content-Type"}
	valAllowMethod = []string{"GET, HEAD, POST, PUT, DELETE, OPTIONS"}
	valPreflight   = []string{"GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"}
	valAllowHeader = []string{"Content-Type, If-None-Match, Stream-TTL, Stream-Expires-At, Stream-Seq, Stream-Closed, Stream-Forked-From, Stream-Fork-Offset, Stream-Fork-Sub-Offset, Producer-Id, Producer-Epoch, Producer-Seq, Authorization"}
	valMaxAge      = []string{"86400"}
	valVaryOrigin  = []string{"Origin"}
)

// serve serves a request (ServeHTTP observes it).
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Browser security headers on every response (docs/protocol.md, Streams
	// and paths).
	h["X-Content-Type-Options"] = valNosniff
	h["Cross-Origin-Resource-Policy"] = valCORP
	if !s.hostAllowed(r.Host) {
		s.fail(w, r, errHostNotAllowed)
		return
	}

	path := r.URL.Path
	reserved := isReserved(path) || s.isDS(path)
	sub := !reserved && isSubscriptionRequest(r)
	if origin, cors := r.Header["Origin"]; cors {
		// Browsers send Origin on cross-origin requests (and on a
		// same-origin one that is not a GET); other clients (servers,
		// SDKs, long-polls by the thousand) skip all of this.
		stream := !reserved && !sub
		switch {
		case stream && s.auth.Enabled():
			// With access control on, streams answer any origin: a page
			// still needs a credential, which a browser never adds on
			// its own (Herald sets no cookie).
			h["Access-Control-Allow-Origin"] = valAllowOrigin
			h["Access-Control-Expose-Headers"] = valExpose
		case len(origin) > 0 && s.originAllowed(origin[0], r):
			h["Access-Control-Allow-Origin"] = origin
			h["Vary"] = valVaryOrigin
			if stream {
				h["Access-Control-Expose-Headers"] = valExpose
			}
		case r.Method == http.MethodOptions && stream:
			// A foreign page's preflight of a stream is answered without a grant
			// (no Access-Control-Allow-Origin), so the browser never
			// sends the request it asked about; it reaches no handler.
			// Clients that probe preflights (the conformance suite)
			// see the usual answer.
			s.preflight(w, r)
			return
		default:
			// With access control off, a request is its own credential:
			// a foreign page's request, even one a browser sends without
			// asking (a text/plain POST, a form), must not reach a
			// handler.
			s.refuse(w, r, errOriginNotAllowed)
			return
		}
	}

	if reserved || sub {
		if r.Method == http.MethodOptions {
			s.preflight(w, r)
			return
		}
		// Herald's API reads its bodies itself, under the body rules.
		if reserved {
			s.serveGuarded(w, r, s.serveReserved)
		} else {
			s.serveGuarded(w, r, s.serveSubscriptionRequest)
		}
		return
	}

	// A stream request: its body, if any, is read by readBody under the
	// deadline armed here (or, unread, discarded by net/http under it).
	var body bodyDeadline
	if r.Body != http.NoBody {
		body = s.armBodyDeadline(w)
	}
	if r.Method == http.MethodOptions {
		s.preflight(w, r)
		return
	}
	if err := validateStreamPath(path, r.URL.RawPath); err != nil {
		s.fail(w, r, err)
		return
	}
	if !strings.HasPrefix(path, s.root.Prefix()) {
		s.fail(w, r, errOutsideRoot(s.root))
		return
	}

	rt := s.route(r.Method, streamPattern)
	if rt == nil {
		h["Allow"] = valAllowMethod
		s.fail(w, r, errMethodNotAllowed)
		return
	}
	// tenant is the writer's tenant, whose JSON messages may name no
	// other (see checkTenant).
	tenant := ""
	var p *auth.Principal // nil: access control off
	if s.auth.Enabled() {
		var ok bool
		if p, ok = s.authorize(w, r, rt.Rule); !ok {
			return
		}
		tenant = p.Tenant
	}
	if tenant == "" && (r.Method == http.MethodPost || r.Method == http.MethodPut) {
		// A stream in a tenant's namespace holds that tenant's events
		// only, whoever writes them: a platform credential's messages
		// there may name no other tenant either.
		tenant, _ = auth.StreamOwner(s.tenantPrefix, path)
	}
	switch r.Method {
	case http.MethodGet:
		s.read(w, r, path, p)
	case http.MethodHead:
		s.head(w, r, path)
	case http.MethodPost:
		s.append(w, r, path, &body, tenant)
	case http.MethodPut:
		s.audited(w, r, p, rt.Method+" "+rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.create(w, r, path, &body, tenant)
		}))
	case http.MethodDelete:
		s.audited(w, r, p, rt.Method+" "+rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.delete(w, r, path)
		}))
	}
}

// serveGuarded serves r with a handler that reads its body itself, under
// the body rules (body.go).
func (s *Server) serveGuarded(w http.ResponseWriter, r *http.Request, h http.HandlerFunc) {
	if r.Body != http.NoBody {
		g := s.guardBody(w, r)
		defer g.done()
	}
	h(w, r)
}

// serveReserved serves a request under /_herald/ or /callback/: a CORS
// preflight, or the route mounted there. The path must be its route's
// one spelling (see canonicalReserved) and be clean, so that a proxy rule
// on a prefix or a route sees every request for it (/_herald/v1/%6beys
// is not /_herald/v1/keys), and the mux never answers with a redirect
// (which has an HTML body). A path that has routes for other methods only
// is 405 METHOD_NOT_ALLOWED with Allow; a PUT elsewhere is a stream create
// under a reserved prefix, RESERVED_PATH; anything else is 404 NOT_FOUND.
func (s *Server) serveReserved(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		s.preflight(w, r)
		return
	}
	if !s.canonicalReserved(r.URL) || !isClean(r.URL.Path) {
		s.fail(w, r, errNonCanonicalPath)
		return
	}
	if !strings.HasPrefix(r.URL.Path, CallbackPrefix) && !jsonOrNoBody(r) {
		s.fail(w, r, errNotJSON)
		return
	}
	mux := s.router.Load().mux
	if _, pattern := mux.Handler(r); pattern != "" {
		mux.ServeHTTP(w, r) // routes again, setting Request.PathValue
		return
	}
	if allow := s.allowedMethods(r); allow != "" {
		w.Header().Set("Allow", allow)
		s.fail(w, r, &httpjson.Error{Status: http.StatusMethodNotAllowed, Code: errMethodNotAllowed.Code, Message: "this route accepts " + allow})
		return
	}
	if s.isDS(r.URL.Path) {
		// The reserved subscription API's prefix: no stream lives here,
		// whether or not the API is served.
		if !s.router.Load().reserved {
			s.fail(w, r, errSubscriptionsUnavailable)
			return
		}
		s.fail(w, r, errNoRoute)
		return
	}
	if r.Method == http.MethodPut {
		s.fail(w, r, errReservedPath)
		return
	}
	s.fail(w, r, errNoRoute)
}

// routeMethods are the methods allowedMethods tries, in the order Allow
// lists them.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowedMethods is the Allow header value for a request under a
// reserved prefix that no route serves: the methods of the routes at its
// path, with OPTIONS (every reserved path answers preflights), or "" when
// the path has no route at all. Only failing requests pay for it.
func (s *Server) allowedMethods(r *http.Request) string {
	var allow []string
	mux := s.router.Load().mux
	probe := r.Clone(r.Context())
	for _, m := range routeMethods {
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		return ""
	}
	return strings.Join(append(allow, http.MethodOptions), ", ")
}

// serveSubscriptionRequest serves a request for the subscription API:
// requests on a stream path that carry a subscription or subscriptions
// query parameter, and requests whose path has a __ds segment
// (docs/subscriptions.md). It is authorized by the rule of the route it
// names (method and query); a request no route takes is checked against
// the rule of the route of its method at ?subscription={id} or, for a
// method none has, the create's for a change and the read's for a read,
// before it is refused.
func (s *Server) serveSubscriptionRequest(w http.ResponseWriter, r *http.Request) {
	if !s.router.Load().subscriptions {
		s.fail(w, r, errSubscriptionsUnavailable)
		return
	}
	if !jsonOrNoBody(r) {
		s.fail(w, r, errNotJSON)
		return
	}
	pattern, _, queryErr := subscriptionRoute(r)
	rt := s.route(r.Method, pattern)
	var rule *Route
	switch {
	case rt != nil && queryErr == nil:
		rule = rt
	case s.route(r.Method, subscriptionPattern) != nil:
		rule = s.route(r.Method, subscriptionPattern)
	case isChange(r.Method):
		rule = s.route(http.MethodPut, subscriptionPattern)
	default:
		rule = s.route(http.MethodGet, subscriptionPattern)
	}
	p, ok := s.authorize(w, r, rule.Rule)
	if !ok {
		return
	}
	r = r.WithContext(auth.NewContext(r.Context(), p))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case queryErr != nil:
			s.fail(w, r, queryErr)
		case rt == nil:
			w.Header().Set("Allow", "GET, PUT, DELETE")
			s.fail(w, r, errSubscriptionMethod)
		default:
			rt.Handler.ServeHTTP(w, r)
		}
	})
	if isChange(r.Method) {
		s.audited(w, r, p, r.Method+" "+subscriptionPattern, h, subscriptionAudit(r))
		return
	}
	h(w, r)
}

// jsonOrNoBody reports whether r has no body or a JSON one. Herald's API
// takes JSON only: a form or text/plain body, which a browser sends
// cross-site without asking, is refused. Callbacks are exempt: their token
// is never sent by a browser on its own, and consumers written to the
// callback API may omit the header.
func jsonOrNoBody(r *http.Request) bool {
	return !hasBody(r) || isJSON(r.Header.Get("Content-Type"))
}

// isSubscriptionRequest reports whether r is for the subscription API.
func isSubscriptionRequest(r *http.Request) bool {
	if q := r.URL.RawQuery; q != "" && strings.Contains(q, "subscription") {
		v := r.URL.Query()
		if v.Has("subscription") || v.Has("subscriptions") {
			return true
		}
	}
	return hasSegment(r.URL.Path, "__ds")
}
