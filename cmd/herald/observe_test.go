package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/client"
)

// tracedApp is a served app whose spans are kept in memory.
type tracedApp struct {
	app   *app
	base  string
	spans *tracetest.InMemoryExporter
}

func startTracedApp(t *testing.T, log *slog.Logger, extraArgs ...string) *tracedApp {
	t.Helper()
	args := append([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8"}, extraArgs...)
	cfg, err := parseServeFlags(args, io.Discard, io.Discard, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	a := startApp(t, cfg, log, tp)
	return &tracedApp{app: a, base: "http://" + a.ln.Addr().String(), spans: exp}
}

// do sends one request and returns the response with its body read.
func do(t *testing.T, method, url string, hdr http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// waitSpan waits for the first ended span that satisfies ok.
func (ta *tracedApp) waitSpan(t *testing.T, what string, ok func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range ta.spans.GetSpans() {
			if ok(s) {
				return s
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range ta.spans.GetSpans() {
		t.Logf("span %q kind %v trace %s span %s parent %s", s.Name, s.SpanKind, s.SpanContext.TraceID(), s.SpanContext.SpanID(), s.Parent.SpanID())
	}
	t.Fatalf("no span: %s", what)
	return tracetest.SpanStub{}
}

// childOf reports whether s is a child of parent, in its trace.
func childOf(s, parent tracetest.SpanStub) bool {
	return s.Parent.TraceID() == parent.SpanContext.TraceID() && s.Parent.SpanID() == parent.SpanContext.SpanID()
}

func named(name string) func(tracetest.SpanStub) bool {
	return func(s tracetest.SpanStub) bool { return s.Name == name }
}

// traceReceiver records the traceparent of every POST it gets and answers with
// handle (204 when nil).
type traceReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	traces []string
	handle atomic.Pointer[http.Handler]
}

func newReceiver(t *testing.T) *traceReceiver {
	rc := &traceReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.traces = append(rc.traces, r.Header.Get("Traceparent"))
		rc.mu.Unlock()
		if h := rc.handle.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *traceReceiver) traceparents() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.traces...)
}

// traceparent is the header a span's context propagates as.
func traceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// waitWakePost waits for the subscription.wake span that is a child of
// appendSpan and for its POST, a child of the wake, and checks that rc
// got the POST span's traceparent; it returns the POST's span.
func (ta *tracedApp) waitWakePost(t *testing.T, appendSpan tracetest.SpanStub, rc *traceReceiver) tracetest.SpanStub {
	t.Helper()
	wake := ta.waitSpan(t, "subscription.wake, child of the append", func(s tracetest.SpanStub) bool {
		return s.Name == "subscription.wake" && childOf(s, appendSpan)
	})
	post := ta.waitSpan(t, "the wake's POST", func(s tracetest.SpanStub) bool {
		return s.Name == "POST" && s.SpanKind == trace.SpanKindClient && childOf(s, wake)
	})
	if got := rc.traceparents(); len(got) == 0 || got[0] != traceparent(post.SpanContext) {
		t.Fatalf("the webhook got traceparent %q, want the POST span's %q", got, traceparent(post.SpanContext))
	}
	return post
}

// TestTracesJoinAppendWakeAndCallbacks: a stream created with a body
// (an append) is a server span named by its route; the wake it causes is
// its child, the wake's POST a child of the wake, and the POST carries that
// span's traceparent. The consumer (the Go SDK) carries the traceparent
// back, so Herald's spans of its callbacks are children of the POST: one
// trace from the append to the last callback.
func TestTracesJoinAppendWakeAndCallbacks(t *testing.T) {
	t.Parallel()
	ta := startTracedApp(t, slog.New(slog.DiscardHandler))
	rc := newReceiver(t)
	resp, body := do(t, "PUT", ta.base+"/agents/*?subscription=tr", nil, `{"webhook":"`+rc.srv.URL+`/hook"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create subscription: %d %s", resp.StatusCode, body)
	}
	var sub struct {
		Secret string `json:"webhook_secret"`
	}
	if err := json.Unmarshal([]byte(body), &sub); err != nil {
		t.Fatal(err)
	}
	var consumer http.Handler = client.NewConsumer(client.ConsumerConfig{Secret: sub.Secret, Process: func(context.Context, client.Batch) error { return nil }})
	rc.handle.Store(&consumer)

	resp, body = do(t, "PUT", ta.base+"/agents/task-1?token=not-logged", http.Header{"Content-Type": {"text/plain"}, "Authorization": {"Bearer not-a-span-attribute"}}, "hello")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create stream: %d %s", resp.StatusCode, body)
	}
	appendSpan := ta.waitSpan(t, "PUT /{stream}", named("PUT /{stream}"))
	if appendSpan.SpanKind != trace.SpanKindServer || appendSpan.Parent.IsValid() {
		t.Fatalf("append span: kind %v, parent %v; want a root server span", appendSpan.SpanKind, appendSpan.Parent)
	}
	post := ta.waitWakePost(t, appendSpan, rc)
	callback := ta.waitSpan(t, "a callback, child of the wake's POST", func(s tracetest.SpanStub) bool {
		return s.Name == "POST /callback/{consumer_id}" && childOf(s, post)
	})
	if callback.SpanKind != trace.SpanKindServer {
		t.Fatalf("callback span kind %v", callback.SpanKind)
	}
	assertNoSecrets(t, ta.spans.GetSpans(), "not-logged", "not-a-span-attribute", sub.Secret, "Bearer")
}

// TestTracesJoinAppendAndReservedWake: a reserved-API webhook
// subscription's wake is traced as the other front door's: the
// subscription.wake span is a child of the append that caused it, and
// its POST, a child of the wake, carries that span's traceparent.
func TestTracesJoinAppendAndReservedWake(t *testing.T) {
	t.Parallel()
	ta := startTracedApp(t, slog.New(slog.DiscardHandler))
	rc := newReceiver(t)
	resp, body := do(t, "PUT", ta.base+"/__ds/subscriptions/traced", nil, `{"type":"webhook","streams":["orders/1"],"webhook":{"url":"`+rc.srv.URL+`/hook"}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create subscription: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "PUT", ta.base+"/orders/1", http.Header{"Content-Type": {"text/plain"}}, "hello")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create stream: %d %s", resp.StatusCode, body)
	}
	appendSpan := ta.waitSpan(t, "PUT /{stream}", named("PUT /{stream}"))
	ta.waitWakePost(t, appendSpan, rc)
}

// TestTracesJoinPublishMatchAndAttempts: a published event's request span
// is the parent of the match, the match of the attempt, the attempt of its
// POST, and the endpoint receives the POST's traceparent.
func TestTracesJoinPublishMatchAndAttempts(t *testing.T) {
	t.Parallel()
	ta := startTracedApp(t, slog.New(slog.DiscardHandler))
	rc := newReceiver(t)
	resp, body := do(t, "POST", ta.base+"/_herald/v1/endpoints", nil, `{"url":"`+rc.srv.URL+`/events?sig=kept-out"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "POST", ta.base+"/_herald/v1/events", nil, `{"type":"order.paid","data":{"total":1}}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish: %d %s", resp.StatusCode, body)
	}
	publish := ta.waitSpan(t, "POST /_herald/v1/events", named("POST /_herald/v1/events"))
	match := ta.waitSpan(t, "delivery.match, child of the publish", func(s tracetest.SpanStub) bool {
		return s.Name == "delivery.match" && childOf(s, publish)
	})
	attempt := ta.waitSpan(t, "delivery.attempt, child of the match", func(s tracetest.SpanStub) bool {
		return s.Name == "delivery.attempt" && childOf(s, match)
	})
	post := ta.waitSpan(t, "the attempt's POST", func(s tracetest.SpanStub) bool {
		return s.Name == "POST" && s.SpanKind == trace.SpanKindClient && childOf(s, attempt)
	})
	if got := rc.traceparents(); len(got) != 1 || got[0] != traceparent(post.SpanContext) {
		t.Fatalf("the endpoint got traceparent %q, want the POST span's %q", got, traceparent(post.SpanContext))
	}
	assertNoSecrets(t, ta.spans.GetSpans(), "kept-out", "whsec_")
}

// assertNoSecrets fails if a span's name or attribute holds any of words.
func assertNoSecrets(t *testing.T, spans tracetest.SpanStubs, words ...string) {
	t.Helper()
	for _, s := range spans {
		texts := []string{s.Name}
		for _, a := range s.Attributes {
			texts = append(texts, string(a.Key)+"="+a.Value.Emit())
		}
		for _, text := range texts {
			for _, w := range words {
				if w != "" && strings.Contains(text, w) {
					t.Errorf("span %q holds %q: %s", s.Name, w, text)
				}
			}
		}
	}
}

// TestAccessLogAndRequestID: every request is logged once by the access
// log with its route, status, size and id; a usable X-Request-Id is kept
// and echoed, another one is made; credential-like query values never
// reach the log. --access-log=false logs nothing and makes no id.
func TestAccessLogAndRequestID(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	ta := startTracedApp(t, slog.New(slog.NewJSONHandler(&logs, nil)))
	resp, _ := do(t, "PUT", ta.base+"/logs/a?token=tok-secret&api_key=k-secret&offset=-1", http.Header{"X-Request-Id": {"req-123"}, "Authorization": {"Bearer hk_not_logged"}}, `[{"a":1}]`)
	if got := resp.Header.Get("X-Request-Id"); got != "req-123" {
		t.Fatalf("X-Request-Id answered %q, want the request's", got)
	}
	resp, _ = do(t, "GET", ta.base+"/logs/a?offset=-1", http.Header{"X-Request-Id": {"has space"}}, "")
	made := resp.Header.Get("X-Request-Id")
	if made == "" || made == "has space" {
		t.Fatalf("X-Request-Id answered %q, want a new id", made)
	}
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["part"] == "access" {
			lines = append(lines, rec)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("access log lines %v, want 2", lines)
	}
	put, get := lines[0], lines[1]
	if put["method"] != "PUT" || put["route"] != "/{stream}" || put["path"] != "/logs/a" || put["status"] != float64(201) ||
		put["request_id"] != "req-123" || put["query"] != "token=***&api_key=***&offset=-1" || put["trace_id"] == "" {
		t.Errorf("PUT line %v", put)
	}
	if get["request_id"] != made || get["status"] != float64(200) || get["bytes"] != float64(len(`[{"a":1}]`)) {
		t.Errorf("GET line %v", get)
	}
	for _, secret := range []string{"tok-secret", "k-secret", "hk_not_logged"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs.String())
		}
	}

	var quiet syncBuffer
	off := startTracedApp(t, slog.New(slog.NewJSONHandler(&quiet, nil)), "--access-log=false")
	resp, _ = do(t, "GET", off.base+"/_herald/healthz", nil, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") != "" || strings.Contains(quiet.String(), `"part":"access"`) {
		t.Fatalf("--access-log=false: id %q, log %s", resp.Header.Get("X-Request-Id"), quiet.String())
	}
}

// scrape reads /_herald/metrics into series → value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, body := do(t, "GET", base+"/_herald/metrics", nil, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsMove: the HTTP, append, store and consumer-removal series
// count what was done.
func TestMetricsMove(t *testing.T) {
	t.Parallel()
	ta := startTracedApp(t, slog.New(slog.DiscardHandler))
	rc := newReceiver(t)
	before := scrape(t, ta.base)
	if resp, body := do(t, "PUT", ta.base+"/agents/*?subscription=m", nil, `{"webhook":"`+rc.srv.URL+`/hook"}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create subscription: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/agents/a", "/agents/b"} {
		if resp, body := do(t, "PUT", ta.base+path, http.Header{"Content-Type": {"text/plain"}}, "x"); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d %s", path, resp.StatusCode, body)
		}
		if resp, body := do(t, "POST", ta.base+path, http.Header{"Content-Type": {"text/plain"}}, "y"); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("append %s: %d %s", path, resp.StatusCode, body)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for scrape(t, ta.base)["herald_subscription_consumers_spawned_total"] < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the consumers were not spawned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resp, body := do(t, "DELETE", ta.base+"/agents/*?subscription=m", nil, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete subscription: %d %s", resp.StatusCode, body)
	}
	after := scrape(t, ta.base)
	for series, want := range map[string]float64{
		`herald_http_requests_total{code="201",method="PUT",route="/{stream}"}`:                       2,
		`herald_http_requests_total{code="204",method="POST",route="/{stream}"}`:                      2,
		`herald_http_requests_total{code="201",method="PUT",route="/{pattern}?subscription={id}"}`:    1,
		`herald_http_requests_total{code="204",method="DELETE",route="/{pattern}?subscription={id}"}`: 1,
		`herald_http_request_duration_seconds_count{method="POST",route="/{stream}"}`:                 2,
		`herald_stream_append_duration_seconds_count`:                                                 2,
		`herald_subscription_consumers_removed_total{reason="subscription_deleted"}`:                  2,
	} {
		if got := after[series] - before[series]; got != want {
			t.Errorf("%s moved by %v, want %v", series, got, want)
		}
	}
	if got := after[`herald_http_requests_total{code="200",method="GET",route="/_herald/metrics"}`]; got < 2 {
		t.Errorf("scrapes counted %v, want at least 2", got)
	}
	for _, series := range []string{
		`herald_store_batch_size_count`, `herald_store_batch_duration_seconds_count`,
		`herald_store_commit_duration_seconds_count{sync="full"}`,
	} {
		if after[series] <= before[series] {
			t.Errorf("%s did not move: %v → %v", series, before[series], after[series])
		}
	}
}
