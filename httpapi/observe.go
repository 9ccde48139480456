package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/internal/telemetry"
)

// RequestIDHeader carries a request's id: taken from the request when it
// has a usable one, made otherwise, and echoed in the response.
const RequestIDHeader = "X-Request-Id"

// maxRequestID bounds an accepted X-Request-Id; a longer one, or one
// with characters outside printable ASCII, is replaced.
const maxRequestID = 128

// routeReserved is the route label of a request under a reserved prefix
// that reaches no route (the stream and subscription routes are labelled
// by their patterns).
const routeReserved = "/_herald/* (no route)"

// httpMetrics count requests by route pattern, method and status, and time
// them by route pattern and method. Series are looked up in a map keyed
// by strings the request already holds, so a request allocates nothing
// for them once its series exist.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	mu     sync.RWMutex
	series map[seriesKey]*seriesPair // guarded by mu
}

type seriesKey struct {
	route, method string
	code          int
}

type seriesPair struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newHTTPMetrics() *httpMetrics {
	return &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_http_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its response, by route pattern and method (long-polls and SSE responses last as long as they stay open).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method"}),
		series: map[seriesKey]*seriesPair{},
	}
}

func (m *httpMetrics) observe(route, method string, code int, d time.Duration) {
	k := seriesKey{route, method, code}
	m.mu.RLock()
	p := m.series[k]
	m.mu.RUnlock()
	if p == nil {
		p = &seriesPair{
			requests: m.requests.WithLabelValues(route, method, strconv.Itoa(code)),
			duration: m.duration.WithLabelValues(route, method),
		}
		m.mu.Lock()
		m.series[k] = p
		m.mu.Unlock()
	}
	p.requests.Inc()
	p.duration.Observe(d.Seconds())
}

// methodLabel is the method as a label: the methods Herald serves, and
// OTHER for any other, so a client cannot make series without end.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// writers recycles the response writers that record status and size.
var writers = sync.Pool{New: func() any { return new(statusWriter) }}

// ServeHTTP implements http.Handler. Around the request it keeps the
// books an operator reads: the request's server span (when tracing is on),
// its metrics, its id and its access log line (when on).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := writers.Get().(*statusWriter)
	*sw = statusWriter{ResponseWriter: w}
	defer func() {
		*sw = statusWriter{}
		writers.Put(sw)
	}()
	var reqID string
	if s.accessLog != nil {
		reqID = s.requestID(r)
		w.Header()[RequestIDHeader] = []string{reqID}
	}
	var span trace.Span
	if s.tracer != nil {
		ctx := telemetry.Extract(r.Context(), r.Header)
		ctx, span = s.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		r = r.WithContext(ctx)
	}

	s.serve(sw, r)

	code := sw.status()
	route := routeOf(r)
	method := methodLabel(r.Method)
	elapsed := time.Since(start)
	s.httpMetrics.observe(route, method, code, elapsed)
	if span != nil {
		span.SetName(method + " " + route)
		span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", code))
		if code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(code))
		}
		span.End()
	}
	if s.accessLog != nil {
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("route", route), slog.String("path", r.URL.Path),
			slog.Int("status", code), slog.Int64("bytes", sw.bytes), slog.Duration("duration", elapsed),
			slog.String("request_id", reqID),
		}
		if r.URL.RawQuery != "" {
			attrs = append(attrs, slog.String("query", redactQuery(r.URL.RawQuery)))
		}
		if span != nil {
			attrs = append(attrs, slog.String("trace_id", span.SpanContext().TraceID().String()))
		}
		s.accessLog.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
	}
}

// routeOf is the route pattern r was served by, never its path: a mounted
// route's pattern (without its method), or the stream or subscription
// route ServeHTTP dispatches itself.
func routeOf(r *http.Request) string {
	if p := r.Pattern; p != "" {
		if i := strings.IndexByte(p, ' '); i >= 0 {
			p = strings.TrimLeft(p[i+1:], " ")
		}
		return p
	}
	switch {
	case isReserved(r.URL.Path):
		return routeReserved
	case isSubscriptionRequest(r):
		if r.URL.Query().Has("subscriptions") {
			return subscriptionsPattern
		}
		return subscriptionPattern
	}
	return streamPattern
}

// requestID returns the request's usable X-Request-Id, or a new id: a
// random prefix made at start and a counter, unique in this process and
// across restarts.
func (s *Server) requestID(r *http.Request) string {
	if v := r.Header[RequestIDHeader]; len(v) == 1 && usableRequestID(v[0]) {
		return v[0]
	}
	n := s.requestSeq.Add(1)
	b := make([]byte, 0, len(s.requestPrefix)+1+16)
	b = append(b, s.requestPrefix...)
	b = append(b, '-')
	return string(strconv.AppendUint(b, n, 36))
}

func usableRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// newRequestPrefix returns the random part of the request ids a server
// makes.
func newRequestPrefix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("httpapi: crypto/rand failed: " + err.Error()) // crypto/rand.Read does not fail (Go 1.24+)
	}
	return hex.EncodeToString(b[:])
}

// secretParams are the substrings of query parameter names whose values
// the access log never shows.
var secretParams = []string{"token", "secret", "key", "password", "passwd", "sig", "auth", "credential", "session", "code"}

// redactQuery returns a query string for the log: every parameter is
// kept in its order, with the value of each whose name suggests a
// credential replaced by ***. A parameter whose name cannot be decoded
// is shown as ***.
func redactQuery(raw string) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i, part := range strings.Split(raw, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		rawName, _, hasValue := strings.Cut(part, "=")
		name, err := url.QueryUnescape(rawName)
		switch {
		case err != nil:
			b.WriteString("***")
		case hasValue && secretParam(name):
			b.WriteString(rawName)
			b.WriteString("=***")
		default:
			b.WriteString(part)
		}
	}
	return b.String()
}

func secretParam(name string) bool {
	lower := strings.ToLower(name)
	for _, p := range secretParams {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}
