package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests of this file drive the webhook subscription API of the real
// binary with plain HTTP and JSON, as a consumer written in any language
// would, against a real webhook receiver on 127.0.0.1.

// wakeLatency is how long a test waits for a wake that is due now.
const wakeLatency = 10 * time.Second

// specWake is a wake notification as a receiver reads it.
type specWake struct {
	ConsumerID    string `json:"consumer_id"`
	Epoch         int64  `json:"epoch"`
	WakeID        string `json:"wake_id"`
	PrimaryStream string `json:"primary_stream"`
	Streams       []struct {
		Path   string `json:"path"`
		Offset string `json:"offset"`
	} `json:"streams"`
	TriggeredBy []string `json:"triggered_by"`
	Callback    string   `json:"callback"`
	Token       string   `json:"token"`
}

// wakeReceiver is a webhook endpoint: it checks each wake's signature
// against the secrets it was given, answers 200 {} (the consumer goes
// LIVE) and hands the wakes to the test.
type wakeReceiver struct {
	t       *testing.T
	mu      sync.Mutex
	secrets []string
	wakes   chan specWake
	// held are wakes received while the test waited for another
	// consumer's; only the test goroutine touches it.
	held []specWake
}

func newWakeReceiver(t *testing.T) (*wakeReceiver, string) {
	rc := &wakeReceiver{t: t, wakes: make(chan specWake, 256)}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv.URL + "/hook"
}

// trust adds a subscription's secret to those wakes may be signed with.
func (rc *wakeReceiver) trust(secret string) {
	rc.mu.Lock()
	rc.secrets = append(rc.secrets, secret)
	rc.mu.Unlock()
}

func (rc *wakeReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	if !rc.signed(r.Header.Get("Webhook-Signature"), body) {
		rc.t.Errorf("wake with a bad signature: %s", body)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var wake specWake
	if err := json.Unmarshal(body, &wake); err != nil {
		rc.t.Errorf("wake: %v: %s", err, body)
		http.Error(w, "bad wake", http.StatusBadRequest)
		return
	}
	rc.wakes <- wake
	io.WriteString(w, "{}")
}

// signed checks a Webhook-Signature header: t=<unix>,sha256=<hex HMAC of
// "<t>.<body>">.
func (rc *wakeReceiver) signed(header string, body []byte) bool {
	ts, sig, ok := strings.Cut(header, ",sha256=")
	ts, tok := strings.CutPrefix(ts, "t=")
	if !ok || !tok {
		return false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, s := range rc.secrets {
		mac := hmac.New(sha256.New, []byte(s))
		mac.Write([]byte(ts + "."))
		mac.Write(body)
		if hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(sig)) {
			return true
		}
	}
	return false
}

// next returns the next wake for consumer id, failing the test when none
// arrives within wakeLatency. Wakes of other consumers are kept for them.
func (rc *wakeReceiver) next(srv *server, id string) specWake {
	rc.t.Helper()
	for i, w := range rc.held {
		if w.ConsumerID == id {
			rc.held = append(rc.held[:i], rc.held[i+1:]...)
			return w
		}
	}
	deadline := time.After(wakeLatency)
	for {
		select {
		case w := <-rc.wakes:
			if w.ConsumerID == id {
				return w
			}
			rc.held = append(rc.held, w)
		case <-deadline:
			rc.t.Fatalf("no wake for %s within %v\n%s", id, wakeLatency, srv.logs)
		}
	}
}

// specSubscribe creates a subscription on srv whose wakes go to rc.
func specSubscribe(t *testing.T, srv *server, rc *wakeReceiver, pattern, id, hook string) {
	t.Helper()
	rc.trust(createSubscription(t, srv.base, pattern, id, hook))
}

// callbackReply is a callback response, success or error.
type callbackReply struct {
	Status int
	OK     bool   `json:"ok"`
	Token  string `json:"token"`
	Error  struct {
		Code string `json:"code"`
	} `json:"error"`
	Streams []struct {
		Path   string `json:"path"`
		Offset string `json:"offset"`
	} `json:"streams"`
}

// callback POSTs one callback with a bearer token and returns the reply.
func callback(t *testing.T, url, token, body string) callbackReply {
	t.Helper()
	resp, raw := do(t, "POST", url, map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}, body)
	reply := callbackReply{Status: resp.StatusCode}
	if err := json.Unmarshal([]byte(raw), &reply); err != nil {
		t.Fatalf("callback reply %d is not JSON: %q", resp.StatusCode, raw)
	}
	return reply
}

