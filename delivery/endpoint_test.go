package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/webhook"
)

// staticURLCheck checks URLs without DNS, the way the sender does for
// address literals and localhost, and answers a refusal as the engine's
// check does: a *ValidationError of CodeURLRefused.
func staticURLCheck(allow ...string) func(context.Context, string) error {
	var p webhook.Policy
	for _, a := range allow {
		p.AllowCIDRs = append(p.AllowCIDRs, netip.MustParsePrefix(a))
	}
	return func(_ context.Context, raw string) error {
		if _, err := p.CheckURL(raw); err != nil {
			return &ValidationError{Code: CodeURLRefused, Field: "url", Message: err.Error(), Err: err}
		}
		return nil
	}
}

func validate(cfg *EndpointConfig) (*EndpointConfig, error) {
	return ValidateEndpoint(context.Background(), &ValidateEndpointParams{
		Config: cfg, CheckURL: staticURLCheck(), CompileStream: compilePrefixGlob,
	})
}

func TestValidateEndpointFillsDefaults(t *testing.T) {
	t.Parallel()
	got, err := validate(&EndpointConfig{URL: "https://hooks.example.com/in"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.EventTypes, []string{"*"}) || !slices.Equal(got.Streams, []string{"/**"}) {
		t.Fatalf("defaults: event_types %v, streams %v", got.EventTypes, got.Streams)
	}
	if got.Ordering != OrderingNone || !slices.Equal(got.RetrySchedule, DefaultSchedule()) || got.Filter != nil || got.Headers != nil {
		t.Fatalf("defaults: %+v", got)
	}
}

func TestValidateEndpointKeepsValidSettings(t *testing.T) {
	t.Parallel()
	in := &EndpointConfig{
		URL:           "https://hooks.example.com/in",
		EventTypes:    []string{"scenario.*", "tool.execution.completed"},
		Streams:       []string{"/tenants/t1/**"},
		Filter:        json.RawMessage(`{ "data.agent_id" : "a1" }`),
		Description:   "Production webhook ✓",
		Tenant:        "t1",
		RateLimit:     12.5,
		MaxInFlight:   4,
		Ordering:      OrderingStream,
		RetrySchedule: Schedule{0, time.Minute},
		Headers:       map[string]string{"authorization": "Bearer abc", "X-Tenant": "t1"},
	}
	got, err := validate(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Filter) != `{"data.agent_id":"a1"}` {
		t.Fatalf("filter = %s", got.Filter)
	}
	if got.Headers["Authorization"] != "Bearer abc" || got.Headers["X-Tenant"] != "t1" || len(got.Headers) != 2 {
		t.Fatalf("headers = %v", got.Headers)
	}
	if got.Ordering != OrderingStream || got.RateLimit != 12.5 || got.MaxInFlight != 4 || !slices.Equal(got.RetrySchedule, in.RetrySchedule) {
		t.Fatalf("settings changed: %+v", got)
	}
	// The input is not modified and the output does not alias it.
	got.EventTypes[0] = "changed"
	if in.EventTypes[0] != "scenario.*" || in.Headers["authorization"] != "Bearer abc" {
		t.Fatal("ValidateEndpoint aliased or modified its input")
	}
}

func TestValidateEndpointRefuses(t *testing.T) {
	t.Parallel()
	ok := func() *EndpointConfig { return &EndpointConfig{URL: "https://hooks.example.com/in"} }
	with := func(f func(*EndpointConfig)) *EndpointConfig { c := ok(); f(c); return c }
	cases := []struct {
		name  string
		cfg   *EndpointConfig
		code  Code
		field string
	}{
		{"http url", with(func(c *EndpointConfig) { c.URL = "http://93.184.216.34/in" }), CodeURLRefused, "url"},
		{"private url", with(func(c *EndpointConfig) { c.URL = "https://10.0.0.1/in" }), CodeURLRefused, "url"},
		{"metadata url", with(func(c *EndpointConfig) { c.URL = "http://169.254.169.254/" }), CodeURLRefused, "url"},
		{"empty url", with(func(c *EndpointConfig) { c.URL = "" }), CodeURLRefused, "url"},
		{"bad pattern", with(func(c *EndpointConfig) { c.EventTypes = []string{"a.*.b"} }), CodeInvalidEventTypePattern, "event_types[0]"},
		{"no patterns", with(func(c *EndpointConfig) { c.EventTypes = []string{} }), CodeInvalidEventTypePattern, "event_types"},
		{"bad stream", with(func(c *EndpointConfig) { c.Streams = []string{"nope"} }), CodeInvalidStreamPattern, "streams[0]"},
		{"bad filter", with(func(c *EndpointConfig) { c.Filter = json.RawMessage(`{"agent": 1}`) }), CodeInvalidFilter, "filter.agent"},
		{"bad schedule", with(func(c *EndpointConfig) { c.RetrySchedule = Schedule{0, 100 * time.Hour} }), CodeInvalidRetrySchedule, "retry_schedule[1]"},
		{"empty schedule", with(func(c *EndpointConfig) { c.RetrySchedule = Schedule{} }), CodeInvalidRetrySchedule, "retry_schedule"},
		{"negative rate", with(func(c *EndpointConfig) { c.RateLimit = -1 }), CodeInvalidRateLimit, "rate_limit"},
		{"NaN rate", with(func(c *EndpointConfig) { c.RateLimit = math.NaN() }), CodeInvalidRateLimit, "rate_limit"},
		{"huge rate", with(func(c *EndpointConfig) { c.RateLimit = MaxRateLimit + 1 }), CodeInvalidRateLimit, "rate_limit"},
		{"negative in flight", with(func(c *EndpointConfig) { c.MaxInFlight = -1 }), CodeInvalidMaxInFlight, "max_in_flight"},
		{"huge in flight", with(func(c *EndpointConfig) { c.MaxInFlight = MaxMaxInFlight + 1 }), CodeInvalidMaxInFlight, "max_in_flight"},
		{"bad ordering", with(func(c *EndpointConfig) { c.Ordering = "fifo" }), CodeInvalidOrdering, "ordering"},
		{"hop-by-hop header", with(func(c *EndpointConfig) { c.Headers = map[string]string{"connection": "close"} }), CodeInvalidHeader, "headers.connection"},
		{"transfer-encoding", with(func(c *EndpointConfig) { c.Headers = map[string]string{"Transfer-Encoding": "chunked"} }), CodeInvalidHeader, "headers.Transfer-Encoding"},
		{"host header", with(func(c *EndpointConfig) { c.Headers = map[string]string{"Host": "internal"} }), CodeInvalidHeader, "headers.Host"},
		{"signature header", with(func(c *EndpointConfig) { c.Headers = map[string]string{"webhook-signature": "v1,x"} }), CodeInvalidHeader, "headers.webhook-signature"},
		{"content-type", with(func(c *EndpointConfig) { c.Headers = map[string]string{"Content-Type": "text/plain"} }), CodeInvalidHeader, "headers.Content-Type"},
		{"bad header name", with(func(c *EndpointConfig) { c.Headers = map[string]string{"X Bad": "v"} }), CodeInvalidHeader, "headers.X Bad"},
		{"CRLF in value", with(func(c *EndpointConfig) { c.Headers = map[string]string{"X-A": "v\r\nX-Injected: 1"} }), CodeInvalidHeader, "headers.X-A"},
		{"duplicate header", with(func(c *EndpointConfig) { c.Headers = map[string]string{"X-A": "1", "x-a": "2"} }), CodeInvalidHeader, "headers.x-a"},
		{"long description", with(func(c *EndpointConfig) { c.Description = strings.Repeat("d", MaxDescriptionLen+1) }), CodeInvalidDescription, "description"},
		{"control in tenant", with(func(c *EndpointConfig) { c.Tenant = "t\n1" }), CodeInvalidTenant, "tenant"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := validate(tc.cfg)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("ValidateEndpoint = %v, want a ValidationError", err)
			}
			if ve.Code != tc.code || ve.Field != tc.field {
				t.Fatalf("ValidateEndpoint = %s at %q (%v), want %s at %q", ve.Code, ve.Field, err, tc.code, tc.field)
			}
		})
	}

	many := map[string]string{}
	for i := range MaxHeaders + 1 {
		many["X-H"+strings.Repeat("a", i)] = "v"
	}
	if _, err := validate(with(func(c *EndpointConfig) { c.Headers = many })); !errors.Is(err, ErrInvalid) {
		t.Fatalf("too many headers = %v", err)
	}
}

func TestValidateEndpointPassesOtherURLErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ValidateEndpoint(ctx, &ValidateEndpointParams{
		Config:   &EndpointConfig{URL: "https://hooks.example.com/"},
		CheckURL: func(ctx context.Context, _ string) error { return ctx.Err() },
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalid) {
		t.Fatalf("cancelled check = %v, want context.Canceled, not a validation error", err)
	}
	if _, err := ValidateEndpoint(ctx, &ValidateEndpointParams{Config: &EndpointConfig{}}); err == nil {
		t.Fatal("missing CheckURL accepted")
	}
}

func TestEndpointConfigJSON(t *testing.T) {
	t.Parallel()
	var cfg EndpointConfig
	raw := `{"url":"https://hooks.example.com/in","event_types":["a.*"],"retry_schedule":["0","10s",60],
		"ordering":"stream","rate_limit":2,"headers":{"X-A":"1"},"filter":{"data.k":{"in":[1,2]}}}`
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	got, err := validate(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.RetrySchedule, Schedule{0, 10 * time.Second, time.Minute}) || got.Ordering != OrderingStream {
		t.Fatalf("decoded %+v", got)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"retry_schedule":["0","10s","1m"]`) || !strings.Contains(string(b), `"filter":{"data.k":{"in":[1,2]}}`) {
		t.Fatalf("encoded %s", b)
	}
}

func TestFinalStatus(t *testing.T) {
	t.Parallel()
	for status, final := range map[int]bool{
		400: true, 401: true, 403: true, 404: true, 410: true, 422: true, 499: true,
		408: false, 409: false, 425: false, 429: false, 500: false, 503: false, 302: false, 200: false,
	} {
		if got := FinalStatus(FailurePolicyStandard, status); got != final {
			t.Errorf("standard, HTTP %d: final %v, want %v", status, got, final)
		}
		if FinalStatus(FailurePolicyRetryAll, status) {
			t.Errorf("retry_all, HTTP %d: final", status)
		}
	}
}
