package subscription

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func testKey(id string, b byte) Key {
	return Key{ID: id, Secret: bytes.Repeat([]byte{b}, 32)}
}

func testKeyring(t testing.TB, keys ...Key) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestTokenCarriesIncarnation: the incarnation survives issue, verify
// and renewal, and is absent from the claims of a token issued without
// one (as before incarnations existed).
func TestTokenCarriesIncarnation(t *testing.T) {
	t.Parallel()
	k := testKeyring(t, testKey("k1", 1))
	sub := TokenSubject{ConsumerID: consumerA, Incarnation: "i_0123", Epoch: 2}
	tok, err := k.Issue(sub, t0)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := k.Verify(tok, consumerA, t0)
	if err != nil || claims.Subject() != sub {
		t.Fatalf("claims %+v, %v", claims, err)
	}
	renewed, err := k.Renew(tok, claims, t0.Add(TokenTTL-time.Minute))
	if err != nil || renewed == tok {
		t.Fatalf("renewed %q, %v", renewed, err)
	}
	if claims, err := k.Verify(renewed, consumerA, t0.Add(TokenTTL)); err != nil || claims.Subject() != sub {
		t.Fatalf("renewed claims %+v, %v", claims, err)
	}
	bare, err := k.Issue(TokenSubject{ConsumerID: consumerA, Epoch: 2}, t0)
	if err != nil {
		t.Fatal(err)
	}
	body, err := base64.RawURLEncoding.DecodeString(strings.Split(bare, ".")[1])
	if err != nil || strings.Contains(string(body), `"inc"`) {
		t.Fatalf("claims of a token without incarnation: %s, %v", body, err)
	}
}

func TestTokenIssueVerify(t *testing.T) {
	t.Parallel()
	k := testKeyring(t, testKey("k1", 1))
	tok, err := k.Issue(TokenSubject{ConsumerID: consumerA, Epoch: 7}, t0)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := k.Verify(tok, consumerA, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := TokenClaims{ConsumerID: consumerA, Epoch: 7, KeyID: "k1", IssuedAt: time.Unix(t0.Unix(), 0), ExpiresAt: time.Unix(t0.Add(TokenTTL).Unix(), 0)}
	if claims != want {
		t.Errorf("claims = %+v, want %+v", claims, want)
	}
	// It is a JWT anyone can decode for debugging: HS256 with a kid.
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not header.claims.signature", tok)
	}
	h, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || string(h) != `{"alg":"HS256","kid":"k1","typ":"JWT"}` {
		t.Errorf("header %s, %v", h, err)
	}
	// Every issued token differs, even within one second.
	tok2, err := k.Issue(TokenSubject{ConsumerID: consumerA, Epoch: 7}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if tok2 == tok {
		t.Error("two tokens issued at the same time are equal")
	}
	if _, err := k.Issue(TokenSubject{ConsumerID: consumerA, Epoch: 0}, t0); err == nil {
		t.Error("a token for epoch 0 was issued")
	}
	if _, err := k.Issue(TokenSubject{ConsumerID: "", Epoch: 1}, t0); err == nil {
		t.Error("a token without a consumer was issued")
	}
}

// The claims are valid JSON that round-trips whatever the consumer id
// holds: quotes, backslashes, control characters, non-ASCII, HTML.
func TestTokenClaimsEncodeAnyConsumerID(t *testing.T) {
	t.Parallel()
	k := testKeyring(t, testKey("k1", 1))
	for _, id := range []string{consumerA, `s:a"b`, `s:a\b`, "s:\x01\n", "s:é/ü", "s:<&>", "s:\u2028", "s:\xff"} {
		tok, err := k.Issue(TokenSubject{ConsumerID: id, Epoch: 3}, t0)
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		c, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
		if err != nil {
			t.Fatal(err)
		}
		var body tokenBody
		if err := json.Unmarshal(c, &body); err != nil {
			t.Fatalf("%q: claims %s: %v", id, c, err)
		}
		want := strings.ToValidUTF8(id, "\ufffd")
		if body.Sub != want || body.Epoch != 3 || body.Iat != t0.Unix() || body.Exp != t0.Add(TokenTTL).Unix() || len(body.Jti) != 16 {
			t.Errorf("%q: claims %s", id, c)
		}
		if claims, err := k.Verify(tok, want, t0); err != nil || claims.ConsumerID != want {
			t.Errorf("%q: verify: %+v, %v", id, claims, err)
		}
	}
}

// TOKEN_EXPIRED is a token with a valid signature past its expiry; the
// claims come back so the caller can issue a new token.
func TestTokenExpired(t *testing.T) {
	t.Parallel()
	k := testKeyring(t, testKey("k1", 1))
	tok, err := k.Issue(TokenSubject{ConsumerID: consumerA, Epoch: 7}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Verify(tok, consumerA, t0.Add(TokenTTL-time.Second)); err != nil {
		t.Errorf("a token a second before expiry: %v", err)
	}
	claims, err := k.Verify(tok, consumerA, t0.Add(TokenTTL))
	if !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("a token at expiry: %v", err)
	}
	if claims.ConsumerID != consumerA || claims.Epoch != 7 {
		t.Errorf("expired claims = %+v", claims)
	}
	renewed, err := k.Renew(tok, claims, t0.Add(TokenTTL))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := k.Verify(renewed, consumerA, t0.Add(TokenTTL+time.Minute))
	if err != nil || c2.Epoch != 7 {
		t.Errorf("renewed token: %+v, %v", c2, err)
	}
	// An expired token of another consumer is invalid, not expired: it
	// must not earn a token for this consumer.
	if _, err := k.Verify(tok, ConsumerID(subID, pB), t0.Add(2*TokenTTL)); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("expired token of another consumer: %v", err)
	}
}

