package subscription

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Wire types of the reserved subscription API (docs/subscriptions.md, The
// reserved subscription API). Paths on the wire are root-relative.

// DSLinkView is a linked stream in a subscription's GET answer.
type DSLinkView struct {
	Path        string `json:"path"`
	LinkType    string `json:"link_type"`
	AckedOffset string `json:"acked_offset"`
}

// DSWakeStreamView is a linked stream in a wake or a claim: its cursor,
// its tail and whether it has pending work.
type DSWakeStreamView struct {
	Path        string `json:"path"`
	LinkType    string `json:"link_type"`
	AckedOffset string `json:"acked_offset"`
	TailOffset  string `json:"tail_offset"`
	HasPending  bool   `json:"has_pending"`
}

// DSSigningView is a webhook subscription's signing metadata.
type DSSigningView struct {
	Alg     string `json:"alg"`
	Kid     string `json:"kid"`
	JWKSURL string `json:"jwks_url"`
}

// DSWebhookView is a webhook subscription's delivery configuration; it
// never holds a secret.
type DSWebhookView struct {
	URL     string         `json:"url"`
	Signing *DSSigningView `json:"signing,omitempty"`
}

// DSSubscriptionView is a subscription as PUT and GET answer it.
type DSSubscriptionView struct {
	ID             string         `json:"id"`
	SubscriptionID string         `json:"subscription_id"`
	Type           string         `json:"type"`
	Pattern        *string        `json:"pattern"`
	Streams        []DSLinkView   `json:"streams"`
	Webhook        *DSWebhookView `json:"webhook"`
	WakeStream     *string        `json:"wake_stream"`
	LeaseTTLMs     int64          `json:"lease_ttl_ms"`
	CreatedAt      string         `json:"created_at"`
	Status         string         `json:"status"`
	Description    string         `json:"description"`
	// Generation is the current wake generation, for operators; not in
	// the protocol's table, which allows more fields.
	Generation int64 `json:"generation"`
}

// FormatDSTime is the protocol's timestamp format (RFC 3339 in UTC with
// milliseconds).
func FormatDSTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// DSWebhookBody is the body of a webhook wake.
type DSWebhookBody struct {
	SubscriptionID string             `json:"subscription_id"`
	WakeID         string             `json:"wake_id"`
	Generation     int64              `json:"generation"`
	Streams        []DSWakeStreamView `json:"streams"`
	CallbackURL    string             `json:"callback_url"`
	CallbackToken  string             `json:"callback_token"`
}

// DSWakeEvent is the event a pull-wake subscription writes to its wake
// stream.
type DSWakeEvent struct {
	Type           string `json:"type"`
	SubscriptionID string `json:"subscription_id"`
	Stream         string `json:"stream"`
	Generation     int64  `json:"generation"`
	WakeID         string `json:"wake_id"`
	TS             int64  `json:"ts"`
}

// DSClaimResponse is the answer of a successful claim.
type DSClaimResponse struct {
	WakeID     string             `json:"wake_id"`
	Generation int64              `json:"generation"`
	Token      string             `json:"token"`
	Streams    []DSWakeStreamView `json:"streams"`
	LeaseTTLMs int64              `json:"lease_ttl_ms"`
}

// DSAckResponse is the answer of a callback or an ack.
type DSAckResponse struct {
	OK       bool `json:"ok"`
	NextWake bool `json:"next_wake"`
}

// DSAckRequest is the body of a webhook callback or a pull-wake ack;
// Acks name root-relative streams.
type DSAckRequest struct {
	WakeID     string `json:"wake_id"`
	Generation int64  `json:"generation"`
	Acks       []struct {
		Stream string `json:"stream"`
		Offset string `json:"offset"`
	} `json:"acks"`
	Done bool `json:"done"`
}

// DSClaimRequest is the body of a claim.
type DSClaimRequest struct {
	Worker string `json:"worker"`
}

// DSStreamsRequest is the body of an explicit membership add.
type DSStreamsRequest struct {
	Streams []string `json:"streams"`
}

// MaxWorkerName bounds a claim's worker name.
const MaxWorkerName = 256

// ParseDSBody decodes one JSON object of a reserved-API request into v,
// refusing unknown fields. Errors wrap ErrDSInvalid.
func ParseDSBody(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s", ErrDSInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: the body must be one JSON object", ErrDSInvalid)
	}
	return nil
}

// ParseDSClaim reads a claim body: a worker name of 1 to MaxWorkerName
// bytes.
func ParseDSClaim(body []byte) (DSClaimRequest, error) {
	var r DSClaimRequest
	if err := ParseDSBody(body, &r); err != nil {
		return r, err
	}
	if r.Worker == "" || len(r.Worker) > MaxWorkerName {
		return r, fmt.Errorf("%w: worker must be 1 to %d bytes", ErrDSInvalid, MaxWorkerName)
	}
	return r, nil
}

// ParseDSAck reads a callback, ack or release body (a release carries no
// acks and no done).
func ParseDSAck(body []byte, release bool) (DSAckRequest, error) {
	var r DSAckRequest
	if err := ParseDSBody(body, &r); err != nil {
		return r, err
	}
	if r.WakeID == "" || r.Generation < 1 {
		return r, fmt.Errorf("%w: wake_id and generation are required", ErrDSInvalid)
	}
	if release && (len(r.Acks) > 0 || r.Done) {
		return r, fmt.Errorf("%w: a release carries only wake_id and generation", ErrDSInvalid)
	}
	if len(r.Acks) > DSMaxStreams {
		return r, fmt.Errorf("%w: at most %d acks", ErrDSInvalid, DSMaxStreams)
	}
	return r, nil
}
