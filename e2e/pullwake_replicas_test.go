package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPullWakeAcrossReplicas: two replicas on one PostgreSQL database
// serve one reserved-API subscription. It is created on the first; a
// stream created on the second wakes it (one wake event); a worker claims
// on the first and acks on the second; both publish the same signing
// key. The first is then killed with a worker's lease held, and the
// second ends that lease on time and wakes the pending work again.
func TestPullWakeAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := startReplicas(t, 2, "--stream-root", "/v1/stream")
	a, b := rs[0].base+"/v1/stream", rs[1].base+"/v1/stream"
	jsonHdr := map[string]string{"Content-Type": "application/json"}
	resp, body := do(t, "PUT", a+"/wake/pool", jsonHdr, "")
	wantStatus(t, resp, body, http.StatusCreated, "the wake stream")
	resp, body = do(t, "PUT", a+"/__ds/subscriptions/rep", jsonHdr, `{"type":"pull-wake","pattern":"events/*","wake_stream":"wake/pool","lease_ttl_ms":2000}`)
	wantStatus(t, resp, body, http.StatusCreated, "the subscription on the first replica")
	_, jwksA := do(t, "GET", a+"/__ds/jwks.json", nil, "")
	_, jwksB := do(t, "GET", b+"/__ds/jwks.json", nil, "")
	if jwksA != jwksB || !strings.Contains(jwksA, `"kid":"ds_`) {
		t.Fatalf("the replicas publish different keys: %s and %s", jwksA, jwksB)
	}

	// A stream created on the second replica after the subscription.
	resp, body = do(t, "PUT", b+"/events/x", map[string]string{"Content-Type": "text/plain"}, "one")
	wantStatus(t, resp, body, http.StatusCreated, "a stream on the second replica")
	tail := resp.Header.Get("Stream-Next-Offset")
	offset := awaitWakeEvent(t, b+"/wake/pool", "-1", 1, rs...)

	type claim struct {
		WakeID     string `json:"wake_id"`
		Generation int64  `json:"generation"`
		Token      string `json:"token"`
	}
	var c claim
	resp, body = do(t, "POST", a+"/__ds/subscriptions/rep/claim", jsonHdr, `{"worker":"w1"}`)
	wantStatus(t, resp, body, http.StatusOK, "claim on the first replica")
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	resp, body = do(t, "POST", b+"/__ds/subscriptions/rep/claim", jsonHdr, `{"worker":"w2"}`)
	wantStatus(t, resp, body, http.StatusConflict, "a second claim on the second replica")
	tok := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + c.Token}
	wake := `"wake_id":"` + c.WakeID + `","generation":` + jsonInt(c.Generation)
	resp, body = do(t, "POST", b+"/__ds/subscriptions/rep/ack", tok, `{`+wake+`,"acks":[{"stream":"events/x","offset":"`+tail+`"}],"done":true}`)
	wantStatus(t, resp, body, http.StatusOK, "ack on the second replica")
	if !strings.Contains(body, `"next_wake":false`) {
		t.Fatalf("ack: %s", body)
	}

	// New work, claimed on the first replica, which then dies holding
	// the lease: the second ends it and wakes the work again.
	resp, body = do(t, "POST", b+"/events/x", map[string]string{"Content-Type": "text/plain"}, "two")
	wantStatus(t, resp, body, http.StatusNoContent, "append")
	offset = awaitWakeEvent(t, b+"/wake/pool", offset, c.Generation+1, rs...)
	resp, body = do(t, "POST", a+"/__ds/subscriptions/rep/claim", jsonHdr, `{"worker":"w1"}`)
	wantStatus(t, resp, body, http.StatusOK, "claim of the new work")
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	rs[0].kill()
	awaitWakeEvent(t, b+"/wake/pool", offset, c.Generation+1, rs[1])
	resp, body = do(t, "POST", b+"/__ds/subscriptions/rep/claim", jsonHdr, `{"worker":"w2"}`)
	wantStatus(t, resp, body, http.StatusOK, "claim on the surviving replica after the lease ended")
	if !strings.Contains(body, `"acked_offset":"`+tail+`"`) {
		t.Fatalf("the acked position is lost: %s", body)
	}
}

// awaitWakeEvent reads the wake stream live from offset until it holds
// an event of generation gen or later, and returns the offset after it.
func awaitWakeEvent(t *testing.T, stream, offset string, gen int64, logs ...*server) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if time.Now().After(deadline) {
			var all strings.Builder
			for _, s := range logs {
				all.WriteString(s.logs.String())
			}
			t.Fatalf("no wake event of generation %d in %s\n%s", gen, stream, all.String())
		}
		resp, body := do(t, "GET", stream+"?live=long-poll&offset="+offset, nil, "")
		if next := resp.Header.Get("Stream-Next-Offset"); next != "" {
			offset = next
		}
		var events []struct{ Generation int64 }
		if resp.StatusCode == http.StatusOK && json.Unmarshal([]byte(body), &events) == nil {
			for _, e := range events {
				if e.Generation >= gen {
					return offset
				}
			}
		}
	}
}

// wantStatus fails the test unless resp's status is want.
func wantStatus(t *testing.T, resp *http.Response, body string, want int, what string) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s: %d %s, want %d", what, resp.StatusCode, body, want)
	}
}