func TestTokenInvalid(t *testing.T) {
	t.Parallel()
	k := testKeyring(t, testKey("k1", 1))
	tok, err := k.Issue(TokenSubject{ConsumerID: consumerA, Epoch: 7}, t0)
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	parts := strings.Split(tok, ".")
	enc := base64.RawURLEncoding.EncodeToString
	sig := func(signed string, secret []byte) string { return enc(sign(secret, signed)) }
	forge := func(header, claims string, secret []byte) string {
		signed := enc([]byte(header)) + "." + enc([]byte(claims))
		return signed + "." + sig(signed, secret)
	}
	good := testKey("k1", 1).Secret
	claims := `{"sub":"` + consumerA + `","epoch":7,"iat":1,"exp":99999999999,"jti":"x"}`
	flipped := []byte(tok)
	flipped[len(flipped)-2] ^= 1
	for name, bad := range map[string]string{
		"empty":                  "",
		"garbage":                "not a token",
		"two parts":              parts[0] + "." + parts[1],
		"four parts":             tok + ".x",
		"bad signature":          string(flipped),
		"padded signature":       tok + "=",
		"claims swapped":         parts[0] + "." + enc([]byte(strings.Replace(claims, `"epoch":7`, `"epoch":8`, 1))) + "." + parts[2],
		"other consumer":         mustIssue(t, k, ConsumerID(subID, pB), 7),
		"unknown key":            mustIssue(t, testKeyring(t, testKey("k2", 1)), consumerA, 7),
		"same kid other secret":  mustIssue(t, testKeyring(t, testKey("k1", 2)), consumerA, 7),
		"alg none":               forge(`{"alg":"none","kid":"k1","typ":"JWT"}`, claims, good),
		"alg HS512":              forge(`{"alg":"HS512","kid":"k1","typ":"JWT"}`, claims, good),
		"header extra field":     forge(`{"alg":"HS256","kid":"k1","typ":"JWT","jku":"x"}`, claims, good),
		"claims not JSON":        forge(`{"alg":"HS256","kid":"k1","typ":"JWT"}`, `nope`, good),
		"claims epoch 0":         forge(`{"alg":"HS256","kid":"k1","typ":"JWT"}`, strings.Replace(claims, `"epoch":7`, `"epoch":0`, 1), good),
		"claims without subject": forge(`{"alg":"HS256","kid":"k1","typ":"JWT"}`, strings.Replace(claims, consumerA, "", 1), good),
		"claims exp before iat":  forge(`{"alg":"HS256","kid":"k1","typ":"JWT"}`, `{"sub":"`+consumerA+`","epoch":7,"iat":5,"exp":4,"jti":"x"}`, good),
		"too long":               tok + strings.Repeat("A", maxTokenLength),
	} {
		if _, err := k.Verify(bad, consumerA, now); !errors.Is(err, ErrTokenInvalid) {
			t.Errorf("%s: error = %v, want TOKEN_INVALID", name, err)
		}
	}
	// The forge helper itself makes valid tokens, so the cases above fail
	// for the reason they name.
	if _, err := k.Verify(forge(`{"alg":"HS256","kid":"k1","typ":"JWT"}`, claims, good), consumerA, now); err != nil {
		t.Errorf("a well-formed forged token with the right key: %v", err)
	}
}

