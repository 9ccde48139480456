package dispatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// Errors of the engine's operations (besides *ValidationError and the
// store's sentinels).
var (
	// ErrVerificationFailed: the endpoint did not answer its ownership
	// challenge, or a verification code is not the one last sent.
	ErrVerificationFailed = errors.New("delivery: endpoint verification failed")
	// ErrStreamNotSourced: a replay names a stream the endpoint does not
	// source from.
	ErrStreamNotSourced = errors.New("delivery: the endpoint does not source from that stream")
)

// Limits of the operations.
const (
	// TestEventType is the type of the event `test` sends.
	TestEventType = "herald.test"
	// VerificationEventType is the type of the verification challenge.
	VerificationEventType = "herald.verification"
)

// CreateEndpointParams are the inputs of CreateEndpoint.
type CreateEndpointParams struct {
	Config delivery.EndpointConfig
	Active bool
	// Secret is the signing secret; one is generated when "".
	Secret string
	// Verify puts the endpoint under ownership verification (so does
	// EngineConfig.RequireVerification): it is pending, receiving nothing,
	// until it answers a challenge (sent at once, see challenge) or its
	// owner gives the challenge's code to VerifyEndpoint.
	Verify bool
}

// CreateEndpoint validates, optionally verifies, and stores an endpoint,
// and starts delivering to it.
func (e *Engine) CreateEndpoint(ctx context.Context, p *CreateEndpointParams) (*store.Endpoint, error) {
	cfg, err := e.validate(ctx, &p.Config, nil)
	if err != nil {
		return nil, err
	}
	broker := delivery.IsBroker(cfg.Type)
	if broker && p.Verify {
		return nil, delivery.Invalid(delivery.CodeInvalidDestination, "verify",
			"a %s endpoint has no URL to prove: verification is for webhooks", cfg.Type)
	}
	if err := e.checkEndpointTypes(ctx, cfg.EventTypes, nil); err != nil {
		return nil, err
	}
	secret := p.Secret
	if secret == "" {
		if secret, err = e.newSecret(); err != nil {
			return nil, err
		}
	} else if err := delivery.ValidateSecret(secret); err != nil {
		return nil, err
	}
	id, err := e.newID("ep_")
	if err != nil {
		return nil, err
	}
	if p.Config.RetrySchedule == nil {
		cfg.RetrySchedule = nil // the engine's configured default, now and after a change of it
	}
	ep := endpointFromConfig(id, cfg)
	ep.Active, ep.Secret = p.Active, secret
	if !broker && (p.Verify || e.cfg.RequireVerification) {
		ep.Verification.Required = true
		if err := e.challenge(ctx, &ep); err != nil && !errors.Is(err, ErrVerificationFailed) {
			return nil, err
		}
	}
	created, err := e.st.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: ep, Now: e.now()})
	if err != nil {
		return nil, err
	}
	e.install(created)
	return created, nil
}

// validate validates an endpoint's configuration with the engine's
// checks (cur is the destination of the endpoint being changed).
func (e *Engine) validate(ctx context.Context, c *delivery.EndpointConfig, cur *delivery.Destination) (*delivery.EndpointConfig, error) {
	return delivery.ValidateEndpoint(ctx, &delivery.ValidateEndpointParams{Config: c, CheckURL: urlCheck(e.sender.ValidateURL),
		CheckAddresses: e.addressCheck, Current: cur, CompileStream: compileStream, Profiles: e.cfg.Profiles, MaxTimeout: e.cfg.Timeout})
}

func endpointFromConfig(id string, c *delivery.EndpointConfig) store.Endpoint {
	ep := store.Endpoint{
		ID: id, Type: c.Type, URL: c.URL, Name: c.Name, EventTypes: c.EventTypes, Streams: c.Streams, Filter: c.Filter, Description: c.Description,
		Tenant: c.Tenant, RateLimit: c.RateLimit, MaxInFlight: c.MaxInFlight, Ordering: string(c.Ordering),
		RetrySchedule: c.RetrySchedule, Headers: c.Headers, Profile: c.Profile, FailurePolicy: c.FailurePolicy,
		Timeout: time.Duration(c.TimeoutMS) * time.Millisecond,
	}
	if c.Batch != nil {
		ep.BatchMaxEvents, ep.BatchMaxWait = c.Batch.MaxEvents, time.Duration(c.Batch.MaxWaitMS)*time.Millisecond
	}
	if delivery.IsBroker(c.Type) {
		ep.Destination = c.Config
	}
	return ep
}

