// Package webhook is Herald's one outbound HTTP sender, shared by the
// subscription engine (wake-ups) and the delivery engine (events). It knows
// nothing of what is delivered; it makes sending safe:
//
//   - Destinations are checked when they are configured (Sender.ValidateURL)
//     and again at dial time, against the address actually dialed, so a DNS
//     answer that changes in between (rebinding) cannot reach a refused
//     address. Refused by default: RFC 1918, loopback, link-local, carrier
//     grade NAT, IPv6 unique local, unspecified, multicast, reserved and
//     documentation ranges, cloud metadata addresses, and IPv4-mapped, NAT64
//     and 6to4 IPv6 forms of them. Config.AllowCIDRs re-allows ranges.
//   - https:// only; http:// only to addresses in Config.AllowCIDRs.
//   - No redirects are followed: a 3xx is returned as the response, and the
//     delivery engine counts it as a failed attempt.
//   - Every request times out (30 s by default) and reads at most a capped
//     preview of the response body (4 KiB by default).
//   - Concurrency is bounded globally and per destination host.
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/internal/telemetry"
)

// Defaults of Config.
const (
	DefaultTimeout         = 30 * time.Second
	DefaultMaxResponseBody = 4 << 10
	DefaultMaxConcurrent   = 128
	DefaultMaxPerHost      = 16
	DefaultUserAgent       = "Herald-Webhooks/1"
)

// Config configures a Sender. Zero and negative values take the defaults.
type Config struct {
	// AllowCIDRs are ranges allowed although they would be refused, and the
	// only ranges http:// may reach (the --webhook-allow-cidrs flag; see
	// ParseCIDRList). Invalid prefixes are ignored.
	AllowCIDRs []netip.Prefix
	// Timeout bounds one request from dial to the end of the body preview.
	// Default 30 s.
	Timeout time.Duration
	// MaxResponseBody is the size of the response body preview. Default
	// 4 KiB.
	MaxResponseBody int
	// MaxConcurrent bounds requests in flight across all hosts. Default 128.
	MaxConcurrent int
	// MaxPerHost bounds requests in flight to one host name. Default 16.
	MaxPerHost int
	// Resolver resolves host names. Default net.DefaultResolver.
	Resolver Resolver
	// TLSConfig is cloned for https (for example to trust a private CA).
	// Default: system roots. TLS 1.2 is the minimum either way.
	TLSConfig *tls.Config
	// UserAgent is sent when a request sets none. Default
	// "Herald-Webhooks/1".
	UserAgent string
	// TracerProvider traces each POST as a client span and sends its
	// traceparent, so the receiver continues the trace; nil: tracing off.
	TracerProvider trace.TracerProvider
}

// Request is one POST to send.
type Request struct {
	URL string
	// Header is sent as is; Content-Type defaults to application/json and
	// User-Agent to Config.UserAgent.
	Header http.Header
	Body   []byte
	// Timeout overrides Config.Timeout for this request when positive and
	// shorter.
	Timeout time.Duration
}

// Response is what came back. A non-2xx status (a redirect included) is a
// Response, not an error.
type Response struct {
	StatusCode int
	// Header is the response header (Retry-After lives here).
	Header http.Header
	// Body is the first Config.MaxResponseBody bytes of the body.
	Body []byte
	// Truncated is true when the body was longer than Body.
	Truncated bool
	// BodyErr is the error that cut the body preview short, if any. The
	// status is valid regardless.
	BodyErr error
	// Latency runs from sending the request to the end of the body preview.
	Latency time.Duration
}

// OK reports a 2xx status.
func (r *Response) OK() bool { return r.StatusCode >= 200 && r.StatusCode <= 299 }

// Sender sends webhook POSTs. It is safe for concurrent use.
type Sender struct {
	policy   Policy
	resolver Resolver
	timeout  time.Duration
	maxBody  int
	agent    string
	limit    *limiter
	tracer   trace.Tracer
	// Two clients: the dialer of each knows which scheme it serves, so the
	// http:// one only ever dials allow-list addresses.
	https, plain *http.Client
}

