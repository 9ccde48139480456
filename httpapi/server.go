// Package httpapi serves the Durable Streams protocol (PROTOCOL.md sections
// 4, 5, 8-12) over HTTP on top of a store.Store, plus Herald's own health
// endpoints. Streams live at any path except the reserved prefixes
// /_herald/ (Herald's API, where other parts mount routes with Handle) and
// /callback/; requests that carry ?subscription or ?subscriptions, or a
// __ds path segment, go to the subscription handler.
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

	"github.com/heraldstreams/herald/store"
)

// Defaults of Config fields left zero.
const (
	DefaultLongPollTimeout = 30 * time.Second
	DefaultMaxBodyBytes    = 16 << 20
	DefaultMaxReadBytes    = 4 << 20
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
	// SSEMaxDuration is how long an SSE response stays open before Herald
	// ends it so the client reconnects (PROTOCOL 10.2).
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
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Server is the HTTP handler of the Durable Streams protocol and Herald's
// health endpoints. It is safe for concurrent use.
type Server struct {
	store           store.Store
	log             *slog.Logger
	longPollTimeout time.Duration
	maxBodyBytes    int64
	maxReadBytes    int
	sseMaxDuration  time.Duration
	sseKeepAlive    time.Duration
	// liveLongPolls and liveSSE count the live reads open now.
	liveLongPolls atomic.Int64
	liveSSE       atomic.Int64
	now           func() time.Time

	// Limits on what clients can make the server hold (body.go, conns.go).
	bodies          bodyBudget
	bodyReadTimeout time.Duration
	minBodyRate     int64
	bodiesCut       atomic.Int64
	maxConnections  int64
	connsOpen       atomic.Int64
	connsRefused    atomic.Int64

	// mux routes the reserved prefixes (Herald's API and callbacks).
	mux           *http.ServeMux
	subscriptions atomic.Pointer[http.Handler]

	ready        atomic.Bool
	shuttingDown atomic.Bool
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
		sseMaxDuration:  cfg.SSEMaxDuration,
		sseKeepAlive:    cfg.SSEKeepAlive,
		now:             cfg.Now,
		bodyReadTimeout: cfg.BodyReadTimeout,
		minBodyRate:     cfg.MinBodyRate,
		maxConnections:  int64(cfg.MaxConnections),
		mux:             http.NewServeMux(),
		shutdown:        make(chan struct{}),
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
	if s.sseMaxDuration <= 0 {
		s.sseMaxDuration = DefaultSSEMaxDuration
	}
	if s.sseKeepAlive <= 0 {
		s.sseKeepAlive = DefaultSSEKeepAlive
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.ready.Store(true)
	s.mux.HandleFunc("GET "+HeraldPrefix+"healthz", s.healthz)
	s.mux.HandleFunc("GET "+HeraldPrefix+"readyz", s.readyz)
	return s
}

// Handle mounts h at pattern, a net/http ServeMux pattern (an optional
// method, then a path) whose path lies under /_herald/ or /callback/. It
// panics on any other pattern, as ServeMux does on a bad one: stream paths
// belong to the protocol. Mount routes before serving.
func (s *Server) Handle(pattern string, h http.Handler) {
	path := pattern
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		path = strings.TrimLeft(pattern[i+1:], " ")
	}
	if !strings.HasPrefix(path, HeraldPrefix) && !strings.HasPrefix(path, CallbackPrefix) {
		panic("httpapi: Handle pattern " + pattern + " is not under " + HeraldPrefix + " or " + CallbackPrefix)
	}
	s.mux.Handle(pattern, h)
}

// HandleSubscriptions sets the handler of subscription requests: requests
// on a stream path that carry a subscription or subscriptions query
// parameter, and requests whose path has a __ds segment (PROTOCOL 6).
// Until one is set, such requests get a 404 with code
// SUBSCRIPTIONS_UNAVAILABLE.
func (s *Server) HandleSubscriptions(h http.Handler) {
	s.subscriptions.Store(&h)
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
	valAllowHeader = []string{"Content-Type, If-None-Match, Stream-TTL, Stream-Expires-At, Stream-Seq, Stream-Closed, Stream-Forked-From, Stream-Fork-Offset, Stream-Fork-Sub-Offset, Producer-Id, Producer-Epoch, Producer-Seq, Authorization"}
	valMaxAge      = []string{"86400"}
)

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Browser security headers on every response (PROTOCOL 12.7), and
	// CORS so that browser clients on other origins can use streams.
	h["X-Content-Type-Options"] = valNosniff
	h["Cross-Origin-Resource-Policy"] = valCORP
	if _, cors := r.Header["Origin"]; cors {
		// Browsers send Origin on cross-origin requests; other clients
		// (servers, SDKs, long-polls by the thousand) skip the bytes.
		h["Access-Control-Allow-Origin"] = valAllowOrigin
		h["Access-Control-Expose-Headers"] = valExpose
	}

	path := r.URL.Path
	if isReserved(path) {
		s.serveGuarded(w, r, s.serveReserved)
		return
	}
	if r.Method != http.MethodOptions && isSubscriptionRequest(r) {
		s.serveGuarded(w, r, s.serveSubscriptionRequest)
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

	switch r.Method {
	case http.MethodGet:
		s.read(w, r, path)
	case http.MethodHead:
		s.head(w, r, path)
	case http.MethodPost:
		s.append(w, r, path, &body)
	case http.MethodPut:
		s.create(w, r, path, &body)
	case http.MethodDelete:
		s.delete(w, r, path)
	default:
		h["Allow"] = valAllowMethod
		s.fail(w, r, errMethodNotAllowed)
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
// preflight, or the route mounted there. The prefix must be spelled
// literally and the path be clean, so that a proxy rule on the prefix sees
// every request for it, and the mux never answers with a redirect (which
// has an HTML body). A path without a route is RESERVED_PATH: a stream
// operation there, or a wrong method on a route (a stream create at
// /callback/x must not read as "use another method").
func (s *Server) serveReserved(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		s.preflight(w, r)
		return
	}
	if !literalReservedPrefix(r.URL.RawPath) || !isClean(r.URL.Path) {
		s.fail(w, r, errNonCanonicalPath)
		return
	}
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r) // routes again, setting Request.PathValue
		return
	}
	s.fail(w, r, errReservedPath)
}

// serveSubscriptionRequest serves a request for the subscription API.
func (s *Server) serveSubscriptionRequest(w http.ResponseWriter, r *http.Request) {
	if hp := s.subscriptions.Load(); hp != nil {
		(*hp).ServeHTTP(w, r)
		return
	}
	s.fail(w, r, errSubscriptionsUnavailable)
}

// preflight answers a CORS preflight request.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Access-Control-Allow-Methods"] = valAllowMethod
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		// Allow what the browser asks for: Herald has no header a
		// cross-origin client must not send.
		h.Set("Access-Control-Allow-Headers", req)
	} else {
		h["Access-Control-Allow-Headers"] = valAllowHeader
	}
	h["Access-Control-Max-Age"] = valMaxAge
	w.WriteHeader(http.StatusNoContent)
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

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() || s.shuttingDown.Load() {
		writeJSON(w, http.StatusServiceUnavailable, statusBody{Status: "unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
}

// statusBody is the body of the health endpoints.
type statusBody struct {
	Status string `json:"status"`
}
