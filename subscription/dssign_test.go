package subscription

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDSSignatureVerifiesWithThePublishedKey(t *testing.T) {
	t.Parallel()
	k, err := NewSigningKey(bytes.NewReader(bytes.Repeat([]byte{3}, 64)), dsT0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := SigningKeyFromSeed(k.Private.Seed(), dsT0, time.Time{})
	if err != nil || again.Kid != k.Kid || !strings.HasPrefix(k.Kid, "ds_") {
		t.Fatalf("the kid from the seed = %q, want %q (%v)", again.Kid, k.Kid, err)
	}
	body := []byte(`{"subscription_id":"sub-1"}`)
	h := DSSignatureHeader(k, body, time.Unix(1778324210, 0))
	parts := strings.Split(h, ",")
	if len(parts) != 3 || parts[0] != "t=1778324210" || parts[1] != "kid="+k.Kid || !strings.HasPrefix(parts[2], "ed25519=") {
		t.Fatalf("header = %q", h)
	}
	var set JWKS
	if err := json.Unmarshal(MarshalJWKS(PublishedKeys([]SigningKey{k}, dsT0)), &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("jwks = %+v, %v", set, err)
	}
	jwk := set.Keys[0]
	if jwk.Kty != "OKP" || jwk.Crv != "Ed25519" || jwk.Alg != "EdDSA" || jwk.Use != "sig" || jwk.Kid != k.Kid {
		t.Fatalf("jwk = %+v", jwk)
	}
	pub, err := base64.RawURLEncoding.DecodeString(jwk.X)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(parts[2], "ed25519="))
	if err != nil || !ed25519.Verify(pub, []byte("1778324210."+string(body)), sig) {
		t.Fatalf("the signature does not verify with the published key (%v)", err)
	}
	if ed25519.Verify(pub, []byte("1778324210."+string(body)+" "), sig) {
		t.Fatal("the signature verifies another body")
	}
}

func TestPublishedKeysDuringRotation(t *testing.T) {
	t.Parallel()
	old, _ := NewSigningKey(bytes.NewReader(bytes.Repeat([]byte{1}, 64)), dsT0)
	cur, _ := NewSigningKey(bytes.NewReader(bytes.Repeat([]byte{2}, 64)), dsT0.Add(time.Hour))
	old.RetiredAt = cur.CreatedAt
	keys := []SigningKey{cur, old}
	if got := PublishedKeys(keys, cur.CreatedAt.Add(SigningKeyPublished-time.Second)); len(got.Keys) != 2 {
		t.Fatalf("during the overlap %d keys are published, want both", len(got.Keys))
	}
	if got := PublishedKeys(keys, cur.CreatedAt.Add(SigningKeyPublished)); len(got.Keys) != 1 || got.Keys[0].Kid != cur.Kid {
		t.Fatalf("after the overlap %+v is published, want the active key alone", got.Keys)
	}
}