// New returns a Sender.
func New(cfg Config) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBody <= 0 {
		cfg.MaxResponseBody = DefaultMaxResponseBody
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.MaxPerHost <= 0 {
		cfg.MaxPerHost = DefaultMaxPerHost
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	var allow []netip.Prefix
	for _, p := range cfg.AllowCIDRs {
		if p.IsValid() {
			allow = append(allow, p.Masked())
		}
	}
	policy := Policy{AllowCIDRs: allow}
	s := &Sender{
		policy:   policy,
		resolver: cfg.Resolver,
		timeout:  cfg.Timeout,
		maxBody:  cfg.MaxResponseBody,
		agent:    cfg.UserAgent,
		limit:    newLimiter(cfg.MaxConcurrent, cfg.MaxPerHost),
		tracer:   telemetry.Tracer(cfg.TracerProvider),
	}
	s.https = newClient(newGuardedDialer(policy, cfg.Resolver, false, cfg.Timeout), cfg)
	s.plain = newClient(newGuardedDialer(policy, cfg.Resolver, true, cfg.Timeout), cfg)
	return s
}

func newClient(d *guardedDialer, cfg Config) *http.Client {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLSConfig != nil {
		tlsConf = cfg.TLSConfig.Clone()
		if tlsConf.MinVersion < tls.VersionTLS12 {
			tlsConf.MinVersion = tls.VersionTLS12
		}
	}
	t := &http.Transport{
		// Never a proxy from the environment: it would dial on our behalf
		// and bypass the address checks.
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        tlsConf,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           cfg.MaxConcurrent,
		MaxIdleConnsPerHost:    cfg.MaxPerHost,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: t,
		// A redirect is returned as the response: following it would send
		// the signed body somewhere the endpoint's owner did not register.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Policy returns the sender's address policy, for checks that need no DNS.
func (s *Sender) Policy() Policy { return s.policy }

// ValidateURL checks a destination when it is configured: the URL checks of
// Policy.CheckURL, then the host name is resolved and at least one address
// must be allowed (for http://, inside the allow list); refused addresses are
// never dialed. It returns nil or a
// *RefusedError (errors.Is ErrURLRefused), or ctx's error.
//
// Passing is not a promise: the address is checked again at every dial.
func (s *Sender) ValidateURL(ctx context.Context, raw string) error {
	u, err := s.policy.CheckURL(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	addrs, err := resolve(ctx, s.resolver, host)
	if err != nil {
		return err
	}
	_, err = allowedAddrs(s.policy, host, addrs, u.Scheme == "http")
	return err
}

// Send POSTs req and returns the response with a capped body preview. It
// waits for a concurrency slot first (bounded by ctx, not by the request
// timeout). Errors: a *RefusedError when the URL or the dialed address is
// refused, ctx's error, or the transport's error (connection, TLS, timeout)
// wrapped.
func (s *Sender) Send(ctx context.Context, req *Request) (*Response, error) {
	u, err := s.policy.CheckURL(req.URL)
	if err != nil {
		return nil, err
	}
	// The span names the host only: a webhook URL's path and query may
	// hold a credential.
	ctx, span := s.tracer.Start(ctx, http.MethodPost, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", http.MethodPost),
			attribute.String("server.address", u.Hostname()), attribute.String("url.scheme", u.Scheme)))
	defer span.End()
	resp, err := s.send(ctx, u, req)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if !resp.OK() {
		span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
	}
	return resp, nil
}

// send is Send once the URL passed the policy, inside its span.
func (s *Sender) send(ctx context.Context, u *url.URL, req *Request) (*Response, error) {
	release, err := s.limit.acquire(ctx, hostKey(u.Hostname()))
	if err != nil {
		return nil, fmt.Errorf("webhook: waiting for a send slot: %w", err)
	}
	defer release()

	timeout := s.timeout
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return nil, fmt.Errorf("webhook: building request: %w", err)
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v) // canonicalises k, so the defaults below see it
		}
	}
	if hreq.Header.Get("Content-Type") == "" {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if hreq.Header.Get("User-Agent") == "" {
		hreq.Header.Set("User-Agent", s.agent)
	}
	telemetry.Inject(ctx, hreq.Header)

	client := s.https
	if u.Scheme == "http" {
		client = s.plain
	}
	start := time.Now()
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, withoutURL(err, u)
	}
	body, truncated, bodyErr := readPreview(resp.Body, s.maxBody)
	latency := time.Since(start)
	// Closing a body that was not read to the end drops the connection
	// rather than reading on: an endless body costs nothing.
	if err := resp.Body.Close(); err != nil && bodyErr == nil && !truncated {
		bodyErr = err
	}
	return &Response{
		StatusCode: resp.StatusCode,
		Header:     resp.Header,
		Body:       body,
		Truncated:  truncated,
		BodyErr:    bodyErr,
		Latency:    latency,
	}, nil
}

// Close closes idle connections. Sends in flight are not interrupted (cancel
// their contexts for that); the Sender stays usable.
func (s *Sender) Close() {
	s.https.CloseIdleConnections()
	s.plain.CloseIdleConnections()
}

// readPreview reads at most max bytes of r, and one more to learn whether
// there was more.
func readPreview(r io.Reader, max int) ([]byte, bool, error) {
	buf, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if len(buf) > max {
		return buf[:max], true, nil
	}
	return buf, false, err
}

// hostKey names a destination host for the per-host bound.
func hostKey(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// withoutURL is a failed request's error naming the destination by its
// scheme and host only: net/http's error quotes the whole URL, whose path
// and query may hold a credential, and the error is stored with the
// attempt and logged.
func withoutURL(err error, u *url.URL) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("webhook: %s %s://%s: %w", ue.Op, u.Scheme, u.Host, ue.Err)
	}
	return fmt.Errorf("webhook: %w", err)
}
