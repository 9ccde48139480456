package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
)

func TestTracingEnabled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want bool
		err  bool
	}{
		{env: map[string]string{}, want: false},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: true},
		{env: map[string]string{"OTEL_SDK_DISABLED": "maybe"}, err: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, err: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: true},
	} {
		got, err := tracingEnabled(envOf(tc.env))
		if got != tc.want || (err != nil) != tc.err || (err != nil && !errors.Is(err, errUsage)) {
			t.Errorf("%v: %v, %v; want %v, error %v", tc.env, got, err, tc.want, tc.err)
		}
	}
}

// TestTracingExportsOTLP: with an OTLP endpoint in the environment, spans
// are exported over HTTP as protobuf when tracing stops, under the
// service name herald unless OTEL_SERVICE_NAME names another.
func TestTracingExportsOTLP(t *testing.T) {
	for _, name := range []string{"", "edge-herald"} {
		var mu sync.Mutex
		var got []byte
		var contentType, path string
		collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			got, contentType, path = append(got, b...), r.Header.Get("Content-Type"), r.URL.Path
			mu.Unlock()
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusOK)
		}))
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
		t.Setenv("OTEL_SERVICE_NAME", name)
		tr, err := startTracing(context.Background(), os.LookupEnv, slog.New(slog.DiscardHandler))
		if err != nil || tr.provider == nil {
			t.Fatalf("start: %v, %v", tr, err)
		}
		_, span := tr.provider.Tracer("test").Start(context.Background(), "exported-span")
		span.End()
		if err := tr.stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		collector.Close()
		want := name
		if want == "" {
			want = defaultServiceName
		}
		mu.Lock()
		if path != "/v1/traces" || contentType != "application/x-protobuf" || !bytes.Contains(got, []byte("exported-span")) || !bytes.Contains(got, []byte(want)) {
			t.Errorf("collector got %s %s %q; want the span under service %q", path, contentType, got, want)
		}
		mu.Unlock()
	}
}
