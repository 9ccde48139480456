// Package client is Herald's Go SDK.
package client

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// WakeSignatureHeader is the header that carries a wake notification's
// signature.
const WakeSignatureHeader = "Webhook-Signature"

// DefaultSignatureTolerance is how far a signature's timestamp may be from
// the receiver's clock, either way, before VerifyWakeSignature refuses it
// as a possible replay.
const DefaultSignatureTolerance = 5 * time.Minute

// Errors of VerifyWakeSignature and ParseWake.
var (
	// ErrSignatureMalformed: the header is missing or not
	// "t=<unix seconds>,sha256=<hex>".
	ErrSignatureMalformed = errors.New("client: malformed Webhook-Signature header")
	// ErrSignatureTimestamp: the signature's time is outside the tolerance.
	ErrSignatureTimestamp = errors.New("client: Webhook-Signature timestamp outside the tolerance")
	// ErrSignatureMismatch: no signature in the header matches the body.
	ErrSignatureMismatch = errors.New("client: Webhook-Signature does not match the body")
	// ErrWakeInvalid: the body is not a wake notification.
	ErrWakeInvalid = errors.New("client: invalid wake notification")
)

// maxSignatureHeader bounds the header VerifyWakeSignature parses.
const maxSignatureHeader = 4096

// VerifyWakeSignature checks the Webhook-Signature header of a wake
// notification against its raw body, as received (do not parse and
// re-encode the JSON first):
//
//  1. parse "t=<unix seconds>,sha256=<hex>";
//  2. check that t is within tolerance of now, either way (0 means
//     DefaultSignatureTolerance);
//  3. compute HMAC-SHA256(secret, "<t>.<body>") with the subscription's
//     webhook secret, "whsec_" prefix included;
//  4. compare in constant time.
//
// Several sha256 entries are allowed (any match passes), and entries with
// other names are ignored, so a server can add schemes without breaking
// receivers. Errors: ErrSignatureMalformed, ErrSignatureTimestamp,
// ErrSignatureMismatch.
func VerifyWakeSignature(secret string, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultSignatureTolerance
	}
	ts, sigs, err := parseSignatureHeader(header)
	if err != nil {
		return err
	}
	t := time.Unix(ts, 0)
	if d := now.Sub(t); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed at %s, now is %s", ErrSignatureTimestamp, t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if !anySignatureMatches([]byte(secret), sigs, []byte(strconv.FormatInt(ts, 10)), body) {
		return ErrSignatureMismatch
	}
	return nil
}

// parseSignatureHeader parses "t=<digits>,sha256=<64 hex>[,...]".
func parseSignatureHeader(header string) (ts int64, sigs [][]byte, err error) {
	if header == "" || len(header) > maxSignatureHeader {
		return 0, nil, ErrSignatureMalformed
	}
	seenT := false
	for part := range strings.SplitSeq(header, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return 0, nil, ErrSignatureMalformed
		}
		switch key {
		case "t":
			if seenT || !allDigits(val) || len(val) > 18 {
				return 0, nil, ErrSignatureMalformed
			}
			ts, err = strconv.ParseInt(val, 10, 64)
			if err != nil {
				return 0, nil, ErrSignatureMalformed
			}
			seenT = true
		case "sha256":
			sig, err := hex.DecodeString(val)
			if err != nil || len(sig) != sha256.Size {
				return 0, nil, ErrSignatureMalformed
			}
			sigs = append(sigs, sig)
		}
	}
	if !seenT || len(sigs) == 0 {
		return 0, nil, ErrSignatureMalformed
	}
	return ts, sigs, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// WakeStream is a stream of a wake notification and the consumer's last
// acknowledged offset in it: read from Offset ("-1": from the start).
type WakeStream struct {
	Path   string `json:"path"`
	Offset string `json:"offset"`
}

// Wake is a wake notification: Herald POSTs it to a subscription's webhook
// when a consumer has work.
type Wake struct {
	// ConsumerID identifies the consumer instance.
	ConsumerID string `json:"consumer_id"`
	// Epoch is the wake cycle; send it in every callback.
	Epoch int64 `json:"epoch"`
	// WakeID claims the wake in the first callback.
	WakeID string `json:"wake_id"`
	// PrimaryStream is the stream that spawned the consumer.
	PrimaryStream string `json:"primary_stream"`
	// Streams are all subscribed streams with their acked offsets.
	Streams []WakeStream `json:"streams"`
	// TriggeredBy lists the streams with new events (informational: read
	// every stream from its offset).
	TriggeredBy []string `json:"triggered_by"`
	// Callback is the URL for acks, subscription changes and done.
	Callback string `json:"callback"`
	// Token is the bearer token for the first callback.
	Token string `json:"token"`
	// Traceparent is the W3C traceparent header of the wake's POST, when
	// Herald traces. Callbacks carry it back, so Herald's spans of the
	// callbacks join the wake's trace. Consumer.ServeHTTP sets it; set it
	// from the request yourself (TraceparentOf) when you call HandleWake
	// or NewCallbackClient.
	Traceparent string `json:"-"`
}

// TraceparentHeader is the W3C Trace Context header.
const TraceparentHeader = "Traceparent"

// TraceparentOf returns the request header's traceparent when it is
// well formed (version, trace id, parent id and flags in lower-case hex),
// else "".
func TraceparentOf(h http.Header) string {
	v := h.Get(TraceparentHeader)
	if len(v) != 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return ""
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return v
}

// ParseWake reads a wake notification body. Unknown fields are ignored, so
// a receiver keeps working when the server adds some; the fields a
// consumer needs must be present: consumer_id, an epoch of at least 1,
// wake_id, primary_stream, callback, token, and a path and offset in every
// stream. Errors wrap ErrWakeInvalid. Verify the signature first.
func ParseWake(body []byte) (*Wake, error) {
	var w Wake
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWakeInvalid, err)
	}
	var missing []string
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"consumer_id", w.ConsumerID == ""},
		{"epoch", w.Epoch < 1},
		{"wake_id", w.WakeID == ""},
		{"primary_stream", w.PrimaryStream == ""},
		{"callback", w.Callback == ""},
		{"token", w.Token == ""},
	} {
		if f.bad {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: missing or invalid %s", ErrWakeInvalid, strings.Join(missing, ", "))
	}
	for _, s := range w.Streams {
		if s.Path == "" || s.Offset == "" {
			return nil, fmt.Errorf("%w: a stream lacks its path or offset", ErrWakeInvalid)
		}
	}
	return &w, nil
}
