package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/textproto"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Ordering says whether an endpoint's deliveries keep stream order.
type Ordering string

// Orderings.
const (
	// OrderingNone: deliveries go out concurrently, up to max_in_flight.
	OrderingNone Ordering = "none"
	// OrderingStream: one delivery at a time per stream, in stream order; a
	// failing delivery holds back the later ones of its stream.
	OrderingStream Ordering = "stream"
)

// Endpoint limits.
const (
	MaxRateLimit      = 10000 // deliveries per second
	MaxMaxInFlight    = 1000
	MaxHeaders        = 32
	maxHeaderValueLen = 4096
	MaxDescriptionLen = 1024
	MaxNameLen        = 255
	MaxTenantLen      = 128
	// MinBatchEvents and MaxBatchEvents bound batch.max_events,
	// MaxBatchWait batch.max_wait_ms.
	MinBatchEvents = 2
	MaxBatchEvents = 1000
	MaxBatchWait   = time.Minute
)

// Failure policies: which answers end a delivery at once.
const (
	// FailurePolicyStandard: a 4xx other than 408, 409, 425 and 429 is
	// final (the receiver refuses the event; sending it again will not
	// help); 5xx, other answers, timeouts and network errors are retried.
	FailurePolicyStandard = "standard"
	// FailurePolicyRetryAll: every failed attempt is retried on the
	// schedule.
	FailurePolicyRetryAll = "retry_all"
)

// FinalStatus reports whether an HTTP status ends a delivery under a
// failure policy.
func FinalStatus(policy string, status int) bool {
	if policy != FailurePolicyStandard || status < 400 || status > 499 {
		return false
	}
	switch status {
	case 408, 409, 425, 429:
		return false
	}
	return true
}

// ValidFailurePolicy reports whether p names a failure policy.
func ValidFailurePolicy(p string) bool {
	return p == FailurePolicyStandard || p == FailurePolicyRetryAll
}

// EndpointConfig is what an endpoint's owner configures. Zero values mean
// the defaults that ValidateEndpoint fills in.
type EndpointConfig struct {
	// Type is the destination type: DestinationWebhook ("" means it),
	// DestinationNATS or DestinationKafka.
	Type string `json:"type,omitempty"`
	// URL receives the POSTs (see webhook.Policy for what is allowed) of
	// a webhook endpoint; a broker endpoint has none.
	URL string `json:"url"`
	// Config is a broker endpoint's destination (see ParseDestination),
	// credentials included; none for a webhook endpoint.
	Config json.RawMessage `json:"config,omitempty"`
	// EventTypes are event-type patterns (see ValidateEventTypePattern);
	// default ["*"].
	EventTypes []string `json:"event_types,omitempty"`
	// Streams are glob patterns of the streams whose events are delivered;
	// default ["/**"].
	Streams []string `json:"streams,omitempty"`
	// Filter is a field filter (see FieldFilter); default none.
	Filter json.RawMessage `json:"filter,omitempty"`
	// Name is a short label for people.
	Name string `json:"name,omitempty"`
	// Description is free text for people.
	Description string `json:"description,omitempty"`
	// Tenant scopes the endpoint to one tenant of the platform.
	Tenant string `json:"tenant,omitempty"`
	// RateLimit caps deliveries per second; 0 means no cap.
	RateLimit float64 `json:"rate_limit,omitempty"`
	// MaxInFlight caps concurrent deliveries; 0 means the engine's default.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// Ordering is "none" (default) or "stream".
	Ordering Ordering `json:"ordering,omitempty"`
	// RetrySchedule defaults to DefaultSchedule.
	RetrySchedule Schedule `json:"retry_schedule,omitempty"`
	// Headers are sent with every delivery. Names Herald sets itself and
	// hop-by-hop names are refused.
	Headers map[string]string `json:"headers,omitempty"`
	// Profile names the wire format (see Profile); "" means the
	// installation's default.
	Profile string `json:"profile,omitempty"`
	// FailurePolicy is "standard" or "retry_all"; "" means the
	// installation's default.
	FailurePolicy string `json:"failure_policy,omitempty"`
	// TimeoutMS bounds one attempt, in milliseconds, up to the
	// installation's timeout; 0 means that timeout.
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Batch, when set, sends up to Batch.MaxEvents due deliveries in one
	// POST; nil sends one event per POST.
	Batch *BatchConfig `json:"batch,omitempty"`
}