// ConfigOf returns the configuration of a stored endpoint.
func ConfigOf(ep *store.Endpoint) delivery.EndpointConfig {
	return delivery.EndpointConfig{
		Type: ep.Type, Config: ep.Destination, URL: ep.URL, Name: ep.Name, EventTypes: ep.EventTypes, Streams: ep.Streams, Filter: ep.Filter, Description: ep.Description,
		Tenant: ep.Tenant, RateLimit: ep.RateLimit, MaxInFlight: ep.MaxInFlight, Ordering: delivery.Ordering(ep.Ordering),
		RetrySchedule: ep.RetrySchedule, Headers: ep.Headers, Profile: ep.Profile, FailurePolicy: ep.FailurePolicy,
		TimeoutMS: int(ep.Timeout / time.Millisecond), Batch: BatchOf(ep),
	}
}

// batchOf is a stored endpoint's batching, nil when it sends one event
// per POST.
func BatchOf(ep *store.Endpoint) *delivery.BatchConfig {
	if ep.BatchMaxEvents < delivery.MinBatchEvents {
		return nil
	}
	return &delivery.BatchConfig{MaxEvents: ep.BatchMaxEvents, MaxWaitMS: int(ep.BatchMaxWait / time.Millisecond)}
}

// UpdateEndpointParams are the inputs of UpdateEndpoint.
type UpdateEndpointParams struct {
	ID string
	// Config is the whole new configuration.
	Config delivery.EndpointConfig
	Active bool
	// Reenable is the owner asking for the endpoint to be on: on an
	// endpoint the breaker disabled, its failure count starts again and
	// its kept deliveries resume. Without it a disabled endpoint stays
	// disabled, whatever else changes.
	Reenable bool
	// ExpectVersion is the version the change was made from.
	ExpectVersion int64
}

// UpdateEndpoint validates and stores a new configuration. An endpoint
// under ownership verification whose URL changes is pending again, and
// the new URL is challenged at once. Errors: *ValidationError,
// store.ErrEndpointNotFound, store.ErrEndpointConflict.
func (e *Engine) UpdateEndpoint(ctx context.Context, p *UpdateEndpointParams) (*store.Endpoint, error) {
	cur, err := e.st.EndpointGet(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	curDest, err := destinationOf(cur)
	if err != nil {
		return nil, err
	}
	cfg, err := e.validate(ctx, &p.Config, curDest)
	if err != nil {
		return nil, err
	}
	if err := e.checkEndpointTypes(ctx, cfg.EventTypes, cur.EventTypes); err != nil {
		return nil, err
	}
	if p.Config.RetrySchedule == nil {
		cfg.RetrySchedule = nil
	}
	ep := endpointFromConfig(p.ID, cfg)
	ep.Active = p.Active
	ep.Secret, ep.PreviousSecret, ep.PreviousSecretUntil = cur.Secret, cur.PreviousSecret, cur.PreviousSecretUntil
	ep.Verification = cur.Verification
	switch {
	case delivery.IsBroker(ep.Type):
		// A broker has no URL to prove.
		ep.Verification = store.EndpointVerification{}
	case cur.Verification.Required && ep.URL != cur.URL, delivery.IsBroker(cur.Type) && e.cfg.RequireVerification:
		// A new URL, or a broker endpoint made a webhook, proves its URL.
		ep.Verification = store.EndpointVerification{Required: true}
		if err := e.challenge(ctx, &ep); err != nil && !errors.Is(err, ErrVerificationFailed) {
			return nil, err
		}
	}
	out, err := e.st.EndpointUpdate(ctx, &store.EndpointUpdateParams{
		Endpoint: ep, ExpectVersion: p.ExpectVersion, ResetHealth: p.Reenable && !cur.Health.DisabledAt.IsZero(), Now: e.now(),
	})
	if err != nil {
		return nil, err
	}
	e.install(out)
	return out, nil
}

// RotateSecret gives an endpoint a new secret; the old one keeps signing
// for the rotation overlap. It returns the endpoint with the new secret.
func (e *Engine) RotateSecret(ctx context.Context, id string) (*store.Endpoint, error) {
	return e.changeEndpoint(ctx, id, func(cur *store.Endpoint) (store.Endpoint, error) {
		next, err := e.newSecret()
		if err != nil {
			return store.Endpoint{}, err
		}
		set := delivery.SecretSet{Current: cur.Secret, Previous: cur.PreviousSecret, PreviousUntil: cur.PreviousSecretUntil}.Rotate(next, e.now(), e.cfg.RotationOverlap)
		ep := *cur
		ep.Secret, ep.PreviousSecret, ep.PreviousSecretUntil = set.Current, set.Previous, set.PreviousUntil
		return ep, nil
	})
}

// changeEndpoint reads an endpoint, makes its new state with change, and
// stores it by compare-and-set, starting again when another change came
// first.
func (e *Engine) changeEndpoint(ctx context.Context, id string, change func(cur *store.Endpoint) (store.Endpoint, error)) (*store.Endpoint, error) {
	for range casAttempts {
		cur, err := e.st.EndpointGet(ctx, id)
		if err != nil {
			return nil, err
		}
		ep, err := change(cur)
		if err != nil {
			return nil, err
		}
		out, err := e.st.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: ep, ExpectVersion: cur.Version, Now: e.now()})
		if errors.Is(err, store.ErrEndpointConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		e.install(out)
		return out, nil
	}
	return nil, store.ErrEndpointConflict
}

