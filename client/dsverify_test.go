package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// jwksServer serves a JWKS of the keys it is given and counts fetches.
type jwksServer struct {
	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	fetches atomic.Int64
}

func (j *jwksServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	j.fetches.Add(1)
	j.mu.Lock()
	defer j.mu.Unlock()
	var b bytes.Buffer
	b.WriteString(`{"keys":[`)
	first := true
	for kid, k := range j.keys {
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(`{"kty":"OKP","crv":"Ed25519","use":"sig","alg":"EdDSA","kid":"` + kid + `","x":"` + base64.RawURLEncoding.EncodeToString(k) + `"}`)
	}
	b.WriteString(`,{"kty":"RSA","kid":"rsa","n":"x","e":"AQAB"}]}`)
	w.Header().Set("Content-Type", "application/jwk-set+json")
	_, _ = w.Write(b.Bytes())
}

func (j *jwksServer) add(kid string, k ed25519.PublicKey) {
	j.mu.Lock()
	j.keys[kid] = k
	j.mu.Unlock()
}

func dsSign(priv ed25519.PrivateKey, kid string, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	sig := ed25519.Sign(priv, append([]byte(ts+"."), body...))
	return "t=" + ts + ",kid=" + kid + ",ed25519=" + base64.RawURLEncoding.EncodeToString(sig)
}

func TestDSVerifier(t *testing.T) {
	t.Parallel()
	pub1, priv1, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{1}, 64)))
	pub2, priv2, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{2}, 64)))
	js := &jwksServer{keys: map[string]ed25519.PublicKey{"ds_one": pub1}}
	srv := httptest.NewServer(js)
	defer srv.Close()
	now := time.Unix(1778324210, 0)
	clock := now
	v := &DSVerifier{JWKSURL: srv.URL, MinRefresh: time.Minute, Now: func() time.Time { return clock }}
	ctx := context.Background()
	body := []byte(`{"subscription_id":"sub-1"}`)

	if err := v.Verify(ctx, dsSign(priv1, "ds_one", body, now), body); err != nil {
		t.Fatalf("a good signature: %v", err)
	}
	if err := v.Verify(ctx, dsSign(priv1, "ds_one", body, now), append(body, ' ')); !errors.Is(err, ErrDSSignature) {
		t.Fatalf("another body: %v", err)
	}
	if err := v.Verify(ctx, dsSign(priv1, "ds_one", body, now.Add(-6*time.Minute)), body); !errors.Is(err, ErrDSSignature) {
		t.Fatalf("an old timestamp: %v", err)
	}
	if err := v.Verify(ctx, "t=1,sha256=abc", body); !errors.Is(err, ErrDSSignature) {
		t.Fatalf("another scheme: %v", err)
	}
	if n := js.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want the set cached after the first", n)
	}
	// A rotation: the new kid fetches the set again, once (MinRefresh
	// after the last fetch).
	js.add("ds_two", pub2)
	if err := v.Verify(ctx, dsSign(priv2, "ds_two", body, now), body); !errors.Is(err, ErrDSSignature) || js.fetches.Load() != 1 {
		t.Fatalf("a new kid within MinRefresh: %v after %d fetches", err, js.fetches.Load())
	}
	clock = now.Add(time.Minute)
	if err := v.Verify(ctx, dsSign(priv2, "ds_two", body, clock), body); err != nil || js.fetches.Load() != 2 {
		t.Fatalf("a rotated key: %v after %d fetches", err, js.fetches.Load())
	}
	// An unknown kid within MinRefresh of the last fetch fetches nothing.
	if err := v.Verify(ctx, dsSign(priv2, "ds_forged", body, clock), body); !errors.Is(err, ErrDSSignature) || js.fetches.Load() != 2 {
		t.Fatalf("a forged kid: %v after %d fetches", err, js.fetches.Load())
	}
	clock = now.Add(2 * time.Minute)
	// The old key is still cached.
	if err := v.Verify(ctx, dsSign(priv1, "ds_one", body, clock), body); err != nil {
		t.Fatalf("the old key after the rotation: %v", err)
	}
	if err := v.Verify(ctx, dsSign(priv2, "ds_forged", body, clock), body); !errors.Is(err, ErrDSSignature) || js.fetches.Load() != 3 {
		t.Fatalf("a forged kid after MinRefresh: %v after %d fetches", err, js.fetches.Load())
	}
}
