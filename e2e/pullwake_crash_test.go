package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPullWakeSurvivesKill9: a pull-wake worker acks a position and holds
// the lease when Herald is killed with SIGKILL. After the restart the
// acked position is there, the dead worker's lease ends when its
// lease_ttl_ms runs out (it is not held forever), a new wake event is
// written for the work still pending, and another worker claims it and
// finishes.
func TestPullWakeSurvivesKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startHerald(t, dir, "--stream-root", "/v1/stream")
	root := s.base + "/v1/stream"
	sub := root + "/__ds/subscriptions/crash"
	jsonHdr := map[string]string{"Content-Type": "application/json"}
	resp, body := do(t, "PUT", root+"/wake/pool", jsonHdr, "")
	wantStatus(t, resp, body, http.StatusCreated, "the wake stream")
	resp, body = do(t, "PUT", sub, jsonHdr, `{"type":"pull-wake","pattern":"events/*","wake_stream":"wake/pool","lease_ttl_ms":2000}`)
	wantStatus(t, resp, body, http.StatusCreated, "the subscription")
	resp, body = do(t, "PUT", root+"/events/a", map[string]string{"Content-Type": "text/plain"}, "first")
	wantStatus(t, resp, body, http.StatusCreated, "the stream")
	acked := resp.Header.Get("Stream-Next-Offset")
	// Work is there to claim once its wake event is written.
	awaitWakeEvent(t, root+"/wake/pool", "-1", 1, s)

	type claim struct {
		WakeID     string `json:"wake_id"`
		Generation int64  `json:"generation"`
		Token      string `json:"token"`
		Streams    []struct {
			Path        string `json:"path"`
			AckedOffset string `json:"acked_offset"`
			HasPending  bool   `json:"has_pending"`
		} `json:"streams"`
	}
	var c claim
	resp, body = do(t, "POST", sub+"/claim", jsonHdr, `{"worker":"w1"}`)
	wantStatus(t, resp, body, http.StatusOK, "claim by w1")
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	wake := `"wake_id":"` + c.WakeID + `","generation":` + jsonInt(c.Generation)
	resp, body = do(t, "POST", sub+"/ack", map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + c.Token},
		`{`+wake+`,"acks":[{"stream":"events/a","offset":"`+acked+`"}]}`)
	wantStatus(t, resp, body, http.StatusOK, "ack by w1")
	resp, body = do(t, "POST", root+"/events/a", map[string]string{"Content-Type": "text/plain"}, "second")
	wantStatus(t, resp, body, http.StatusNoContent, "append")

	// kill -9 with w1's lease held and work pending.
	s.kill()
	s = startHerald(t, dir, "--stream-root", "/v1/stream")
	root = s.base + "/v1/stream"
	sub = root + "/__ds/subscriptions/crash"

	resp, body = do(t, "GET", sub, nil, "")
	wantStatus(t, resp, body, http.StatusOK, "the subscription after the restart")
	if !strings.Contains(body, `"acked_offset":"`+acked+`"`) {
		t.Fatalf("the acked position %s is lost: %s", acked, body)
	}
	// The lease ends on its own: a new wake event, of the next
	// generation, is written to the wake stream.
	awaitWakeEvent(t, root+"/wake/pool", "-1", c.Generation+1, s)
	resp, body = do(t, "POST", sub+"/claim", jsonHdr, `{"worker":"w2"}`)
	wantStatus(t, resp, body, http.StatusOK, "claim by w2 after the lease ended")
	var c2 claim
	if err := json.Unmarshal([]byte(body), &c2); err != nil {
		t.Fatal(err)
	}
	if c2.Generation <= c.Generation || len(c2.Streams) != 1 || c2.Streams[0].AckedOffset != acked || !c2.Streams[0].HasPending {
		t.Fatalf("w2's claim = %s, want a later generation with events/a acked at %s and pending", body, acked)
	}
	// w1's token is fenced now.
	resp, body = do(t, "POST", sub+"/ack", map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + c.Token}, `{`+wake+`,"done":true}`)
	wantStatus(t, resp, body, http.StatusConflict, "ack with the dead worker's token")
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