// DeleteEndpoint removes an endpoint and everything delivered to it.
func (e *Engine) DeleteEndpoint(ctx context.Context, id string) error {
	if err := e.st.EndpointDelete(ctx, id); err != nil {
		return err
	}
	e.uninstall(id)
	return nil
}

// TestResult is the outcome of a test send.
type TestResult struct {
	Event        delivery.Event
	StatusCode   int
	ResponseBody []byte
	Latency      time.Duration
	Error        string
}

// OK reports a 2xx answer.
// A broker's test has no status: its acknowledgement is the success.
func (r *TestResult) OK() bool {
	return r.Error == "" && (r.StatusCode == 0 || r.StatusCode >= 200 && r.StatusCode <= 299)
}

// SendTest sends one signed test event to an endpoint now, outside the
// delivery log and the breaker, and returns what came back. typ is the
// event's type ("" for TestEventType), so a receiver can be tried with
// the events it will get; a type of the catalogue must have data its
// schema accepts, as a published event must.
func (e *Engine) SendTest(ctx context.Context, id, typ string, data json.RawMessage) (*TestResult, error) {
	ep, err := e.st.EndpointGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if typ == "" {
		typ = TestEventType
	} else if err := delivery.ValidateEventType(typ); err != nil {
		return nil, err
	}
	eid, err := e.newID("evt_test_")
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		data = json.RawMessage(`{"message":"a test event from Herald"}`)
	}
	le, err := e.compile(ep)
	if err != nil {
		return nil, err
	}
	now := e.now()
	res := &TestResult{Event: delivery.Event{ID: eid, Type: typ, Timestamp: now.UTC(), Data: data}}
	if typ != TestEventType {
		if _, err := e.checkEvent(ctx, &res.Event); err != nil {
			return nil, err
		}
	}
	body, err := le.profile.Body(&res.Event, ep.Tenant)
	if err != nil {
		return nil, err
	}
	if le.dest != nil {
		d := store.Delivery{EventID: eid, EventType: typ, EventTenant: ep.Tenant, Body: body, CreatedAt: now}
		if err := e.publish(ctx, le, []store.Delivery{d}, now); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.Error = err.Error()
		}
		res.Latency = e.now().Sub(now)
		return res, nil
	}
	req, err := e.signedRequest(le, eid, typ, body, now)
	if err != nil {
		return nil, err
	}
	resp, err := e.sender.Send(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res.Error = err.Error()
		res.Latency = e.now().Sub(now)
		return res, nil
	}
	res.StatusCode, res.ResponseBody, res.Latency = resp.StatusCode, resp.Body, resp.Latency
	if !resp.OK() {
		res.Error = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return res, nil
}

