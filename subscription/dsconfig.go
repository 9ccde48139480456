package subscription

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldstreams/herald/glob"
)

// The reserved subscription API (docs/subscriptions.md, The reserved
// subscription API) is the Durable Streams protocol's own subscription
// model: one cursor per subscription over the streams a glob pattern and
// an explicit list link to it, delivered by a signed webhook or by
// pull-wake, fenced by a subscription-wide generation. This file holds
// its configuration rules; dsmachine.go its state machine.

// Delivery types of a reserved-API subscription.
const (
	DSTypeWebhook  = "webhook"
	DSTypePullWake = "pull-wake"
)

// Lease bounds of a reserved-API subscription (lease_ttl_ms).
const (
	DSMinLease     = time.Second
	DSMaxLease     = 10 * time.Minute
	DSDefaultLease = 30 * time.Second
)

// DSMaxStreams bounds the explicit streams of one request and the links
// of one subscription, so one subscription cannot grow its row and every
// wake without limit.
const DSMaxStreams = MaxConsumerStreams

// Errors of the reserved subscription API's configuration and requests.
var (
	// ErrDSInvalid: a create, membership, claim, ack or release body
	// that breaks the protocol's rules (the message says which).
	ErrDSInvalid = fmt.Errorf("%w: reserved subscription API", ErrInvalidRequest)
	// ErrWebhookURLRejected: a webhook URL the protocol's SSRF rules or
	// Herald's refuse.
	ErrWebhookURLRejected = errors.New("subscription: webhook URL rejected")
)

// Root is the stream root: the URL path under which streams live, "/"
// or a path without a trailing slash such as "/v1/stream". Paths in the
// reserved API's bodies are relative to it; the store keeps absolute
// stream paths.
type Root string

// NormalizeRoot returns the canonical form of a --stream-root value:
// "/" or "/a/b" (no trailing slash, no empty, "." or ".." segment, no
// "__ds" segment).
func NormalizeRoot(s string) (Root, error) {
	if s == "" || s == "/" {
		return "/", nil
	}
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("stream root %q must start with '/'", s)
	}
	s = strings.TrimSuffix(s, "/")
	for seg := range strings.SplitSeq(s[1:], "/") {
		if seg == "" || seg == "." || seg == ".." || seg == "__ds" || strings.ContainsAny(seg, "*?%") {
			return "", fmt.Errorf("stream root %q has an invalid segment %q", s, seg)
		}
	}
	return Root(s), nil
}

// Prefix is the root with a trailing slash: every stream path under the
// root starts with it.
func (r Root) Prefix() string {
	if r == "/" || r == "" {
		return "/"
	}
	return string(r) + "/"
}

// Abs is the absolute stream path of a root-relative path.
func (r Root) Abs(rel string) string { return r.Prefix() + rel }

// Rel is the root-relative path of an absolute stream path, and false
// when the path is not under the root.
func (r Root) Rel(abs string) (string, bool) {
	return strings.CutPrefix(abs, r.Prefix())
}

// Reserved is the URL path prefix of the reserved API: {root}/__ds/.
func (r Root) Reserved() string { return r.Prefix() + "__ds/" }

// DSConfig is a reserved-API subscription's normalized configuration:
// what a create asks for, with the pattern in canonical form and the
// explicit streams sorted and without repeats. Paths are root-relative,
// as on the wire.
type DSConfig struct {
	Type        string   `json:"type"`
	Pattern     string   `json:"pattern,omitempty"`
	Streams     []string `json:"streams,omitempty"`
	WebhookURL  string   `json:"webhook_url,omitempty"`
	WakeStream  string   `json:"wake_stream,omitempty"`
	LeaseTTLMs  int64    `json:"lease_ttl_ms"`
	Description string   `json:"description,omitempty"`
}

// Lease is the configuration's lease duration.
func (c *DSConfig) Lease() time.Duration { return time.Duration(c.LeaseTTLMs) * time.Millisecond }