// wantCallback checks a reply's status and error code ("" for success).
func wantCallback(t *testing.T, what string, got callbackReply, status int, code string) {
	t.Helper()
	if got.Status != status || got.Error.Code != code || got.OK != (status == http.StatusOK) {
		t.Fatalf("%s: %d %q (ok %v), want %d %q", what, got.Status, got.Error.Code, got.OK, status, code)
	}
}

// put creates a stream, with a body when data is not "".
func put(t *testing.T, srv *server, path, data string) {
	t.Helper()
	resp, body := do(t, "PUT", srv.base+path, map[string]string{"Content-Type": "text/plain"}, data)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT %s: %d %s", path, resp.StatusCode, body)
	}
}

// appendTo appends data to a stream and returns the offset of its tail.
func appendTo(t *testing.T, srv *server, path, data string) string {
	t.Helper()
	resp, body := do(t, "POST", srv.base+path, map[string]string{"Content-Type": "text/plain"}, data)
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, body)
	}
	return resp.Header.Get("Stream-Next-Offset")
}

func specHerald(t *testing.T) *server {
	return startHerald(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")
}

// TestNewMatchingStreamWakesAtOnce: a stream created after the
// subscription is pending work from its first offset, even when it is
// created empty, so its consumer is woken at once with triggered_by naming
// it; a stream that existed before the subscription wakes only for new
// events.
func TestNewMatchingStreamWakesAtOnce(t *testing.T) {
	t.Parallel()
	srv := specHerald(t)
	rc, hook := newWakeReceiver(t)
	put(t, srv, "/agents/old", "before the subscription")
	specSubscribe(t, srv, rc, "/agents/*", "sub", hook)

	put(t, srv, "/agents/a", "") // no body
	put(t, srv, "/tools/a", "")
	appendTo(t, srv, "/tools/a", "not subscribed")

	w := rc.next(srv, "sub:%2Fagents%2Fa")
	if w.Epoch != 1 || w.PrimaryStream != "/agents/a" || len(w.TriggeredBy) != 1 || w.TriggeredBy[0] != "/agents/a" ||
		len(w.Streams) != 1 || w.Streams[0].Offset != "-1" {
		t.Fatalf("wake of the new stream: %+v", w)
	}

	// The stream that existed is acked to its tail at the subscription:
	// its first wake comes with its first new event, from that tail.
	resp, _ := do(t, "HEAD", srv.base+"/agents/old", nil, "")
	tail := resp.Header.Get("Stream-Next-Offset")
	appendTo(t, srv, "/agents/old", "new")
	w = rc.next(srv, "sub:%2Fagents%2Fold")
	if w.Epoch != 1 || len(w.Streams) != 1 || w.Streams[0].Offset != tail {
		t.Fatalf("wake of the existing stream: %+v, want it acked to %s", w, tail)
	}
}

// TestDeletedPrimaryStreamIsGoneAtOnce: once DELETE of a primary stream
// has answered 204, every callback of its consumers gets 410
// CONSUMER_GONE; none is accepted after the 204.
func TestDeletedPrimaryStreamIsGoneAtOnce(t *testing.T) {
	t.Parallel()
	srv := specHerald(t)
	rc, hook := newWakeReceiver(t)
	specSubscribe(t, srv, rc, "/agents/*", "sub", hook)

	const n = 16
	wakes := make([]specWake, n)
	for i := range n {
		put(t, srv, fmt.Sprintf("/agents/a%d", i), "work")
	}
	for i := range n {
		wakes[i] = rc.next(srv, fmt.Sprintf("sub:%%2Fagents%%2Fa%d", i))
		wantCallback(t, "claim", callback(t, wakes[i].Callback, wakes[i].Token,
			fmt.Sprintf(`{"epoch":%d,"wake_id":%q}`, wakes[i].Epoch, wakes[i].WakeID)), http.StatusOK, "")
	}
	for i, w := range wakes {
		resp, body := do(t, "DELETE", srv.base+fmt.Sprintf("/agents/a%d", i), nil, "")
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
		}
		wantCallback(t, "callback right after the DELETE", callback(t, w.Callback, w.Token, fmt.Sprintf(`{"epoch":%d}`, w.Epoch)),
			http.StatusGone, "CONSUMER_GONE")
	}
}