// BatchConfig is an endpoint's batching: up to MaxEvents due deliveries
// in one POST, or what is due once the earliest has waited MaxWaitMS
// milliseconds for the batch to fill.
type BatchConfig struct {
	MaxEvents int `json:"max_events"`
	MaxWaitMS int `json:"max_wait_ms"`
}

// validate checks a batch configuration's ranges.
func (b *BatchConfig) validate() error {
	if b.MaxEvents < MinBatchEvents || b.MaxEvents > MaxBatchEvents {
		return Invalid(CodeInvalidBatch, "batch.max_events", "must be from %d to %d", MinBatchEvents, MaxBatchEvents)
	}
	if b.MaxWaitMS < 0 || time.Duration(b.MaxWaitMS)*time.Millisecond > MaxBatchWait {
		return Invalid(CodeInvalidBatch, "batch.max_wait_ms", "must be from 0 to %d milliseconds", MaxBatchWait.Milliseconds())
	}
	return nil
}

// DefaultMaxTimeout bounds timeout_ms when ValidateEndpointParams does
// not say: the sender's default timeout (webhook.DefaultTimeout, which a
// dispatch test holds equal).
const DefaultMaxTimeout = 30 * time.Second

// ValidateEndpointParams are the inputs of ValidateEndpoint.
type ValidateEndpointParams struct {
	Config *EndpointConfig
	// CheckURL checks the URL: the sender's check, which answers a URL
	// it refuses with a *ValidationError of CodeURLRefused (see package
	// dispatch). Its error is returned as is.
	CheckURL func(ctx context.Context, raw string) error
	// CheckAddresses checks a broker destination's addresses (the
	// sender's check, answering a refusal with a *ValidationError of
	// CodeURLRefused); required for a broker endpoint.
	CheckAddresses func(ctx context.Context, d *Destination) error
	// Current is the destination of the endpoint being changed, whose
	// credentials a masked value keeps (see KeepMasked); nil on create.
	Current *Destination
	// CompileStream compiles stream patterns (see StreamCompiler).
	CompileStream StreamCompiler
	// Profiles are the profiles an endpoint may name; the shipped ones
	// when nil.
	Profiles *ProfileSet
	// MaxTimeout bounds timeout_ms; DefaultMaxTimeout when 0.
	MaxTimeout time.Duration
}

// refusedHeaders are header names an endpoint may not set: hop-by-hop
// headers, framing headers that must describe the body Herald sends, and
// the signature headers. Keys are canonical.
var refusedHeaders = map[string]string{
	"Connection":          "hop-by-hop",
	"Keep-Alive":          "hop-by-hop",
	"Proxy-Connection":    "hop-by-hop",
	"Proxy-Authenticate":  "hop-by-hop",
	"Proxy-Authorization": "hop-by-hop",
	"Te":                  "hop-by-hop",
	"Trailer":             "hop-by-hop",
	"Transfer-Encoding":   "hop-by-hop",
	"Upgrade":             "hop-by-hop",
	"Host":                "set from the URL",
	"Content-Length":      "set by Herald",
	"Content-Type":        "set by Herald",
	"Content-Encoding":    "set by Herald",
	"Expect":              "set by Herald",
	"Webhook-Id":          "a signature header",
	"Webhook-Timestamp":   "a signature header",
	"Webhook-Signature":   "a signature header",
}