func mustIssue(t *testing.T, k *Keyring, consumerID string, epoch int64) string {
	t.Helper()
	tok, err := k.Issue(TokenSubject{ConsumerID: consumerID, Epoch: epoch}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Rotation: tokens signed by an older key still verify; new tokens use
// the new key; Renew moves a consumer to the new key.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	old := testKeyring(t, testKey("k1", 1))
	tok := mustIssue(t, old, consumerA, 3)
	rotated := testKeyring(t, testKey("k2", 2), testKey("k1", 1))
	claims, err := rotated.Verify(tok, consumerA, t0.Add(time.Minute))
	if err != nil {
		t.Fatalf("a token of the previous key after rotation: %v", err)
	}
	if rotated.ActiveKeyID() != "k2" {
		t.Errorf("active key %s", rotated.ActiveKeyID())
	}
	renewed, err := rotated.Renew(tok, claims, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := rotated.Verify(renewed, consumerA, t0.Add(time.Minute))
	if err != nil || c2.KeyID != "k2" {
		t.Errorf("renewed after rotation: %+v %v", c2, err)
	}
	// Once the old key is dropped, its tokens are invalid.
	dropped := testKeyring(t, testKey("k2", 2))
	if _, err := dropped.Verify(tok, consumerA, t0.Add(time.Minute)); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("a token of a dropped key: %v", err)
	}
}

// S5: every response carries a token: the same one while it is fresh, a
// new one when it nears expiry.
func TestInvariantS5TokenPresent(t *testing.T) {
	t.Parallel()
	k := testKeyring(t, testKey("k1", 1))
	tok := mustIssue(t, k, consumerA, 3)
	for _, tt := range []struct {
		after time.Duration
		same  bool
	}{
		{0, true},
		{TokenTTL - TokenRefreshWindow - time.Second, true},
		{TokenTTL - TokenRefreshWindow, false},
		{TokenTTL - time.Minute, false},
	} {
		now := t0.Add(tt.after)
		claims, err := k.Verify(tok, consumerA, now)
		if err != nil {
			t.Fatal(err)
		}
		next, err := k.Renew(tok, claims, now)
		if err != nil {
			t.Fatal(err)
		}
		if next == "" || (next == tok) != tt.same {
			t.Errorf("after %v: renewed token equal to the old one = %v, want %v", tt.after, next == tok, tt.same)
		}
		if _, err := k.Verify(next, consumerA, now); err != nil {
			t.Errorf("after %v: the renewed token does not verify: %v", tt.after, err)
		}
	}
}

func TestNewKeyringErrors(t *testing.T) {
	t.Parallel()
	for name, keys := range map[string][]Key{
		"none":          nil,
		"short secret":  {{ID: "k1", Secret: make([]byte, 31)}},
		"empty id":      {{ID: "", Secret: make([]byte, 32)}},
		"bad id":        {{ID: "k.1", Secret: make([]byte, 32)}},
		"duplicate ids": {testKey("k1", 1), testKey("k1", 2)},
	} {
		if _, err := NewKeyring(keys, nil); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
	k, err := NewKeyring([]Key{testKey("k1", 1)}, failingReader{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Issue(TokenSubject{ConsumerID: consumerA, Epoch: 1}, t0); err == nil {
		t.Error("Issue without entropy succeeded")
	}
}

func FuzzVerifyToken(f *testing.F) {
	k := testKeyring(f, testKey("k1", 1), testKey("k0", 3))
	old := testKeyring(f, testKey("k0", 3))
	for _, tok := range []string{
		mustIssueF(f, k, consumerA, 1),
		mustIssueF(f, old, consumerA, 9),
		"e30.e30.",
		"a.b.c",
		"...",
	} {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		claims, err := k.Verify(tok, consumerA, t0.Add(time.Minute))
		switch {
		case err == nil:
			if claims.ConsumerID != consumerA || claims.Epoch < 1 || !claims.ExpiresAt.After(t0.Add(time.Minute)) {
				t.Fatalf("accepted claims %+v", claims)
			}
			// Only tokens signed with a key of the ring verify: the
			// signature must be one the ring computes.
			i := strings.LastIndexByte(tok, '.')
			hJSON, err := base64.RawURLEncoding.DecodeString(tok[:strings.IndexByte(tok, '.')])
			var h tokenHeader
			if err != nil || json.Unmarshal(hJSON, &h) != nil {
				t.Fatalf("accepted token with undecodable header %q", tok)
			}
			if enc := base64.RawURLEncoding.EncodeToString(sign(k.keys[h.Kid], tok[:i])); enc != tok[i+1:] {
				t.Fatalf("accepted token %q with a signature the ring did not make", tok)
			}
		case errors.Is(err, ErrTokenExpired):
			if claims.ConsumerID != consumerA {
				t.Fatalf("expired claims for another consumer: %+v", claims)
			}
		case errors.Is(err, ErrTokenInvalid):
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}

func mustIssueF(f *testing.F, k *Keyring, consumerID string, epoch int64) string {
	tok, err := k.Issue(TokenSubject{ConsumerID: consumerID, Epoch: epoch}, t0)
	if err != nil {
		f.Fatal(err)
	}
	return tok
}