// challenge sends an ownership challenge to the endpoint's URL, signed in
// its profile: a fresh code in the profile's verification header and in
// the body {"type": "herald.verification", "challenge": <code>}. The
// endpoint passes by answering 2xx with {"challenge": <code>}; its owner
// can also give the code it received to VerifyEndpoint. The outcome is
// written to ep.Verification (to be stored by the caller): verified now,
// or the code's hash and why it failed, and then the error wraps
// ErrVerificationFailed.
func (e *Engine) challenge(ctx context.Context, ep *store.Endpoint) error {
	if delivery.IsBroker(ep.Type) {
		return delivery.Invalid(delivery.CodeInvalidDestination, "type", "a %s endpoint has no URL to prove: verification is for webhooks", ep.Type)
	}
	le, err := e.compile(ep)
	if err != nil {
		return err
	}
	code, err := e.newID("hvc_")
	if err != nil {
		return err
	}
	now := e.now()
	body, err := json.Marshal(struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}{VerificationEventType, code})
	if err != nil {
		return err
	}
	req, err := e.signedRequest(le, code, VerificationEventType, body, now)
	if err != nil {
		return err
	}
	req.Header.Set(le.profile.VerificationHeader(), code)
	v := &ep.Verification
	v.SentAt, v.CodeHash = now, hashCode(code)
	failed := func(format string, args ...any) error {
		v.Error = fmt.Sprintf(format, args...)
		return fmt.Errorf("%w: %s", ErrVerificationFailed, v.Error)
	}
	resp, err := e.sender.Send(ctx, req)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return failed("%v", err)
	case !resp.OK():
		return failed("the endpoint answered HTTP %d", resp.StatusCode)
	}
	var answer struct {
		Challenge string `json:"challenge"`
	}
	if json.Unmarshal(resp.Body, &answer) != nil || answer.Challenge != code {
		return failed("the answer is not {\"challenge\": \"<the %s header>\"}", le.profile.VerificationHeader())
	}
	v.VerifiedAt, v.CodeHash, v.Error = now, "", ""
	return nil
}

// hashCode is how a verification code is stored.
func hashCode(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// VerifyEndpoint verifies an endpoint's ownership: with a code, by
// checking it is the code of the last challenge sent (which only the
// endpoint's URL received); without, by sending a new challenge. The
// endpoint is stored with the outcome and returned; a failure also
// returns an error wrapping ErrVerificationFailed (a wrong code changes
// nothing). Verifying an endpoint that does not require it records the
// outcome without making it pending.
func (e *Engine) VerifyEndpoint(ctx context.Context, id, code string) (*store.Endpoint, error) {
	var failed error
	out, err := e.changeEndpoint(ctx, id, func(cur *store.Endpoint) (store.Endpoint, error) {
		ep := *cur
		v := &ep.Verification
		if code == "" {
			failed = e.challenge(ctx, &ep)
			if failed != nil && !errors.Is(failed, ErrVerificationFailed) {
				return ep, failed
			}
			return ep, nil
		}
		if v.CodeHash == "" || subtle.ConstantTimeCompare([]byte(hashCode(code)), []byte(v.CodeHash)) != 1 {
			return ep, fmt.Errorf("%w: the code is not the one of the last challenge sent to the endpoint", ErrVerificationFailed)
		}
		v.VerifiedAt, v.CodeHash, v.Error = e.now(), "", ""
		return ep, nil
	})
	if err != nil {
		return nil, err
	}
	return out, failed
}

// RetryDelivery makes a delivery pending now with a fresh schedule.
func (e *Engine) RetryDelivery(ctx context.Context, id string) (*store.Delivery, error) {
	d, err := e.st.DeliveryRetry(ctx, &store.DeliveryRetryParams{ID: id, Now: e.now()})
	if err != nil {
		return nil, err
	}
	e.kick(map[string]bool{d.EndpointID: true})
	return d, nil
}

// PublishParams are the inputs of Publish.
type PublishParams struct {
	Event  *delivery.Event
	Stream string // "" for the default stream
	Tenant string
}

// PublishResult is the output of Publish.
type PublishResult struct {
	Event     delivery.Event
	Stream    string
	Offset    string
	Duplicate bool
	// DeprecatedType: the catalogue is enforced and marks the event's
	// type deprecated (the event is accepted all the same).
	DeprecatedType bool
}

// Publish appends an event to its stream, assigning an id when it has
// none. An id seen before in the same tenant (published, or appended to
// a stream an endpoint sources from) is not appended again: the result
// is Duplicate, with the event as first seen (its timestamp and data).
// Ids are unique per tenant: another tenant's event of the same id is
// never a duplicate of this one, nor ever shown for it. With the
// catalogue enforced, the event's type must be catalogued and its data
// pass the type's schema. Errors: *ValidationError for a bad stream,
// tenant, or (enforced) type or data, and the store's append errors.
func (e *Engine) Publish(ctx context.Context, p *PublishParams) (*PublishResult, error) {
	stream := p.Stream
	if stream == "" {
		stream = e.cfg.DefaultStream
	}
	if err := ValidateStream(stream); err != nil {
		return nil, err
	}
	if !utf8.ValidString(p.Tenant) || len(p.Tenant) > delivery.MaxTenantLen || strings.ContainsFunc(p.Tenant, delivery.IsControl) {
		return nil, delivery.Invalid(delivery.CodeInvalidTenant, "tenant", "must be UTF-8 of at most %d bytes without control characters", delivery.MaxTenantLen)
	}
	ev := *p.Event
	if ev.Timestamp.IsZero() {
		ev.Timestamp = e.now().UTC()
	}
	if len(ev.Data) == 0 {
		ev.Data = json.RawMessage("null")
	}
	deprecated, err := e.checkEvent(ctx, &ev)
	if err != nil {
		return nil, err
	}
	if ev.ID == "" {
		id, err := e.newID("evt_")
		if err != nil {
			return nil, err
		}
		ev.ID = id
	}
	msg := struct {
		delivery.Event
		Tenant string `json:"tenant,omitempty"`
	}{ev, p.Tenant}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&msg); err != nil { // Encode ends with the '\n' that frames it
		return nil, fmt.Errorf("delivery: encoding event: %w", err)
	}
	out, err := e.st.EventPublish(ctx, &store.EventPublishParams{Stream: stream, Tenant: p.Tenant, EventID: ev.ID, EventType: ev.Type, Data: buf.Bytes(), Now: e.now()})
	if err != nil {
		return nil, err
	}
	if !out.Duplicate {
		e.metrics.published.Inc()
	} else {
		stored, err := e.storedEvent(ctx, out.Stream, out.Position, store.EventKey{Tenant: p.Tenant, ID: ev.ID})
		if err != nil {
			return nil, err
		}
		if stored != nil {
			ev = *stored
		}
	}
	return &PublishResult{Event: ev, Stream: out.Stream, Offset: protocol.FormatOffset(out.Position), Duplicate: out.Duplicate,
		DeprecatedType: deprecated}, nil
}