// TestCallbackRuleOrder: a callback whose epoch is below the consumer's
// is 409 STALE_EPOCH even with the current, valid token; a token that is
// malformed, badly signed or another consumer's is 401 TOKEN_INVALID.
func TestCallbackRuleOrder(t *testing.T) {
	t.Parallel()
	srv := specHerald(t)
	rc, hook := newWakeReceiver(t)
	specSubscribe(t, srv, rc, "/agents/*", "sub", hook)
	put(t, srv, "/agents/a", "")
	tail := appendTo(t, srv, "/agents/a", "one")
	put(t, srv, "/agents/b", "work")
	other := rc.next(srv, "sub:%2Fagents%2Fb")

	w1 := rc.next(srv, "sub:%2Fagents%2Fa")
	wantCallback(t, "done", callback(t, w1.Callback, w1.Token,
		fmt.Sprintf(`{"epoch":%d,"wake_id":%q,"acks":[{"path":"/agents/a","offset":%q}],"done":true}`, w1.Epoch, w1.WakeID, tail)),
		http.StatusOK, "")
	appendTo(t, srv, "/agents/a", "two")
	w2 := rc.next(srv, "sub:%2Fagents%2Fa")
	if w2.Epoch != w1.Epoch+1 {
		t.Fatalf("second wake at epoch %d after %d", w2.Epoch, w1.Epoch)
	}

	stale := fmt.Sprintf(`{"epoch":%d}`, w1.Epoch)
	current := fmt.Sprintf(`{"epoch":%d}`, w2.Epoch)
	parts := strings.Split(w2.Token, ".")
	sig := []byte(parts[2])
	sig[0] ^= 1 // still base64url
	for _, tc := range []struct {
		name, token, body string
		status            int
		code              string
	}{
		{"current token, stale body epoch", w2.Token, stale, http.StatusConflict, "STALE_EPOCH"},
		{"stale token, stale body epoch", w1.Token, stale, http.StatusConflict, "STALE_EPOCH"},
		{"malformed token", "not-a-token", current, http.StatusUnauthorized, "TOKEN_INVALID"},
		{"badly signed token", parts[0] + "." + parts[1] + "." + string(sig), current, http.StatusUnauthorized, "TOKEN_INVALID"},
		{"another consumer's token", other.Token, current, http.StatusUnauthorized, "TOKEN_INVALID"},
		{"current token, current epoch", w2.Token, current, http.StatusOK, ""},
	} {
		wantCallback(t, tc.name, callback(t, w2.Callback, tc.token, tc.body), tc.status, tc.code)
	}
}

// TestConflictingRecreateIsConflictWhateverTheURL: re-creating an id with
// another configuration is 409 even when the new webhook URL would be
// refused; a new id with a refused URL is 400.
func TestConflictingRecreateIsConflictWhateverTheURL(t *testing.T) {
	t.Parallel()
	srv := specHerald(t)
	_, hook := newWakeReceiver(t)
	createSubscription(t, srv.base, "/agents/*", "sub", hook)
	for _, tc := range []struct {
		name, id, webhook string
		status            int
		code              string
	}{
		{"taken id, refused URL", "sub", "http://10.1.2.3/hook", http.StatusConflict, "SUBSCRIPTION_EXISTS"},
		{"taken id, allowed URL", "sub", hook + "/other", http.StatusConflict, "SUBSCRIPTION_EXISTS"},
		{"new id, refused URL", "fresh", "http://10.1.2.3/hook", http.StatusBadRequest, "URL_REFUSED"},
	} {
		resp, body := do(t, "PUT", srv.base+"/agents/*?subscription="+tc.id, jsonBody, `{"webhook": "`+tc.webhook+`"}`)
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != tc.status || e.Error.Code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
	}
	resp, body := do(t, "PUT", srv.base+"/agents/*?subscription=sub", jsonBody, `{"webhook": "`+hook+`"}`)
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "webhook_secret") {
		t.Errorf("identical re-create: %d %s", resp.StatusCode, body)
	}
}