// ValidateEndpoint validates an endpoint configuration and returns a copy
// with the defaults filled in and header names canonicalised. The pure
// checks run first; the URL check, which may resolve DNS, runs last. Errors
// are *ValidationError, except a non-refusal error of CheckURL (a cancelled
// context, say), which is returned as is.
func ValidateEndpoint(ctx context.Context, p *ValidateEndpointParams) (*EndpointConfig, error) {
	if p.CheckURL == nil {
		return nil, errors.New("delivery: ValidateEndpoint needs a CheckURL")
	}
	in := p.Config
	out := &EndpointConfig{
		Type:          in.Type,
		URL:           in.URL,
		Name:          in.Name,
		EventTypes:    slices.Clone(in.EventTypes),
		Streams:       slices.Clone(in.Streams),
		Description:   in.Description,
		Tenant:        in.Tenant,
		RateLimit:     in.RateLimit,
		MaxInFlight:   in.MaxInFlight,
		Ordering:      in.Ordering,
		Profile:       in.Profile,
		FailurePolicy: in.FailurePolicy,
		TimeoutMS:     in.TimeoutMS,
	}
	if in.Batch != nil {
		if err := in.Batch.validate(); err != nil {
			return nil, err
		}
		b := *in.Batch
		out.Batch = &b
	}
	if out.EventTypes == nil {
		out.EventTypes = []string{"*"}
	}
	if out.Streams == nil {
		out.Streams = []string{DefaultStreamPattern}
	}
	filter, err := normalizeFilter(in.Filter)
	if err != nil {
		return nil, err
	}
	out.Filter = filter
	if _, err := CompileFilters(&FiltersParams{
		EventTypes: out.EventTypes, Streams: out.Streams, Filter: out.Filter, CompileStream: p.CompileStream,
	}); err != nil {
		return nil, err
	}

	out.RetrySchedule = slices.Clone(in.RetrySchedule)
	if out.RetrySchedule == nil {
		out.RetrySchedule = DefaultSchedule()
	}
	if err := out.RetrySchedule.Validate(); err != nil {
		return nil, err
	}
	if math.IsNaN(out.RateLimit) || math.IsInf(out.RateLimit, 0) || out.RateLimit < 0 || out.RateLimit > MaxRateLimit {
		return nil, Invalid(CodeInvalidRateLimit, "rate_limit", "must be from 0 (no limit) to %d deliveries per second", MaxRateLimit)
	}
	if out.MaxInFlight < 0 || out.MaxInFlight > MaxMaxInFlight {
		return nil, Invalid(CodeInvalidMaxInFlight, "max_in_flight", "must be from 0 (engine default) to %d", MaxMaxInFlight)
	}
	switch out.Ordering {
	case "":
		out.Ordering = OrderingNone
	case OrderingNone, OrderingStream:
	default:
		return nil, Invalid(CodeInvalidOrdering, "ordering", "%q is not an ordering; use \"none\" or \"stream\"", out.Ordering)
	}
	profile, err := validateProfileChoice(p.Profiles, out.Profile)
	if err != nil {
		return nil, err
	}
	headers, err := validateHeaders(in.Headers, profile)
	if err != nil {
		return nil, err
	}
	out.Headers = headers
	if out.FailurePolicy != "" && !ValidFailurePolicy(out.FailurePolicy) {
		return nil, Invalid(CodeInvalidFailurePolicy, "failure_policy", "%q is not a failure policy; use %q or %q", out.FailurePolicy, FailurePolicyStandard, FailurePolicyRetryAll)
	}
	maxTimeout := p.MaxTimeout
	if maxTimeout <= 0 {
		maxTimeout = DefaultMaxTimeout
	}
	if out.TimeoutMS < 0 || time.Duration(out.TimeoutMS)*time.Millisecond > maxTimeout {
		return nil, Invalid(CodeInvalidTimeout, "timeout_ms", "must be from 0 (the installation's timeout) to %d milliseconds", maxTimeout.Milliseconds())
	}
	if !utf8.ValidString(out.Name) || len(out.Name) > MaxNameLen || strings.ContainsFunc(out.Name, IsControl) {
		return nil, Invalid(CodeInvalidName, "name", "must be UTF-8 of at most %d bytes without control characters", MaxNameLen)
	}
	if !utf8.ValidString(out.Description) || len(out.Description) > MaxDescriptionLen {
		return nil, Invalid(CodeInvalidDescription, "description", "must be UTF-8 of at most %d bytes", MaxDescriptionLen)
	}
	if !utf8.ValidString(out.Tenant) || len(out.Tenant) > MaxTenantLen || strings.ContainsFunc(out.Tenant, IsControl) {
		return nil, Invalid(CodeInvalidTenant, "tenant", "must be UTF-8 of at most %d bytes without control characters", MaxTenantLen)
	}

	return out, checkDestination(ctx, p, in, out)
}