// Hash is the hash of the normalized configuration that decides a
// re-confirmation (200) from a conflict (409): SHA-256 of its canonical
// JSON, in hex.
func (c *DSConfig) Hash() string {
	b, err := json.Marshal(c)
	if err != nil {
		// A DSConfig holds strings and numbers only.
		panic("subscription: encoding a configuration: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// dsCreateBody is the body of PUT {root}/__ds/subscriptions/:id.
type dsCreateBody struct {
	Type    string          `json:"type"`
	Pattern *string         `json:"pattern"`
	Streams []string        `json:"streams"`
	Webhook *dsWebhookField `json:"webhook"`
	// WakeStream is a pointer so that a JSON null reads as absent (the
	// GET answer carries "wake_stream": null for a webhook).
	WakeStream  *string `json:"wake_stream"`
	LeaseTTLMs  *int64  `json:"lease_ttl_ms"`
	Description string  `json:"description"`
}

type dsWebhookField struct {
	URL string `json:"url"`
}

// ParseDSConfig reads and normalizes a create body. Errors wrap
// ErrDSInvalid; the webhook URL's safety is the caller's to check
// (CheckDSWebhookURL and Herald's sender).
func ParseDSConfig(body []byte) (DSConfig, error) {
	var b dsCreateBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return DSConfig{}, fmt.Errorf("%w: the body must be one JSON object of the protocol's fields: %s", ErrDSInvalid, err)
	}
	if dec.More() {
		return DSConfig{}, fmt.Errorf("%w: the body must be one JSON object", ErrDSInvalid)
	}
	c := DSConfig{Type: b.Type, Description: b.Description, LeaseTTLMs: DSDefaultLease.Milliseconds()}
	switch b.Type {
	case DSTypeWebhook:
		if b.Webhook == nil || b.Webhook.URL == "" {
			return DSConfig{}, fmt.Errorf("%w: a webhook subscription needs webhook.url", ErrDSInvalid)
		}
		if b.WakeStream != nil {
			return DSConfig{}, fmt.Errorf("%w: wake_stream is for pull-wake subscriptions", ErrDSInvalid)
		}
		c.WebhookURL = b.Webhook.URL
	case DSTypePullWake:
		if b.WakeStream == nil || *b.WakeStream == "" {
			return DSConfig{}, fmt.Errorf("%w: a pull-wake subscription needs wake_stream", ErrDSInvalid)
		}
		if b.Webhook != nil {
			return DSConfig{}, fmt.Errorf("%w: webhook is for webhook subscriptions", ErrDSInvalid)
		}
		w, err := CleanDSPath(*b.WakeStream)
		if err != nil {
			return DSConfig{}, err
		}
		c.WakeStream = w
	default:
		return DSConfig{}, fmt.Errorf("%w: type must be %q or %q", ErrDSInvalid, DSTypeWebhook, DSTypePullWake)
	}
	if b.Pattern != nil && *b.Pattern != "" {
		p, err := glob.Compile("/" + *b.Pattern)
		if err != nil {
			return DSConfig{}, fmt.Errorf("%w: pattern: %s", ErrDSInvalid, err)
		}
		c.Pattern = strings.TrimPrefix(p.String(), "/")
	}
	streams, err := CleanDSPaths(b.Streams)
	if err != nil {
		return DSConfig{}, err
	}
	c.Streams = streams
	if c.WakeStream != "" && slices.Contains(c.Streams, c.WakeStream) {
		// Its own wake events would be pending work: a wake per wake.
		return DSConfig{}, fmt.Errorf("%w: the wake stream cannot be one of the subscription's streams", ErrDSInvalid)
	}
	if c.Pattern == "" && len(c.Streams) == 0 {
		return DSConfig{}, fmt.Errorf("%w: give a pattern, streams, or both", ErrDSInvalid)
	}
	if b.LeaseTTLMs != nil {
		if d := time.Duration(*b.LeaseTTLMs) * time.Millisecond; d < DSMinLease || d > DSMaxLease {
			return DSConfig{}, fmt.Errorf("%w: lease_ttl_ms must be from %d to %d", ErrDSInvalid, DSMinLease.Milliseconds(), DSMaxLease.Milliseconds())
		}
		c.LeaseTTLMs = *b.LeaseTTLMs
	}
	return c, nil
}

// CleanDSPaths checks root-relative stream paths and returns them sorted,
// without repeats. Errors wrap ErrDSInvalid.
func CleanDSPaths(paths []string) ([]string, error) {
	if len(paths) > DSMaxStreams {
		return nil, fmt.Errorf("%w: at most %d streams", ErrDSInvalid, DSMaxStreams)
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		c, err := CleanDSPath(p)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// CleanDSPath checks one root-relative stream path: not empty, no
// leading slash, no empty, "." or ".." segment, no control byte, and not
// under the reserved "__ds" segment. Errors wrap ErrDSInvalid.
func CleanDSPath(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w: stream path %q must be relative to the stream root (no leading '/')", ErrDSInvalid, p)
	}
	if err := ValidateStreamPath("/" + p); err != nil {
		return "", fmt.Errorf("%w: %s", ErrDSInvalid, err)
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("%w: stream path %q has an empty, '.' or '..' segment", ErrDSInvalid, p)
		}
	}
	if p == "__ds" || strings.HasPrefix(p, "__ds/") {
		return "", fmt.Errorf("%w: stream path %q is under the reserved __ds segment", ErrDSInvalid, p)
	}
	return p, nil
}

// CheckDSWebhookURL applies the protocol's webhook URL rules: https, or
// http to localhost or 127.0.0.x (the development exception). Herald's
// sender then applies its own address rules (webhook.Sender.ValidateURL)
// to whatever passes, so an http:// URL to loopback is called only where
// --webhook-allow-cidrs allows loopback. Errors wrap
// ErrWebhookURLRejected.
func CheckDSWebhookURL(raw string) error {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return fmt.Errorf("%w: %q is not an absolute URL", ErrWebhookURLRejected, raw)
	}
	switch strings.ToLower(scheme) {
	case "https":
		return nil
	case "http":
		host := rest
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			host = host[:i]
		}
		if i := strings.LastIndexByte(host, '@'); i >= 0 {
			return fmt.Errorf("%w: a webhook URL may not carry credentials", ErrWebhookURLRejected)
		}
		if h, _, found := strings.Cut(host, ":"); found {
			host = h
		}
		if strings.EqualFold(host, "localhost") || isLoopback127x(host) {
			return nil
		}
		return fmt.Errorf("%w: a webhook URL must use https:// (http:// only to localhost or 127.0.0.x)", ErrWebhookURLRejected)
	}
	return fmt.Errorf("%w: a webhook URL must use https://", ErrWebhookURLRejected)
}

// isLoopback127x reports whether host is 127.0.0.x for a decimal x of
// 0 to 255.
func isLoopback127x(host string) bool {
	last, ok := strings.CutPrefix(host, "127.0.0.")
	if !ok || last == "" || len(last) > 3 {
		return false
	}
	n := 0
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
		n = n*10 + int(last[i]-'0')
	}
	return n <= 255
}
