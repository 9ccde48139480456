package client

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrDSSignature: a reserved-API webhook whose Webhook-Signature does not
// verify: malformed, outside the replay window, of a kid the JWKS does
// not hold, or not a signature of the body with that key.
var ErrDSSignature = errors.New("client: webhook signature invalid")

// DSReplayWindow is how far a reserved-API webhook's timestamp may be
// from the receiver's clock: the protocol's five minutes.
const DSReplayWindow = 5 * time.Minute

// DSVerifier verifies the Ed25519 signatures of reserved-API webhooks
// (docs/reserved-subscriptions.md) with the keys of a JWKS. It caches the
// key set and fetches it again when a signature names a kid it does not
// hold (a rotation), at most once per MinRefresh. Safe for concurrent
// use.
type DSVerifier struct {
	// JWKSURL is the subscription's webhook.signing.jwks_url.
	JWKSURL string
	// HTTPClient fetches the key set; http.DefaultClient when nil.
	HTTPClient *http.Client
	// MinRefresh bounds how often an unknown kid fetches the set again
	// (default 10 s), so forged kids cannot make the receiver hammer the
	// server.
	MinRefresh time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	fetched time.Time
}

// Verify checks header (Webhook-Signature) over the raw body. It errs
// with ErrDSSignature, or with the error of fetching the key set.
func (v *DSVerifier) Verify(ctx context.Context, header string, body []byte) error {
	ts, kid, sig, err := parseDSSignature(header)
	if err != nil {
		return err
	}
	now := v.now()
	if d := now.Sub(time.Unix(ts, 0)); d > DSReplayWindow || d < -DSReplayWindow {
		return fmt.Errorf("%w: timestamp %d is outside the replay window", ErrDSSignature, ts)
	}
	key, err := v.key(ctx, kid, now)
	if err != nil {
		return err
	}
	msg := append([]byte(strconv.FormatInt(ts, 10)+"."), body...)
	if !ed25519.Verify(key, msg, sig) {
		return fmt.Errorf("%w: the signature does not match the body", ErrDSSignature)
	}
	return nil
}

func (v *DSVerifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// key returns the public key of kid, fetching the set when it is not
// cached and the last fetch is MinRefresh old.
func (v *DSVerifier) key(ctx context.Context, kid string, now time.Time) (ed25519.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	refresh := v.MinRefresh
	if refresh <= 0 {
		refresh = 10 * time.Second
	}
	if v.keys != nil && now.Sub(v.fetched) < refresh {
		return nil, fmt.Errorf("%w: unknown kid %q", ErrDSSignature, kid)
	}
	keys, err := v.fetch(ctx)
	if err != nil {
		return nil, err
	}
	v.keys, v.fetched = keys, now
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w: unknown kid %q", ErrDSSignature, kid)
}

// fetch reads the key set: its OKP Ed25519 signing keys by kid. The SDK
// uses only the standard library (docs/sdk.md), so a receiver importing
// it pulls in nothing else; reading a JWKS for Ed25519 keys alone is one
// GET and a filter, and the cache and its refresh bound are key's. The
// server, which verifies every kind of platform JWT, uses jwkset.
func (v *DSVerifier) fetch(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	hc := v.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: fetching the webhook signing keys: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("client: fetching the webhook signing keys: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("client: fetching the webhook signing keys: %s", resp.Status)
	}
	var set struct {
		Keys []struct{ Kty, Crv, Kid, X string } `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("client: the webhook signing keys are not a JWKS: %w", err)
	}
	keys := make(map[string]ed25519.PublicKey, len(set.Keys))
	for _, k := range set.Keys {
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if k.Kty != "OKP" || k.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			continue // not an Ed25519 public key: never one that signs wakes
		}
		keys[k.Kid] = ed25519.PublicKey(x)
	}
	return keys, nil
}

// parseDSSignature reads "t=<unix>,kid=<kid>,ed25519=<base64url>".
func parseDSSignature(header string) (ts int64, kid string, sig []byte, err error) {
	bad := func(why string) (int64, string, []byte, error) {
		return 0, "", nil, fmt.Errorf("%w: %s", ErrDSSignature, why)
	}
	var t, s string
	for part := range strings.SplitSeq(header, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch name {
		case "t":
			t = value
		case "kid":
			kid = value
		case "ed25519":
			s = value
		}
	}
	if t == "" || kid == "" || s == "" || !allDigits(t) {
		return bad("want t=<unix seconds>,kid=<key id>,ed25519=<signature>")
	}
	if ts, err = strconv.ParseInt(t, 10, 64); err != nil {
		return bad("malformed timestamp")
	}
	if sig, err = base64.RawURLEncoding.DecodeString(s); err != nil || len(sig) != ed25519.SignatureSize {
		return bad("malformed signature")
	}
	return ts, kid, sig, nil
}
