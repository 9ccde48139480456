package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/store"
)

func TestRedactQuery(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"offset=-1&live=sse":                       "offset=-1&live=sse",
		"token=abc&offset=now":                     "token=***&offset=now",
		"access_token=a&Api-Key=b&X-Signature=c&s": "access_token=***&Api-Key=***&X-Signature=***&s",
		"client_secret=x%20y&subscription=s1":      "client_secret=***&subscription=s1",
		"%zz=1&offset=-1":                          "***&offset=-1",
		"passwd=p&session=q&code=r&auth=s":         "passwd=***&session=***&code=***&auth=***",
	} {
		if got := redactQuery(raw); got != want {
			t.Errorf("redactQuery(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestRouteOf: requests are labelled by route pattern, never by path.
func TestRouteOf(t *testing.T) {
	t.Parallel()
	s := New(Config{Store: &fakeStore{read: func(*store.StreamReadParams) (*store.StreamReadResult, error) { return nil, store.ErrNotFound }}})
	s.Mount(APIs{Keys: []Route{{Method: http.MethodGet, Pattern: HeraldPrefix + "v1/things/{id}", Rule: auth.Rule{Public: true}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}}})
	for target, want := range map[string]string{
		"/a/b/c?offset=-1":             streamPattern,
		"/a/*?subscription=x":          subscriptionPattern,
		"/**?subscriptions":            subscriptionsPattern,
		"/_herald/v1/things/th_123":    "/_herald/v1/things/{id}",
		"/_herald/nothing-here":        routeReserved,
		"/_herald/healthz?token=x":     "/_herald/healthz",
		"/callback/c1?unexpected=path": routeReserved,
	} {
		r := httptest.NewRequest("GET", target, nil)
		s.serve(httptest.NewRecorder(), r)
		if got := routeOf(r); got != want {
			t.Errorf("routeOf(%s) = %q, want %q", target, got, want)
		}
	}
}

// TestServerSpan: with a tracer provider, a request is a server span
// named by method and route that continues the caller's traceparent.
func TestServerSpan(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	res := &store.StreamAppendResult{Stream: stream(1, "/x/y", "text/plain", 1)}
	s := New(Config{Store: &fakeStore{append: func(*store.StreamAppendParams) (*store.StreamAppendResult, error) { return res, nil }},
		TracerProvider: tp})
	r := httptest.NewRequest("POST", "/x/y?token=t0ps3cret", strings.NewReader("z"))
	r.Header.Set("Content-Type", "text/plain")
	r.Header.Set("Authorization", "Bearer hk_secret")
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("spans = %v", spans)
	}
	sp := spans[0]
	if sp.Name != "POST /{stream}" || sp.Parent.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sp.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("span %q parent %v", sp.Name, sp.Parent)
	}
	for _, a := range sp.Attributes {
		if v := a.Value.Emit(); strings.Contains(v, "t0ps3cret") || strings.Contains(v, "hk_secret") {
			t.Errorf("attribute %s = %q holds a secret", a.Key, v)
		}
	}
}

// TestAppendAllocsWithoutTracing: with tracing and the access log off,
// the observation around a request (metrics, route label, status
// recording) allocates nothing: an append allocates what the handler
// alone did before it (BenchmarkAppend: 8).
func TestAppendAllocsWithoutTracing(t *testing.T) {
	s, serve := newAppendRig(Config{}, "")
	serve(s) // the series exist from now on
	observed := testing.AllocsPerRun(200, func() { serve(s) })
	bare := testing.AllocsPerRun(200, func() { serve(http.HandlerFunc(s.serve)) })
	if observed > bare {
		t.Fatalf("an observed append allocates %v times, the handler alone %v", observed, bare)
	}
}

// BenchmarkAppendObserved is BenchmarkAppend with tracing (every span
// sampled, exported nowhere) and the access log on, for comparison.
func BenchmarkAppendObserved(b *testing.B) {
	s, serve := newAppendRig(Config{TracerProvider: sdktrace.NewTracerProvider(), AccessLog: slog.New(slog.NewJSONHandler(io.Discard, nil))}, "")
	b.ReportAllocs()
	for b.Loop() {
		serve(s)
	}
}
