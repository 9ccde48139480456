package subscription

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxSubscriptionIDLength bounds a subscription id.
const MaxSubscriptionIDLength = 128

// ValidateSubscriptionID checks a client-provided subscription id: 1 to
// MaxSubscriptionIDLength characters from [A-Za-z0-9._~-]. The set is the
// URL-unreserved characters, so an id needs no escaping in a query string
// or in a consumer id, and it excludes ':' so that the first ':' of a
// consumer id always ends the subscription id.
func ValidateSubscriptionID(id string) error {
	if id == "" || len(id) > MaxSubscriptionIDLength {
		return fmt.Errorf("%w: %q must be 1 to %d characters", ErrInvalidSubscriptionID, id, MaxSubscriptionIDLength)
	}
	for i := 0; i < len(id); i++ {
		if !unreserved(id[i]) {
			return fmt.Errorf("%w: %q may only hold letters, digits, '-', '.', '_' and '~'", ErrInvalidSubscriptionID, id)
		}
	}
	return nil
}

// ValidateStreamPath checks that path can name a stream: it starts with '/',
// is valid UTF-8 and holds no control byte. It does not check that the
// stream exists (docs/subscriptions.md: subscribing to a stream that does
// not exist yet is allowed).
func ValidateStreamPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("%w: %q must start with '/'", ErrInvalidStreamPath, path)
	}
	if !utf8.ValidString(path) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidStreamPath, path)
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: %q contains a control byte", ErrInvalidStreamPath, path)
		}
	}
	return nil
}

// unreserved reports whether c is an RFC 3986 unreserved character.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// ConsumerID returns "{subscription_id}:{url_encoded_stream_path}"
// (docs/subscriptions.md, Consumers). Every byte of the path outside the RFC
// 3986 unreserved set is percent-encoded with upper-case hex, so '/' becomes
// %2F and the id is one URL path segment:
//
//	ConsumerID("my-sub", "/agents/task-123") == "my-sub:%2Fagents%2Ftask-123"
func ConsumerID(subscriptionID, streamPath string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(subscriptionID) + 1 + 3*len(streamPath))
	b.WriteString(subscriptionID)
	b.WriteByte(':')
	for i := 0; i < len(streamPath); i++ {
		c := streamPath[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return b.String()
}

// ParseConsumerID is the inverse of ConsumerID. It takes the raw,
// still percent-encoded segment of a callback URL (decoding %2F
// first would break the lookup). It accepts lower-case hex and needlessly
// encoded unreserved characters; ConsumerID(sub, path) gives the canonical
// id to look up. Errors wrap ErrInvalidConsumerID.
func ParseConsumerID(id string) (subscriptionID, streamPath string, err error) {
	sub, enc, ok := strings.Cut(id, ":")
	if !ok {
		return "", "", fmt.Errorf("%w: %q has no ':'", ErrInvalidConsumerID, id)
	}
	if ValidateSubscriptionID(sub) != nil {
		return "", "", fmt.Errorf("%w: %q has an invalid subscription id", ErrInvalidConsumerID, id)
	}
	var b strings.Builder
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		switch {
		case c == '%':
			if i+2 >= len(enc) {
				return "", "", fmt.Errorf("%w: %q has a truncated escape", ErrInvalidConsumerID, id)
			}
			v, err := hex.DecodeString(enc[i+1 : i+3])
			if err != nil {
				return "", "", fmt.Errorf("%w: %q has a malformed escape", ErrInvalidConsumerID, id)
			}
			b.WriteByte(v[0])
			i += 2
		case unreserved(c):
			b.WriteByte(c)
		default:
			return "", "", fmt.Errorf("%w: %q has an unencoded %q", ErrInvalidConsumerID, id, c)
		}
	}
	path := b.String()
	if ValidateStreamPath(path) != nil {
		return "", "", fmt.Errorf("%w: %q does not encode a stream path", ErrInvalidConsumerID, id)
	}
	return sub, path, nil
}

// NewWakeID returns an unguessable wake id: "w_" and 128 random bits in
// hex. r is crypto/rand.Reader in production.
func NewWakeID(r io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("subscription: generating a wake id: %w", err)
	}
	return "w_" + hex.EncodeToString(b[:]), nil
}

// NewIncarnation returns an unguessable consumer incarnation id: "i_" and
// 128 random bits in hex. r is crypto/rand.Reader in production.
func NewIncarnation(r io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("subscription: generating an incarnation id: %w", err)
	}
	return "i_" + hex.EncodeToString(b[:]), nil
}

// WebhookSecretPrefix starts every webhook secret.
const WebhookSecretPrefix = "whsec_"

// NewWebhookSecret returns a webhook secret: "whsec_" and 32 random bytes
// in unpadded base64url. The whole string, prefix included, is the HMAC
// key of the Webhook-Signature header. r is crypto/rand.Reader in
// production.
func NewWebhookSecret(r io.Reader) (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("subscription: generating a webhook secret: %w", err)
	}
	return WebhookSecretPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}
