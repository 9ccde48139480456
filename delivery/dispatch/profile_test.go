package dispatch

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/internal/deliverytest"
)

// The receivers below are written from each format's own verification
// recipe, not from Herald's signing code.

// verifyXRuche: the timestamp is within 300 s, the signature starts with
// "v1=", and the rest is the hex HMAC-SHA256, keyed by the secret string,
// of "<timestamp>.<raw body>", compared in constant time.
func verifyXRuche(payload []byte, signatureHeader, timestampHeader, secret string, now time.Time) bool {
	ts, err := strconv.ParseInt(timestampHeader, 10, 64)
	if err != nil || now.Unix()-ts > 300 || ts-now.Unix() > 300 {
		return false
	}
	expected, ok := strings.CutPrefix(signatureHeader, "v1=")
	if !ok {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestampHeader + "." + string(payload)))
	computed := hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(expected), []byte(computed))
}

// verifyXAgentIdP: header = "sha256=" + hex(HMAC-SHA256(secret, timestamp
// + "." + body)).
func verifyXAgentIdP(body []byte, signatureHeader, timestampHeader, secret string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestampHeader + "." + string(body)))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(want), []byte(signatureHeader))
}

// acmeProfiles is a profiles file as an installation would write it
// (shared with the profile rules tests of package delivery).
var acmeProfiles = func() string {
	b, err := os.ReadFile("../testdata/acme_profiles.json")
	if err != nil {
		panic(err) // the file is part of the repository
	}
	return string(b)
}()

