package client

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// referenceSigned signs with the Standard Webhooks reference library, an
// implementation independent of Herald's, and returns the headers.
func referenceSigned(t testing.TB, secret, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("reference library refused the secret: %v", err)
	}
	sig, err := wh.Sign(id, ts, body)
	if err != nil {
		t.Fatalf("reference Sign: %v", err)
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", sig)
	return h
}

func newStandardSecret(t testing.TB) string {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

func TestVerifyStandardWebhookAcceptsReferenceSignature(t *testing.T) {
	t.Parallel()
	secret := newStandardSecret(t)
	ts := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	body := []byte(`{"id":"evt_1","type":"a.b","timestamp":"2026-05-01T10:00:00Z","data":{"x":1}}`)
	h := referenceSigned(t, secret, "evt_1", ts, body)

	if err := VerifyStandardWebhook(secret, h, body, ts); err != nil {
		t.Fatalf("verify: %v", err)
	}
	// The secret without its prefix works too.
	if err := VerifyStandardWebhook(strings.TrimPrefix(secret, "whsec_"), h, body, ts); err != nil {
		t.Fatalf("verify with a bare secret: %v", err)
	}
	// The specification's published example.
	spec := referenceSigned(t, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if spec.Get("webhook-signature") != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("reference library signed the spec example as %q", spec.Get("webhook-signature"))
	}
	if err := VerifyStandardWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", spec, []byte(`{"test": 2432232314}`), time.Unix(1614265330+60, 0)); err != nil {
		t.Fatalf("spec example: %v", err)
	}
}

func TestVerifyStandardWebhookAcceptsAnyOfSeveralSignatures(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret := newStandardSecret(t), newStandardSecret(t)
	ts := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"rotated"}`)
	a := referenceSigned(t, newSecret, "evt_2", ts, body).Get("webhook-signature")
	b := referenceSigned(t, oldSecret, "evt_2", ts, body).Get("webhook-signature")
	h := referenceSigned(t, newSecret, "evt_2", ts, body)
	// Unknown versions and junk are skipped, not fatal.
	h.Set("webhook-signature", "v2,Zm9v v1,!!notbase64 "+a+"  "+b+" v1a,"+strings.TrimPrefix(a, "v1,"))
	for _, s := range []string{oldSecret, newSecret} {
		if err := VerifyStandardWebhook(s, h, body, ts); err != nil {
			t.Fatalf("a receiver holding one of the secrets: %v", err)
		}
	}
	if err := VerifyStandardWebhook(newStandardSecret(t), h, body, ts); !errors.Is(err, ErrSignatureMismatch) {
		t.Fatalf("a third secret = %v, want ErrSignatureMismatch", err)
	}
}

func TestVerifyStandardWebhookRefuses(t *testing.T) {
	t.Parallel()
	secret := newStandardSecret(t)
	ts := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"a"}`)
	good := func() http.Header { return referenceSigned(t, secret, "evt_3", ts, body) }
	with := func(k, v string) http.Header { h := good(); h.Set(k, v); return h }
	without := func(k string) http.Header { h := good(); h.Del(k); return h }

	cases := []struct {
		name    string
		secret  string
		headers http.Header
		body    []byte
		now     time.Time
		want    error
	}{
		{"tampered body", secret, good(), []byte(`{"type":"b"}`), ts, ErrSignatureMismatch},
		{"other id", secret, with("webhook-id", "evt_4"), body, ts, ErrSignatureMismatch},
		{"other timestamp", secret, with("webhook-timestamp", strconv.FormatInt(ts.Unix()+1, 10)), body, ts, ErrSignatureMismatch},
		{"wrong secret", newStandardSecret(t), good(), body, ts, ErrSignatureMismatch},
		{"too old", secret, good(), body, ts.Add(DefaultSignatureTolerance + time.Second), ErrSignatureTimestamp},
		{"too new", secret, good(), body, ts.Add(-DefaultSignatureTolerance - time.Second), ErrSignatureTimestamp},
		{"no id", secret, without("webhook-id"), body, ts, ErrSignatureMalformed},
		{"no timestamp", secret, without("webhook-timestamp"), body, ts, ErrSignatureMalformed},
		{"no signature", secret, without("webhook-signature"), body, ts, ErrSignatureMalformed},
		{"timestamp not a number", secret, with("webhook-timestamp", "soon"), body, ts, ErrSignatureMalformed},
		{"timestamp with a plus", secret, with("webhook-timestamp", "+"+strconv.FormatInt(ts.Unix(), 10)), body, ts, ErrSignatureMalformed},
		{"huge timestamp", secret, with("webhook-timestamp", "9223372036854775807"), body, ts, ErrSignatureTimestamp},
		{"only other versions", secret, with("webhook-signature", "v2,abc"), body, ts, ErrSignatureMalformed},
		{"oversized header", secret, with("webhook-signature", strings.Repeat("v1,x ", 2000)), body, ts, ErrSignatureMalformed},
		{"bad secret", "whsec_***", good(), body, ts, ErrSecretInvalid},
		{"empty secret", "whsec_", good(), body, ts, ErrSecretInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyStandardWebhook(tc.secret, tc.headers, tc.body, tc.now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("VerifyStandardWebhook = %v, want %v", err, tc.want)
			}
		})
	}

	// The tolerance is inclusive: exactly five minutes either way passes.
	for _, now := range []time.Time{ts.Add(DefaultSignatureTolerance), ts.Add(-DefaultSignatureTolerance)} {
		if err := VerifyStandardWebhook(secret, good(), body, now); err != nil {
			t.Fatalf("at the tolerance edge (%v): %v", now.Sub(ts), err)
		}
	}
}

func FuzzVerifyStandardWebhook(f *testing.F) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	f.Add("msg_1", "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", []byte(`{"test": 2432232314}`))
	f.Add("msg_1", "1614265330", "v1,a v1,b v2,c", []byte(`{}`))
	f.Add("", "", "", []byte(nil))
	f.Add("id", "-1", "v1,", []byte("x"))
	f.Add("id", "01614265330", " v1,AAAA  ", []byte("x"))
	now := time.Unix(1614265330, 0)
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", sig)
		err := VerifyStandardWebhook(secret, h, body, now)
		if err != nil {
			if !errors.Is(err, ErrSignatureMalformed) && !errors.Is(err, ErrSignatureTimestamp) && !errors.Is(err, ErrSignatureMismatch) {
				t.Fatalf("unexpected error kind: %v", err)
			}
		} else {
			// Success means the reference library agrees.
			wh, werr := standardwebhooks.NewWebhook(secret)
			if werr != nil {
				t.Fatal(werr)
			}
			if verr := wh.VerifyIgnoringTimestamp(body, h); verr != nil {
				t.Fatalf("accepted a signature the reference library rejects: %v (id %q ts %q sig %q)", verr, id, ts, sig)
			}
		}

		// Whatever the reference library signs at a sane time, we accept.
		if id == "" || strings.ContainsAny(id, "\r\n") {
			return
		}
		signed := referenceSigned(t, secret, id, now, body)
		if err := VerifyStandardWebhook(secret, signed, body, now); err != nil {
			t.Fatalf("rejects the reference signature of id %q body %q: %v", id, body, err)
		}
	})
}
