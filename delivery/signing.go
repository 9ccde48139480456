package delivery

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Standard Webhooks (https://www.standardwebhooks.com/) header names.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// HeaderVerification carries the challenge of the verification POST (a
// profile may name another header).
const HeaderVerification = "Herald-Verification"

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// Secret sizes: Herald generates 32 random bytes; Standard Webhooks allows
// keys of 24 to 64 bytes.
const (
	secretBytes    = 32
	minSecretBytes = 24
	maxSecretBytes = 64
)

// DefaultRotationOverlap is how long the previous secret keeps signing
// after a rotation, so receivers can switch at their pace.
const DefaultRotationOverlap = 24 * time.Hour

// GenerateSecret returns a new signing secret: "whsec_" followed by the
// standard base64 of 32 bytes read from random (crypto/rand.Reader in
// production).
func GenerateSecret(random io.Reader) (string, error) {
	key := make([]byte, secretBytes)
	if _, err := io.ReadFull(random, key); err != nil {
		return "", fmt.Errorf("delivery: generating a secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ValidateSecret checks a secret an owner gives: ParseSecret's rules, in
// canonical form only. The base64 decoder skips line breaks, so without
// this a secret with CR or LF would be stored and shown back as given.
func ValidateSecret(secret string) error {
	key, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	if SecretPrefix+base64.StdEncoding.EncodeToString(key) != secret {
		return Invalid(CodeInvalidSecret, "secret", "the part after whsec_ must be standard base64 without spaces, line breaks or other characters")
	}
	return nil
}

// ParseSecret returns the HMAC key of a secret: "whsec_" then the standard
// base64 (padded) of 24 to 64 bytes. Errors are *ValidationError with
// CodeInvalidSecret.
func ParseSecret(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, Invalid(CodeInvalidSecret, "secret", "a secret starts with %q", SecretPrefix)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil {
		return nil, &ValidationError{Code: CodeInvalidSecret, Field: "secret", Message: "the part after whsec_ must be standard base64", Err: err}
	}
	if len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return nil, Invalid(CodeInvalidSecret, "secret", "the key is %d bytes; it must be %d to %d", len(key), minSecretBytes, maxSecretBytes)
	}
	return key, nil
}

// SecretSet is an endpoint's signing secrets. During a rotation the
// previous secret signs too, until PreviousUntil.
type SecretSet struct {
	Current       string
	Previous      string
	PreviousUntil time.Time
}

// Rotate makes next the current secret; the old current one keeps signing
// for overlap (0 or less means DefaultRotationOverlap). A second rotation
// inside the overlap drops the oldest secret.
func (s SecretSet) Rotate(next string, now time.Time, overlap time.Duration) SecretSet {
	if overlap <= 0 {
		overlap = DefaultRotationOverlap
	}
	return SecretSet{Current: next, Previous: s.Current, PreviousUntil: now.Add(overlap)}
}

// Signing returns the secrets that sign at now: the current one, then the
// previous one while its overlap lasts.
func (s SecretSet) Signing(now time.Time) []string {
	if s.Previous != "" && now.Before(s.PreviousUntil) {
		return []string{s.Current, s.Previous}
	}
	return []string{s.Current}
}

// SignParams are the inputs of Sign.
type SignParams struct {
	// MessageID is the webhook-id: the event id, stable across retries.
	MessageID string
	// Timestamp is the time of this attempt (whole seconds are signed).
	Timestamp time.Time
	Body      []byte
	// Secrets sign in order; each gives one v1 signature (see
	// SecretSet.Signing).
	Secrets []string
}

// SignedHeaders are the Standard Webhooks header values of one attempt.
type SignedHeaders struct {
	ID        string
	Timestamp string
	// Signature is one "v1,<base64>" per secret, space-separated.
	Signature string
}

// Apply sets the headers on h.
func (s *SignedHeaders) Apply(h http.Header) {
	h.Set(HeaderWebhookID, s.ID)
	h.Set(HeaderWebhookTimestamp, s.Timestamp)
	h.Set(HeaderWebhookSignature, s.Signature)
}

// Sign computes the Standard Webhooks signature of one attempt: for each
// secret, v1 = base64(HMAC-SHA256(key, id + "." + unix seconds + "." +
// body)) (the StandardWebhooks profile). Errors: an invalid message id
// (see ValidateEventID), no secret, or an invalid secret
// (*ValidationError).
func Sign(p *SignParams) (*SignedHeaders, error) {
	h, err := StandardWebhooks.Sign(&ProfileSignParams{ID: p.MessageID, Timestamp: p.Timestamp, Body: p.Body, Secrets: p.Secrets})
	if err != nil {
		return nil, err
	}
	return &SignedHeaders{ID: h.Get(HeaderWebhookID), Timestamp: h.Get(HeaderWebhookTimestamp), Signature: h.Get(HeaderWebhookSignature)}, nil
}
