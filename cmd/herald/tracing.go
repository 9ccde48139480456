package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// defaultServiceName is the service.name of Herald's spans unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) names
// another.
const defaultServiceName = "herald"

// tracing is the tracer provider Herald runs with, and how to flush and
// stop it. A nil provider is tracing off.
type tracing struct {
	provider trace.TracerProvider
	shutdown func(context.Context) error
}

// tracingEnabled reads the standard OpenTelemetry environment: tracing is
// on when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is otlp, and
// off when OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none.
// Only OTLP over HTTP with protobuf is exported.
func tracingEnabled(env func(string) (string, bool)) (bool, error) {
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	if v := get("OTEL_SDK_DISABLED"); v != "" {
		disabled, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%w: OTEL_SDK_DISABLED=%q must be true or false", errUsage, v)
		}
		if disabled {
			return false, nil
		}
	}
	switch exp := strings.ToLower(get("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "", "otlp":
		for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
			if p := get(k); p != "" {
				if p != "http/protobuf" {
					return false, fmt.Errorf("%w: %s=%q: Herald exports traces with OTLP over http/protobuf only", errUsage, k, p)
				}
				break // the traces-specific one wins
			}
		}
		return exp == "otlp" || get("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q: Herald exports traces with otlp (or none)", errUsage, exp)
	}
}

// startTracing returns the tracer provider configured by the environment,
// or tracing off. The exporter reads the rest of the OTEL_EXPORTER_OTLP_*
// variables (endpoint, headers, timeout, compression, certificates) and
// the provider OTEL_TRACES_SAMPLER and OTEL_BSP_*; spans are exported in
// batches by the provider's one exporting goroutine, which shutdown
// flushes and stops.
func startTracing(ctx context.Context, env func(string) (string, bool), log *slog.Logger) (tracing, error) {
	on, err := tracingEnabled(env)
	if err != nil || !on {
		return tracing{}, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return tracing{}, fmt.Errorf("tracing: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the
	// defaults (the later resource of a merge wins).
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", defaultServiceName), attribute.String("service.version", buildVersion())),
		resource.Environment())
	if err != nil {
		return tracing{}, fmt.Errorf("tracing: resource: %w", err)
	}
	// The SDK reports export failures through the global error handler:
	// into Herald's log, in its format.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tracing{provider: tp, shutdown: tp.Shutdown}, nil
}

// stop flushes the spans not exported yet and stops the exporter.
func (t tracing) stop(ctx context.Context) error {
	if t.shutdown == nil {
		return nil
	}
	if err := t.shutdown(ctx); err != nil {
		return fmt.Errorf("tracing shutdown: %w", err)
	}
	return nil
}
