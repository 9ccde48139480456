package subscription

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// SigningKey is one Ed25519 key that signs reserved-API webhooks. Its Kid
// is derived from the public key (the JWK thumbprint), so it is stable
// for the key's life and unique in the key set.
type SigningKey struct {
	Kid     string
	Private ed25519.PrivateKey
	// CreatedAt is when the key was made; RetiredAt when another key
	// replaced it (zero for the active key). A retired key stays
	// published while a webhook it signed may still be checked.
	CreatedAt time.Time
	RetiredAt time.Time
}

// SigningKeyPublished is how long a retired signing key stays in the JWKS:
// well beyond the five minutes a receiver accepts a signature's timestamp,
// plus the time a wake signed just before the rotation may take to arrive.
const SigningKeyPublished = time.Hour

// NewSigningKey makes a signing key from r (crypto/rand.Reader in
// production).
func NewSigningKey(r io.Reader, now time.Time) (SigningKey, error) {
	_, priv, err := ed25519.GenerateKey(r)
	if err != nil {
		return SigningKey{}, fmt.Errorf("subscription: generating a signing key: %w", err)
	}
	return SigningKey{Kid: KidOf(priv.Public().(ed25519.PublicKey)), Private: priv, CreatedAt: now}, nil
}

// SigningKeyFromSeed rebuilds a stored key from its 32-byte seed.
func SigningKeyFromSeed(seed []byte, createdAt, retiredAt time.Time) (SigningKey, error) {
	if len(seed) != ed25519.SeedSize {
		return SigningKey{}, fmt.Errorf("subscription: a signing key seed is %d bytes, not %d", ed25519.SeedSize, len(seed))
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return SigningKey{Kid: KidOf(priv.Public().(ed25519.PublicKey)), Private: priv, CreatedAt: createdAt, RetiredAt: retiredAt}, nil
}

// KidOf is the key id of a public key: "ds_" and the RFC 7638 JWK
// thumbprint (SHA-256 of {"crv","kty","x"}), unpadded base64url.
func KidOf(pub ed25519.PublicKey) string {
	x := base64.RawURLEncoding.EncodeToString(pub)
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	return "ds_" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// JWK is one public key of the JWKS.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	X   string `json:"x"`
}

// JWKS is the webhook signing key set served at {root}/__ds/jwks.json.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// PublishedKeys is the key set to publish at now: the active key and
// every key retired less than SigningKeyPublished ago.
func PublishedKeys(keys []SigningKey, now time.Time) JWKS {
	out := JWKS{Keys: []JWK{}}
	for _, k := range keys {
		if !k.RetiredAt.IsZero() && now.Sub(k.RetiredAt) >= SigningKeyPublished {
			continue
		}
		out.Keys = append(out.Keys, JWK{
			Kty: "OKP", Crv: "Ed25519", Kid: k.Kid, Use: "sig", Alg: "EdDSA",
			X: base64.RawURLEncoding.EncodeToString(k.Private.Public().(ed25519.PublicKey)),
		})
	}
	return out
}

// MarshalJWKS encodes a key set.
func MarshalJWKS(set JWKS) []byte {
	b, err := json.Marshal(set)
	if err != nil {
		panic("subscription: encoding a key set: " + err.Error()) // strings only
	}
	return b
}

// DSSignatureHeader is the Webhook-Signature of a reserved-API webhook:
// "t=<unix seconds>,kid=<kid>,ed25519=<unpadded base64url signature of
// "<t>.<body>">".
func DSSignatureHeader(k SigningKey, body []byte, now time.Time) string {
	t := strconv.FormatInt(now.Unix(), 10)
	msg := make([]byte, 0, len(t)+1+len(body))
	msg = append(append(append(msg, t...), '.'), body...)
	sig := ed25519.Sign(k.Private, msg)
	return "t=" + t + ",kid=" + k.Kid + ",ed25519=" + base64.RawURLEncoding.EncodeToString(sig)
}
