package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// profileHooks records every request by path and answers with the
// status its path asks for (/status/404 answers 404; anything else 204).
type profileHooks struct {
	mu  sync.Mutex
	got map[string][]profileHookRequest
}

type profileHookRequest struct {
	header http.Header
	body   []byte
}

func newProfileHooks(t *testing.T) (*profileHooks, *httptest.Server) {
	rec := &profileHooks{got: map[string][]profileHookRequest{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read", http.StatusInternalServerError)
			return
		}
		rec.mu.Lock()
		rec.got[r.URL.Path] = append(rec.got[r.URL.Path], profileHookRequest{r.Header.Clone(), body})
		rec.mu.Unlock()
		if s, ok := strings.CutPrefix(r.URL.Path, "/status/"); ok {
			code, _ := strconv.Atoi(s)
			w.WriteHeader(code)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return rec, srv
}

// wait returns the requests to path once there are at least n.
func (h *profileHooks) wait(t *testing.T, path string, n int, logs fmt.Stringer) []profileHookRequest {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		h.mu.Lock()
		got := append([]profileHookRequest(nil), h.got[path]...)
		h.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d requests, want %d\n%s", path, len(got), n, logs)
		}
	}
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// A profiles file of the installation: "acme-v2" signs "{id}:{timestamp}:{body}"
// with the base64 key, base64 signatures prefixed "v2:", comma-separated.
const e2eProfiles = `{"profiles": [{
  "name": "acme-v2",
  "headers": {"id": "Acme-Message-Id", "timestamp": "Acme-Sent-At", "event_type": "Acme-Kind", "signature": "Acme-Signature"},
  "signature": {"prefix": "v2:", "encoding": "base64", "signed": "{id}:{timestamp}:{body}", "key": "base64", "rotation": "all", "separator": ","},
  "envelope": [{"name": "event_id", "from": "id"}, {"name": "kind", "from": "type"}, {"name": "org", "from": "tenant"},
    {"name": "body", "from": "data"}, {"name": "version", "value": 2}]
}]}`

// The real binary delivers in every shipped profile and in one from
// --delivery-profiles-file, and each receiver verifies the requests with
// its format's own recipe.
func TestDeliveryProfilesVerifyE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "profiles.json")
	if err := os.WriteFile(file, []byte(e2eProfiles), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startHerald(t, filepath.Join(dir, "data"), append(deliveryFlags, "--delivery-profiles-file", file)...)
	rec, hook := newProfileHooks(t)
	secrets := map[string]string{}
	for _, p := range []string{"x-ruche-v1", "x-agentidp-sha256", "acme-v2", "standard-webhooks"} {
		var ep struct{ ID, Secret, Profile string }
		resp, out := do(t, "POST", srv.base+"/_herald/v1/endpoints", map[string]string{"Content-Type": "application/json"},
			fmt.Sprintf(`{"url":%q,"profile":%q,"tenant":"acme","event_types":["order.*"]}`, hook.URL+"/"+p, p))
		if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(out), &ep) != nil || ep.Profile != p {
			t.Fatalf("create %s: %d %s", p, resp.StatusCode, out)
		}
		secrets[p] = ep.Secret
	}
	resp, out := do(t, "POST", srv.base+"/_herald/v1/events", map[string]string{"Content-Type": "application/json"},
		`{"id":"ord-1","type":"order.paid","tenant":"acme","data":{"agent_id":"ag_7","total":42}}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish: %d %s", resp.StatusCode, out)
	}

	fresh := func(ts string) bool {
		n, err := strconv.ParseInt(ts, 10, 64)
		return err == nil && time.Since(time.Unix(n, 0)).Abs() <= 5*time.Minute
	}
	// The Ruche recipe: fresh timestamp, "v1=" + hex HMAC keyed by the
	// secret string over "<timestamp>.<body>".
	q := rec.wait(t, "/x-ruche-v1", 1, srv.logs)[0]
	sig, ok := strings.CutPrefix(q.header.Get("X-Ruche-Signature"), "v1=")
	ts := q.header.Get("X-Ruche-Timestamp")
	if !ok || !fresh(ts) || !hmac.Equal([]byte(sig), []byte(hex.EncodeToString(hmacSHA256([]byte(secrets["x-ruche-v1"]), ts+"."+string(q.body))))) {
		t.Fatalf("x-ruche-v1 does not verify: %v %s", q.header, q.body)
	}
	var ruche map[string]any
	if err := json.Unmarshal(q.body, &ruche); err != nil || ruche["webhook_id"] != "ord-1" || ruche["event_type"] != "order.paid" ||
		ruche["tenant_id"] != "acme" || ruche["agent_id"] != "ag_7" || ruche["schema_version"] != "1.0" ||
		q.header.Get("X-Ruche-Delivery-Id") != "ord-1" || q.header.Get("X-Ruche-Event-Type") != "order.paid" {
		t.Fatalf("x-ruche-v1 request: %v %s", q.header, q.body)
	}

	// The AgentIdP recipe: "sha256=" + hex HMAC(secret, timestamp + "." + body).
	q = rec.wait(t, "/x-agentidp-sha256", 1, srv.logs)[0]
	ts = q.header.Get("X-AgentIdP-Timestamp")
	want := "sha256=" + hex.EncodeToString(hmacSHA256([]byte(secrets["x-agentidp-sha256"]), ts+"."+string(q.body)))
	if !fresh(ts) || !hmac.Equal([]byte(want), []byte(q.header.Get("X-AgentIdP-Signature-256"))) ||
		q.header.Get("X-AgentIdP-Event") != "order.paid" || q.header.Get("X-AgentIdP-Delivery-Id") != "ord-1" {
		t.Fatalf("x-agentidp-sha256 does not verify: %v %s", q.header, q.body)
	}
	if !strings.HasPrefix(string(q.body), `{"id":"ord-1","type":"order.paid","organizationId":"acme","timestamp":"`) {
		t.Fatalf("x-agentidp-sha256 envelope: %s", q.body)
	}

	// acme-v2, as its file describes it.
	q = rec.wait(t, "/acme-v2", 1, srv.logs)[0]
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secrets["acme-v2"], "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	want = "v2:" + base64.StdEncoding.EncodeToString(hmacSHA256(key, q.header.Get("Acme-Message-Id")+":"+q.header.Get("Acme-Sent-At")+":"+string(q.body)))
	if q.header.Get("Acme-Signature") != want || string(q.body) != `{"event_id":"ord-1","kind":"order.paid","org":"acme","body":{"agent_id":"ag_7","total":42},"version":2}` {
		t.Fatalf("acme-v2 does not verify: %v %s", q.header, q.body)
	}

	// Standard Webhooks: "v1," + base64 HMAC of "<id>.<timestamp>.<body>".
	q = rec.wait(t, "/standard-webhooks", 1, srv.logs)[0]
	key, err = base64.StdEncoding.DecodeString(strings.TrimPrefix(secrets["standard-webhooks"], "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	want = "v1," + base64.StdEncoding.EncodeToString(hmacSHA256(key, q.header.Get("webhook-id")+"."+q.header.Get("webhook-timestamp")+"."+string(q.body)))
	if q.header.Get("webhook-signature") != want {
		t.Fatalf("standard-webhooks does not verify: %v %s", q.header, q.body)
	}
}

// Under the default failure policy a 404 is final: one attempt, then
// exhausted with the reason in the delivery API. An endpoint with
// "failure_policy": "retry_all" retries it.
func TestDeliveryFailurePolicyE2E(t *testing.T) {
	t.Parallel()
	srv := startHerald(t, t.TempDir(), deliveryFlags...)
	rec, hook := newProfileHooks(t)
	final, _ := createEndpoint(t, srv.base, fmt.Sprintf(`{"url":%q}`, hook.URL+"/status/404"))
	createEndpoint(t, srv.base, fmt.Sprintf(`{"url":%q,"failure_policy":"retry_all"}`, hook.URL+"/status/410"))
	if resp, out := do(t, "POST", srv.base+"/_herald/v1/events", map[string]string{"Content-Type": "application/json"}, `{"type":"a.b"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish: %d %s", resp.StatusCode, out)
	}
	rec.wait(t, "/status/410", 3, srv.logs) // retried
	var dead struct {
		Data []struct {
			LastError    string `json:"last_error"`
			AttemptCount int    `json:"attempt_count"`
		} `json:"data"`
	}
	_, out := do(t, "GET", srv.base+"/_herald/v1/endpoints/"+final+"/deliveries?status=exhausted", nil, "")
	if err := json.Unmarshal([]byte(out), &dead); err != nil {
		t.Fatal(err)
	}
	ds := dead.Data
	if len(ds) != 1 || ds[0].AttemptCount != 1 || !strings.Contains(ds[0].LastError, `final under failure policy "standard"`) {
		t.Fatalf("dead letters of the standard endpoint: %s", out)
	}
	if got := len(rec.wait(t, "/status/404", 1, srv.logs)); got != 1 {
		t.Fatalf("the final 404 was attempted %d times", got)
	}
}

// An endpoint created with "verify": true that does not answer its
// challenge is pending and receives nothing; the code it received, given
// to POST .../verify, makes it active, and it then receives events.
func TestEndpointVerificationCodeE2E(t *testing.T) {
	t.Parallel()
	srv := startHerald(t, t.TempDir(), deliveryFlags...)
	rec, hook := newProfileHooks(t)
	var ep struct{ ID, Status string }
	resp, out := do(t, "POST", srv.base+"/_herald/v1/endpoints", map[string]string{"Content-Type": "application/json"},
		fmt.Sprintf(`{"url":%q,"verify":true,"profile":"x-ruche-v1"}`, hook.URL+"/v"))
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(out), &ep) != nil || ep.Status != "pending" {
		t.Fatalf("create: %d %s", resp.StatusCode, out)
	}
	code := rec.wait(t, "/v", 1, srv.logs)[0].header.Get("X-Ruche-Verification")
	do(t, "POST", srv.base+"/_herald/v1/events", map[string]string{"Content-Type": "application/json"}, `{"id":"while-pending","type":"a.b"}`)
	resp, out = do(t, "POST", srv.base+"/_herald/v1/endpoints/"+ep.ID+"/verify", map[string]string{"Content-Type": "application/json"},
		fmt.Sprintf(`{"verification_code":%q}`, code))
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(out), &ep) != nil || ep.Status != "active" {
		t.Fatalf("verify: %d %s", resp.StatusCode, out)
	}
	do(t, "POST", srv.base+"/_herald/v1/events", map[string]string{"Content-Type": "application/json"}, `{"id":"after","type":"a.b"}`)
	got := rec.wait(t, "/v", 2, srv.logs)
	if len(got) != 2 || got[1].header.Get("X-Ruche-Delivery-Id") != "after" {
		t.Fatalf("requests after verification: %d, last id %q", len(got), got[len(got)-1].header.Get("X-Ruche-Delivery-Id"))
	}
}