// checkDestination checks what an endpoint sends to: its URL, or its
// broker destination, whose normalised config it writes to out.
func checkDestination(ctx context.Context, p *ValidateEndpointParams, in, out *EndpointConfig) error {
	if out.Type == "" || out.Type == DestinationWebhook {
		out.Type = DestinationWebhook
		if c := bytes.TrimSpace(in.Config); len(c) > 0 && string(c) != "null" {
			return Invalid(CodeInvalidDestination, "config", "a webhook endpoint has a url and no config")
		}
		return p.CheckURL(ctx, out.URL)
	}
	d, err := ParseDestination(out.Type, in.Config)
	if err != nil {
		return err
	}
	if out.URL != "" {
		return Invalid(CodeInvalidDestination, "url", "a %s endpoint has a config and no url", out.Type)
	}
	if err := KeepMasked(p.Current, d); err != nil {
		return err
	}
	if p.CheckAddresses == nil {
		return errors.New("delivery: ValidateEndpoint needs a CheckAddresses for a broker endpoint")
	}
	if err := p.CheckAddresses(ctx, d); err != nil {
		return err
	}
	out.Config, err = d.JSON()
	return err
}

// normalizeFilter compacts a filter, and turns null and {} into none.
func normalizeFilter(raw json.RawMessage) (json.RawMessage, error) {
	f, err := ParseFieldFilter(raw)
	if err != nil || f == nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, &ValidationError{Code: CodeInvalidFilter, Field: "filter", Message: "filter is not valid JSON", Err: err}
	}
	return buf.Bytes(), nil
}

// validateProfileChoice returns the profile an endpoint names ("" for the
// default).
func validateProfileChoice(ps *ProfileSet, name string) (*Profile, error) {
	if ps == nil {
		var err error
		if ps, err = NewProfileSet(nil, ""); err != nil {
			return nil, err
		}
	}
	p, ok := ps.Lookup(name)
	if !ok {
		return nil, Invalid(CodeInvalidProfile, "profile", "no profile %q; known: %s", name, strings.Join(ps.Names(), ", "))
	}
	return p, nil
}

// validateHeaders checks custom headers and returns them with canonical
// names. The headers of the endpoint's profile are refused too.
func validateHeaders(in map[string]string, profile *Profile) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > MaxHeaders {
		return nil, Invalid(CodeInvalidHeader, "headers", "%d headers, over the limit of %d", len(in), MaxHeaders)
	}
	out := make(map[string]string, len(in))
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	slices.Sort(names) // deterministic first error
	for _, name := range names {
		value := in[name]
		field := "headers." + name
		if !validHeaderName(name) {
			return nil, Invalid(CodeInvalidHeader, field, "%q is not a valid header name", name)
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		if why, refused := refusedHeaders[canon]; refused {
			return nil, Invalid(CodeInvalidHeader, field, "%s cannot be set (%s)", canon, why)
		}
		if profile.sets(canon) {
			return nil, Invalid(CodeInvalidHeader, field, "%s cannot be set (a header of profile %s)", canon, profile.Name)
		}
		if _, dup := out[canon]; dup {
			return nil, Invalid(CodeInvalidHeader, field, "%s is given twice (names are case-insensitive)", canon)
		}
		if len(value) > maxHeaderValueLen {
			return nil, Invalid(CodeInvalidHeader, field, "value is over %d bytes", maxHeaderValueLen)
		}
		if !validHeaderValue(value) {
			return nil, Invalid(CodeInvalidHeader, field, "value has a control character (CR, LF or NUL?)")
		}
		out[canon] = value
	}
	return out, nil
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v has no control character but tab
// (RFC 9110 field-value).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func IsControl(r rune) bool { return r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) }
