package delivery

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func mustSecret(t *testing.T) string {
	t.Helper()
	s, err := GenerateSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// officialVerify checks Herald's headers with the Standard Webhooks
// reference library, an implementation independent of Herald's.
func officialVerify(t *testing.T, secret string, h *SignedHeaders, body []byte, checkTime bool) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("reference library refused secret %q: %v", secret, err)
	}
	hdr := http.Header{}
	h.Apply(hdr)
	if checkTime {
		return wh.Verify(body, hdr)
	}
	return wh.VerifyIgnoringTimestamp(body, hdr)
}

func TestSignVerifiesWithReferenceLibrary(t *testing.T) {
	t.Parallel()
	secret := mustSecret(t)
	body := []byte(`{"id":"evt_1","type":"scenario.activated","timestamp":"2026-01-02T03:04:05Z","data":{"n":1}}`)
	// The reference Verify checks the timestamp against the real clock, so
	// this case signs at the real time.
	h, err := Sign(&SignParams{MessageID: "evt_1", Timestamp: time.Now(), Body: body, Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	if err := officialVerify(t, secret, h, body, true); err != nil {
		t.Fatalf("reference library rejects Herald's signature: %v", err)
	}
	if !strings.HasPrefix(h.Signature, "v1,") || strings.Contains(h.Signature, " ") {
		t.Fatalf("signature header = %q, want one v1 signature", h.Signature)
	}

	// Tampering with anything signed breaks verification.
	if err := officialVerify(t, secret, h, append(bytes.Clone(body), ' '), true); err == nil {
		t.Fatal("reference library accepts a modified body")
	}
	other := *h
	other.ID = "evt_2"
	if err := officialVerify(t, secret, &other, body, true); err == nil {
		t.Fatal("reference library accepts a modified webhook-id")
	}
	if err := officialVerify(t, mustSecret(t), h, body, true); err == nil {
		t.Fatal("reference library accepts the signature under another secret")
	}
}

func TestSignIsDeterministicForPinnedTime(t *testing.T) {
	t.Parallel()
	// A fixed vector: the same inputs sign the same way across runs and
	// replicas (no randomness, time injected).
	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	p := &SignParams{MessageID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Timestamp: time.Unix(1614265330, 0), Body: []byte(`{"test": 2432232314}`), Secrets: []string{secret}}
	h, err := Sign(p)
	if err != nil {
		t.Fatal(err)
	}
	// The Standard Webhooks specification's published example.
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; h.Signature != want {
		t.Fatalf("signature = %q, want %q", h.Signature, want)
	}
	if h.Timestamp != "1614265330" || h.ID != p.MessageID {
		t.Fatalf("headers = %+v", h)
	}
	if err := officialVerify(t, secret, h, p.Body, false); err != nil {
		t.Fatalf("reference library: %v", err)
	}
}

func TestSignDuringRotationSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret := mustSecret(t), mustSecret(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	set := SecretSet{Current: oldSecret}.Rotate(newSecret, now, 0)
	if set.PreviousUntil != now.Add(DefaultRotationOverlap) {
		t.Fatalf("overlap ends %v, want %v", set.PreviousUntil, now.Add(DefaultRotationOverlap))
	}
	body := []byte(`{"type":"a.b"}`)

	during := set.Signing(now.Add(23 * time.Hour))
	if len(during) != 2 || during[0] != newSecret || during[1] != oldSecret {
		t.Fatalf("signing secrets during overlap = %d, want new then old", len(during))
	}
	h, err := Sign(&SignParams{MessageID: "evt_9", Timestamp: now, Body: body, Secrets: during})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(h.Signature)); n != 2 {
		t.Fatalf("signature header has %d signatures, want 2: %q", n, h.Signature)
	}
	// A receiver on either secret accepts the delivery.
	for _, s := range []string{oldSecret, newSecret} {
		if err := officialVerify(t, s, h, body, false); err != nil {
			t.Fatalf("receiver with one of the secrets rejects: %v", err)
		}
	}

	after := set.Signing(now.Add(DefaultRotationOverlap))
	if len(after) != 1 || after[0] != newSecret {
		t.Fatal("previous secret still signs after the overlap")
	}
	h, err = Sign(&SignParams{MessageID: "evt_9", Timestamp: now, Body: body, Secrets: after})
	if err != nil {
		t.Fatal(err)
	}
	if err := officialVerify(t, oldSecret, h, body, false); err == nil {
		t.Fatal("old secret still verifies after the overlap")
	}

	// Rotating again inside the overlap drops the oldest secret.
	third := mustSecret(t)
	again := set.Rotate(third, now.Add(time.Hour), time.Hour)
	if got := again.Signing(now.Add(90 * time.Minute)); len(got) != 2 || got[0] != third || got[1] != newSecret {
		t.Fatal("second rotation should sign with the third and second secrets")
	}
}

func TestGenerateAndParseSecret(t *testing.T) {
	t.Parallel()
	s := mustSecret(t)
	key, err := ParseSecret(s)
	if err != nil {
		t.Fatalf("ParseSecret(generated) = %v", err)
	}
	if len(key) != 32 || !strings.HasPrefix(s, SecretPrefix) {
		t.Fatalf("generated %q: %d-byte key", s, len(key))
	}
	if s2 := mustSecret(t); s2 == s {
		t.Fatal("two generated secrets are equal")
	}
	if _, err := GenerateSecret(bytes.NewReader(make([]byte, 8))); err == nil {
		t.Fatal("GenerateSecret with a short random source succeeded")
	}

	for _, bad := range []string{
		"", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not base64!!",
		"whsec_" + "c2hvcnQ=",                 // 5 bytes
		"whsec_" + strings.Repeat("QUFB", 30), // 90 bytes
	} {
		_, err := ParseSecret(bad)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Code != CodeInvalidSecret {
			t.Errorf("ParseSecret(%q) = %v, want CodeInvalidSecret", bad, err)
		}
	}
}

func TestSignRefusesBadInput(t *testing.T) {
	t.Parallel()
	secret := mustSecret(t)
	cases := []*SignParams{
		{MessageID: "", Timestamp: time.Unix(1, 0), Secrets: []string{secret}},
		{MessageID: "has space", Timestamp: time.Unix(1, 0), Secrets: []string{secret}},
		{MessageID: "evt", Timestamp: time.Unix(1, 0)},
		{MessageID: "evt", Timestamp: time.Unix(1, 0), Secrets: []string{"whsec_bad"}},
	}
	for i, p := range cases {
		if _, err := Sign(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: Sign = %v, want ErrInvalid", i, err)
		}
	}
}

func TestSignedHeadersApplyReplaces(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("Webhook-Signature", "v1,forged")
	(&SignedHeaders{ID: "a", Timestamp: "1", Signature: "v1,x"}).Apply(h)
	if got := h.Values(HeaderWebhookSignature); len(got) != 1 || got[0] != "v1,x" {
		t.Fatalf("signature header = %v", got)
	}
}

func FuzzParseSecret(f *testing.F) {
	for _, s := range []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_YQ==", "whsec_YQ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := ParseSecret(s)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Code != CodeInvalidSecret {
				t.Fatalf("error %v is not CodeInvalidSecret", err)
			}
			return
		}
		if len(key) < minSecretBytes || len(key) > maxSecretBytes {
			t.Fatalf("accepted a %d-byte key", len(key))
		}
		// Strict decoding: the secret is the one canonical encoding of its
		// key, so two spellings never name the same key.
		if SecretPrefix+base64.StdEncoding.EncodeToString(key) != s {
			t.Fatalf("accepted non-canonical secret %q", s)
		}
		h, err := Sign(&SignParams{MessageID: "m", Timestamp: time.Unix(1, 0), Body: []byte("b"), Secrets: []string{s}})
		if err != nil {
			t.Fatalf("Sign with an accepted secret: %v", err)
		}
		if err := officialVerify(t, s, h, []byte("b"), false); err != nil {
			t.Fatalf("reference library: %v", err)
		}
	})
}

// An owner's secret is taken only in canonical form: the base64 decoder
// would skip line breaks, which must never be stored or shown back.
func TestValidateSecret(t *testing.T) {
	t.Parallel()
	good, err := GenerateSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateSecret(good); err != nil {
		t.Fatalf("a generated secret: %v", err)
	}
	for _, bad := range []string{good + "\n", good[:10] + "\r\n" + good[10:], good[:10] + "\r" + good[10:], " " + good, "whsec_", good[:len(good)-1]} {
		var ve *ValidationError
		if err := ValidateSecret(bad); !errors.As(err, &ve) || ve.Code != CodeInvalidSecret {
			t.Errorf("ValidateSecret(%q) = %v, want %s", bad, err, CodeInvalidSecret)
		}
	}
}
