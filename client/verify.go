package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrSecretInvalid: the secret given to VerifyStandardWebhook is not
// "whsec_" (optional) followed by standard base64.
var ErrSecretInvalid = errors.New("client: invalid Standard Webhooks secret")

// maxStandardSignatureHeader bounds the webhook-signature header that
// VerifyStandardWebhook parses; a rotation puts two signatures of about 50
// bytes each in it.
const maxStandardSignatureHeader = 8 << 10

// VerifyStandardWebhook checks an event delivery signed the Standard
// Webhooks way (https://www.standardwebhooks.com/), as Herald's event
// delivery signs, against the raw body as received (do not parse and
// re-encode the JSON first):
//
//  1. read the webhook-id, webhook-timestamp and webhook-signature headers;
//  2. check that the timestamp (unix seconds) is within
//     DefaultSignatureTolerance of now, either way;
//  3. compute HMAC-SHA256(key, "<webhook-id>.<timestamp>.<body>"), where key
//     is the base64-decoded secret after its "whsec_" prefix;
//  4. compare it in constant time with every "v1,<base64>" entry of the
//     space-separated webhook-signature header; any match passes. Entries
//     of other versions are ignored. During a secret rotation Herald sends
//     one signature per secret, so a receiver holding either verifies.
//
// Errors: ErrSecretInvalid, ErrSignatureMalformed (a header is missing or
// malformed, or no v1 signature is present), ErrSignatureTimestamp,
// ErrSignatureMismatch. Deduplicate deliveries on webhook-id: it is stable
// across retries.
func VerifyStandardWebhook(secret string, headers http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return ErrSecretInvalid
	}
	id := headers.Get("webhook-id")
	tsHeader := headers.Get("webhook-timestamp")
	sigHeader := headers.Get("webhook-signature")
	switch {
	case id == "":
		return fmt.Errorf("%w: webhook-id is missing", ErrSignatureMalformed)
	case tsHeader == "":
		return fmt.Errorf("%w: webhook-timestamp is missing", ErrSignatureMalformed)
	case sigHeader == "":
		return fmt.Errorf("%w: webhook-signature is missing", ErrSignatureMalformed)
	case len(sigHeader) > maxStandardSignatureHeader:
		return fmt.Errorf("%w: webhook-signature is over %d bytes", ErrSignatureMalformed, maxStandardSignatureHeader)
	}
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil || strconv.FormatInt(ts, 10) != tsHeader {
		return fmt.Errorf("%w: webhook-timestamp %q is not unix seconds", ErrSignatureMalformed, tsHeader)
	}
	// Compare in seconds: time.Unix of an extreme value would overflow a
	// Duration.
	if d := now.Unix() - ts; d > int64(DefaultSignatureTolerance/time.Second) || d < -int64(DefaultSignatureTolerance/time.Second) {
		return fmt.Errorf("%w: signed at unix %d, now is %d", ErrSignatureTimestamp, ts, now.Unix())
	}
	sigs := standardSignatures(sigHeader)
	if len(sigs) == 0 {
		return fmt.Errorf("%w: no v1 signature in webhook-signature", ErrSignatureMalformed)
	}
	if !anySignatureMatches(key, sigs, []byte(id), []byte(tsHeader), body) {
		return ErrSignatureMismatch
	}
	return nil
}

// anySignatureMatches reports whether one of sigs is the HMAC-SHA256 with
// key of the parts joined by '.', compared in constant time. Both
// signature schemes Herald uses sign "<...>.<...>.<body>" this way.
func anySignatureMatches(key []byte, sigs [][]byte, parts ...[]byte) bool {
	mac := hmac.New(sha256.New, key)
	for i, p := range parts {
		if i > 0 {
			mac.Write([]byte{'.'})
		}
		mac.Write(p)
	}
	want := mac.Sum(nil)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return true
		}
	}
	return false
}

// standardSignatures returns the decoded v1 signatures of a
// webhook-signature header ("v1,<base64> v1,<base64> ...", separated by
// spaces), skipping empty entries, other versions and entries that do not
// decode to a SHA-256 MAC.
func standardSignatures(header string) [][]byte {
	var out [][]byte
	for entry := range strings.SplitSeq(header, " ") {
		version, enc, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		// Strict: only the canonical encoding of a MAC counts.
		sig, err := base64.StdEncoding.Strict().DecodeString(enc)
		if err != nil || len(sig) != sha256.Size {
			continue
		}
		out = append(out, sig)
	}
	return out
}
