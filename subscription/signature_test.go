package subscription

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldstreams/herald/client"
)

// The header is t=<unix>,sha256=<hex HMAC-SHA256(secret, "<t>.<body>")>,
// computed here independently of SignatureHeaderValue.
func TestSignatureHeaderValue(t *testing.T) {
	t.Parallel()
	secret := "whsec_abc123"
	body := []byte(`{"consumer_id":"my-sub:%2Fagents%2Ftask-123","epoch":7}`)
	now := time.Unix(1704067200, 0)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("1704067200." + string(body)))
	want := "t=1704067200,sha256=" + hex.EncodeToString(mac.Sum(nil))
	if got := SignatureHeaderValue(secret, body, now); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// S8: every wake the machine asks for, once the engine fills in callback
// and token and signs the encoded body, verifies with the subscription's
// secret through the public SDK, and parses back to the same payload.
func TestInvariantS8SignaturePresence(t *testing.T) {
	t.Parallel()
	secret, err := NewWebhookSecret(zeroReader{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSim(t, seeded())
	s.append(pA, 2)
	s.must(TailsChanged{Tails: s.tailsCopy()})
	s.now = s.c.NextDeadline()
	s.must(Tick{Tails: s.tailsCopy()})
	s.now = s.c.NextDeadline()
	s.must(Tick{Tails: s.tailsCopy()}) // a retry
	if len(s.sends) != 2 {
		t.Fatalf("%d sends", len(s.sends))
	}
	for i, send := range s.sends {
		w := send.Wake
		w.Callback = "https://streams.example.com/callback/" + w.ConsumerID
		w.Token = "tok"
		body, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		sentAt := s.now.Add(time.Duration(i) * time.Hour)
		header := SignatureHeaderValue(secret, body, sentAt)
		if err := client.VerifyWakeSignature(secret, header, body, sentAt.Add(time.Minute), 0); err != nil {
			t.Errorf("send %d: %v", i, err)
		}
		parsed, err := client.ParseWake(body)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if parsed.ConsumerID != w.ConsumerID || parsed.Epoch != w.Epoch || parsed.WakeID != w.WakeID ||
			parsed.PrimaryStream != w.PrimaryStream || len(parsed.Streams) != len(w.Streams) ||
			parsed.Streams[0].Offset != w.Streams[0].Offset || len(parsed.TriggeredBy) != 1 {
			t.Errorf("send %d parsed as %+v, sent %+v", i, parsed, w)
		}
	}
}