// knownID names an event whose id is known (eventIDs).
type knownID string

func (k knownID) id(context.Context, int64) (string, error) { return string(k), nil }

// storedEvent reads the event key names whose message starts at pos of
// the stream at path: the event as first published or appended. It is
// nil when the stream no longer holds it (deleted, not an event there,
// or an event of another tenant: a duplicate answer only ever shows the
// caller's own event).
// StoredEvent reads the event of key whose message starts at pos of the
// stream at path, as its endpoints receive it; nil when the stream no
// longer holds it (deleted, trimmed by its retention).
func (e *Engine) StoredEvent(ctx context.Context, path string, pos int64, key store.EventKey) (*delivery.Event, error) {
	return e.storedEvent(ctx, path, pos, key)
}

func (e *Engine) storedEvent(ctx context.Context, path string, pos int64, key store.EventKey) (*delivery.Event, error) {
	now := e.now()
	r, err := e.st.StreamRead(ctx, &store.StreamReadParams{Path: path, From: pos, MaxBytes: e.cfg.MaxEventBytes + 4096, Now: now, Internal: true})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrStreamGone) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	end := bytes.IndexByte(r.Data, '\n')
	if end < 0 {
		return nil, nil
	}
	m, err := parseMessage(ctx, r.Data[:end], path, pos, knownID(key.ID), now)
	if err != nil || m == nil || m.key() != key {
		return nil, err
	}
	return m.target.Event, nil
}

// CodeInvalidStream: a stream path is not absolute, has an empty, "." or
// ".." segment or a control character, is too long, or is reserved.
const CodeInvalidStream delivery.Code = "INVALID_STREAM"

func ValidateStream(path string) error {
	bad := len(path) < 2 || path[0] != '/' || len(path) > 1024 || !utf8.ValidString(path) ||
		strings.HasPrefix(path, "/_herald/") || strings.HasPrefix(path, "/callback/") || path == "/_herald" || path == "/callback" ||
		strings.ContainsFunc(path, func(r rune) bool { return r < 0x20 || r == 0x7f })
	if !bad {
		for seg := range strings.SplitSeq(path[1:], "/") {
			if seg == "" || seg == "." || seg == ".." {
				bad = true
			}
		}
	}
	if bad {
		return delivery.Invalid(CodeInvalidStream, "stream", "%q is not a stream path: absolute, no empty, '.' or '..' segment, not under /_herald/ or /callback/", path)
	}
	return nil
}