// TestTokensDieWithTheirSubscription: after a subscription is deleted and
// created again with the same id, a token issued before the delete is
// refused (401 TOKEN_INVALID), even though the new consumer has the same
// id and reaches the same epoch, and it changes nothing.
func TestTokensDieWithTheirSubscription(t *testing.T) {
	t.Parallel()
	srv := specHerald(t)
	rc, hook := newWakeReceiver(t)
	specSubscribe(t, srv, rc, "/agents/*", "sub", hook)
	put(t, srv, "/agents/a", "work")
	old := rc.next(srv, "sub:%2Fagents%2Fa")

	if resp, body := do(t, "DELETE", srv.base+"/agents/*?subscription=sub", nil, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete subscription: %d %s", resp.StatusCode, body)
	}
	specSubscribe(t, srv, rc, "/agents/*", "sub", hook) // another owner, same id
	tail := appendTo(t, srv, "/agents/a", "for the new owner")
	fresh := rc.next(srv, "sub:%2Fagents%2Fa")
	if fresh.Epoch != old.Epoch {
		t.Fatalf("the new consumer woke at epoch %d, the old one at %d: the test needs them equal", fresh.Epoch, old.Epoch)
	}

	wantCallback(t, "old token", callback(t, old.Callback, old.Token,
		fmt.Sprintf(`{"epoch":%d,"acks":[{"path":"/agents/a","offset":%q}],"unsubscribe":["/agents/a"]}`, old.Epoch, tail)),
		http.StatusUnauthorized, "TOKEN_INVALID")
	got := callback(t, fresh.Callback, fresh.Token, fmt.Sprintf(`{"epoch":%d,"wake_id":%q}`, fresh.Epoch, fresh.WakeID))
	wantCallback(t, "new token", got, http.StatusOK, "")
	if len(got.Streams) != 1 || got.Streams[0].Offset == tail {
		t.Fatalf("the old token changed the new consumer: %+v", got.Streams)
	}
}

// TestOversizedCallbackIs413: a callback body over the limit is 413 with
// a JSON error code, whatever else is wrong with the request.
func TestOversizedCallbackIs413(t *testing.T) {
	t.Parallel()
	srv := specHerald(t)
	rc, hook := newWakeReceiver(t)
	specSubscribe(t, srv, rc, "/agents/*", "sub", hook)
	put(t, srv, "/agents/a", "work")
	w := rc.next(srv, "sub:%2Fagents%2Fa")

	huge := `{"epoch":1,"subscribe":["/x"],"unsubscribe":["` + strings.Repeat("a", 20<<20) + `"]}`
	for _, chunked := range []bool{false, true} {
		req, err := http.NewRequest("POST", w.Callback, io.MultiReader(strings.NewReader(huge)))
		if err != nil {
			t.Fatal(err)
		}
		if !chunked {
			req.ContentLength = int64(len(huge))
		}
		req.Header.Set("Authorization", "Bearer "+w.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("chunked %v: %v", chunked, err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var reply callbackReply
		if err != nil || json.Unmarshal(raw, &reply) != nil || resp.StatusCode != http.StatusRequestEntityTooLarge ||
			reply.OK || reply.Error.Code != "PAYLOAD_TOO_LARGE" {
			t.Fatalf("chunked %v: %d %.200s (%v)", chunked, resp.StatusCode, raw, err)
		}
	}
	wantCallback(t, "a callback of normal size after", callback(t, w.Callback, w.Token, fmt.Sprintf(`{"epoch":%d}`, w.Epoch)), http.StatusOK, "")
}