// verifyAcme follows acme-v2's description: the key is the base64 after
// "whsec_"; any of the comma-separated signatures is "v2:" + base64 of
// the HMAC-SHA256 of "<id>:<timestamp>:<body>".
func verifyAcme(body []byte, id, timestamp, signatures, secret string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + ":" + timestamp + ":" + string(body)))
	want := "v2:" + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Split(signatures, ",") {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

func profileRig(t *testing.T) *rig {
	extra, err := delivery.ParseProfiles([]byte(acmeProfiles))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := delivery.NewProfileSet(extra, "")
	if err != nil {
		t.Fatal(err)
	}
	return newRig(t, func(c *EngineConfig) { c.Profiles = ps })
}

// publishAs publishes one event of tenant acme with routing fields in
// its data, and returns the last request the receiver got.
func publishAs(t *testing.T, r *rig, id string) deliverytest.Received {
	t.Helper()
	_, err := r.e.Publish(context.Background(), &PublishParams{Tenant: "acme", Event: &delivery.Event{
		ID: id, Type: "scenario.activated", Timestamp: time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC),
		Data: json.RawMessage(`{"agent_id":"ag_1","trace_id":"tr_9","geo":{"region":"eu"},"n":1}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	got := r.rc.Requests()
	if len(got) == 0 {
		t.Fatal("nothing deliverytest.Received")
	}
	return got[len(got)-1]
}

func fields(t *testing.T, body []byte) (map[string]json.RawMessage, []string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	var order []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return m, order
}

// Each shipped profile, and one from a profiles file, delivers requests
// that the format's own recipe verifies, with its header names and its
// envelope; during a secret rotation the receiver holding the previous
// secret keeps verifying, and once the overlap ends the new secret
// verifies.
func TestProfilesDeliverVerifiableRequests(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, q deliverytest.Received, secret string) bool
	cases := []struct {
		profile string
		verify  check
		order   []string
		body    func(t *testing.T, q deliverytest.Received, m map[string]json.RawMessage)
		// all: during the overlap both secrets sign.
		all bool
	}{
		{
			profile: delivery.ProfileStandardWebhooks, all: true,
			verify: func(t *testing.T, q deliverytest.Received, secret string) bool {
				// The Standard Webhooks reference library, independent of Herald.
				wh, err := standardwebhooks.NewWebhook(secret)
				if err != nil {
					t.Fatalf("reference library refused secret %q: %v", secret, err)
				}
				return wh.VerifyIgnoringTimestamp(q.Body, q.Header) == nil
			},
			order: []string{"id", "type", "timestamp", "data"},
			body: func(t *testing.T, q deliverytest.Received, m map[string]json.RawMessage) {
				if string(m["id"]) != `"evt_p1"` || q.Header.Get("webhook-id") != "evt_p1" {
					t.Errorf("id %s, header %q", m["id"], q.Header.Get("webhook-id"))
				}
			},
		},
		{
			profile: delivery.ProfileXRucheV1,
			verify: func(t *testing.T, q deliverytest.Received, secret string) bool {
				return verifyXRuche(q.Body, q.Header.Get("X-Ruche-Signature"), q.Header.Get("X-Ruche-Timestamp"), secret, time.Now())
			},
			order: []string{"webhook_id", "timestamp", "event_type", "event_id", "tenant_id", "agent_id", "session_key",
				"logical_turn_id", "trace_id", "payload", "schema_version"},
			body: func(t *testing.T, q deliverytest.Received, m map[string]json.RawMessage) {
				want := map[string]string{
					"webhook_id": `"evt_p1"`, "event_id": `"evt_p1"`, "event_type": `"scenario.activated"`,
					"timestamp": `"2026-03-01T10:30:00Z"`, "tenant_id": `"acme"`, "agent_id": `"ag_1"`, "trace_id": `"tr_9"`,
					"session_key": "null", "logical_turn_id": "null", "schema_version": `"1.0"`,
					"payload": `{"agent_id":"ag_1","trace_id":"tr_9","geo":{"region":"eu"},"n":1}`,
				}
				for k, v := range want {
					if string(m[k]) != v {
						t.Errorf("%s = %s, want %s", k, m[k], v)
					}
				}
				if q.Header.Get("X-Ruche-Delivery-Id") != "evt_p1" || q.Header.Get("X-Ruche-Event-Type") != "scenario.activated" ||
					q.Header.Get("User-Agent") != "Ruche-Webhook/1.0" || q.Header.Get("Content-Type") != "application/json" {
					t.Errorf("headers %v", q.Header)
				}
			},
		},
		{
			profile: delivery.ProfileXAgentIdPSHA256,
			verify: func(t *testing.T, q deliverytest.Received, secret string) bool {
				return verifyXAgentIdP(q.Body, q.Header.Get("X-AgentIdP-Signature-256"), q.Header.Get("X-AgentIdP-Timestamp"), secret)
			},
			order: []string{"id", "type", "organizationId", "timestamp", "data"},
			body: func(t *testing.T, q deliverytest.Received, m map[string]json.RawMessage) {
				if string(m["organizationId"]) != `"acme"` || string(m["type"]) != `"scenario.activated"` || string(m["timestamp"]) != `"2026-03-01T10:30:00Z"` {
					t.Errorf("body %s", q.Body)
				}
				if q.Header.Get("X-AgentIdP-Event") != "scenario.activated" || q.Header.Get("X-AgentIdP-Delivery-Id") != "evt_p1" {
					t.Errorf("headers %v", q.Header)
				}
				if ts, err := strconv.ParseInt(q.Header.Get("X-AgentIdP-Timestamp"), 10, 64); err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
					t.Errorf("timestamp %q", q.Header.Get("X-AgentIdP-Timestamp"))
				}
			},
		},
		{
			profile: "acme-v2", all: true,
			verify: func(t *testing.T, q deliverytest.Received, secret string) bool {
				return verifyAcme(q.Body, q.Header.Get("Acme-Message-Id"), q.Header.Get("Acme-Sent-At"), q.Header.Get("Acme-Signature"), secret)
			},
			order: []string{"event_id", "kind", "occurred_at", "org", "region", "body", "version"},
			body: func(t *testing.T, q deliverytest.Received, m map[string]json.RawMessage) {
				if string(m["region"]) != `"eu"` || string(m["version"]) != "2" || string(m["org"]) != `"acme"` || q.Header.Get("Acme-Kind") != "scenario.activated" {
					t.Errorf("request %v %s", q.Header, q.Body)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.profile, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				r := profileRig(t)
				ep := r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{Profile: c.profile}})
				q := publishAs(t, r, "evt_p1")
				if !c.verify(t, q, ep.Secret) {
					t.Fatalf("does not verify: %v %s", q.Header, q.Body)
				}
				m, order := fields(t, q.Body)
				if !slices.Equal(order, c.order) {
					t.Fatalf("envelope %v, want %v", order, c.order)
				}
				c.body(t, q, m)
				if ds := r.deliveries(ep.ID); len(ds) != 1 || ds[0].Status != "delivered" {
					t.Fatalf("deliveries %+v", ds)
				}

				rotated, err := r.e.RotateSecret(context.Background(), ep.ID)
				if err != nil {
					t.Fatal(err)
				}
				q = publishAs(t, r, "evt_p2")
				if !c.verify(t, q, ep.Secret) {
					t.Fatal("during the overlap the previous secret does not verify")
				}
				if got := c.verify(t, q, rotated.Secret); got != c.all {
					t.Fatalf("during the overlap the new secret verifies: %v, want %v", got, c.all)
				}
				time.Sleep(delivery.DefaultRotationOverlap + time.Second)
				q = publishAs(t, r, "evt_p3")
				if !c.verify(t, q, rotated.Secret) || c.verify(t, q, ep.Secret) {
					t.Fatal("after the overlap only the new secret must verify")
				}
			})
		})
	}
}

// The verification challenge goes in the profile's own header.
func TestProfileChallengeHeader(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := profileRig(t)
		r.endpoint(&CreateEndpointParams{Active: true, Verify: true, Config: delivery.EndpointConfig{Profile: delivery.ProfileXRucheV1}})
		got := r.rc.Requests()
		if len(got) != 1 || !strings.HasPrefix(got[0].Header.Get("X-Ruche-Verification"), "hvc_") || got[0].Header.Get("X-Ruche-Signature") == "" {
			t.Fatalf("challenge %v", got)
		}
	})
}
