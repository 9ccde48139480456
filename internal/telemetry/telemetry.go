// Package telemetry holds what Herald's parts share for tracing: the
// tracer they take from a configured provider (a no-op one when tracing is
// off) and the W3C Trace Context propagation of outbound and inbound
// requests. Herald never uses OpenTelemetry's global provider: each part
// is given its provider, so tests run side by side with their own.
package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span Herald makes.
const ScopeName = "github.com/heraldstreams/herald"

// propagator reads and writes the traceparent and tracestate headers.
var propagator = propagation.TraceContext{}

// Tracer returns the tracer of tp, or a no-op tracer when tp is nil
// (tracing off).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return noop.NewTracerProvider().Tracer(ScopeName)
	}
	return tp.Tracer(ScopeName)
}

// Inject writes the span context of ctx into h as traceparent (and
// tracestate), so the receiver of a request continues the trace. Nothing
// is written when ctx carries no valid span context.
func Inject(ctx context.Context, h http.Header) {
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx with the remote span context that h's traceparent
// names, if any.
func Extract(ctx context.Context, h http.Header) context.Context {
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// Follow returns a context carrying parent as its span context (when
// valid): spans started from it are children of parent. Work done later on
// behalf of a request (a wake after an append, a match after a publish)
// joins the request's trace this way.
func Follow(ctx context.Context, parent trace.SpanContext) context.Context {
	if !parent.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, parent)
}

// Traceparent is the W3C traceparent of sc ("" when sc is not valid), to
// keep with work that is done later, perhaps by another process.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagator.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	return carrier.Get("traceparent")
}

// ParseTraceparent is the span context a traceparent kept by Traceparent
// names (not valid for "" or a malformed value).
func ParseTraceparent(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}
