package wake

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/testhttp"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/subscription"
)

// The engine tests run the real engine on the real embedded store, inside
// testing/synctest bubbles: time is fake, so the 10 s, 45 s, backoff and
// 3-day timers pass in milliseconds, and synctest.Wait returns once every
// goroutine (engine, store, webhook receiver) is idle. Webhooks are served
// in process by internal/testhttp, as in the delivery engine's tests.

const hookURL = testhttp.HookURL

// received is one webhook request the receiver got.
type received struct {
	At      time.Time
	Payload subscription.WakePayload
	Body    []byte
	Sig     string
}

// receiver is the webhook endpoint of the tests (testhttp.Receiver). Its
// reply decides each answer; none answers 200.
type receiver struct {
	testhttp.Receiver[subscription.WakePayload]
}

func (h *receiver) setReply(f func(p subscription.WakePayload, r *http.Request) (int, string)) {
	if f == nil {
		h.SetReply(nil)
		return
	}
	h.SetReply(func(_ int, p subscription.WakePayload, r *http.Request) (int, map[string]string, string) {
		status, body := f(p, r)
		return status, nil, body
	})
}

// wakes returns every request received so far.
func (h *receiver) wakes() []received {
	got := h.Requests()
	out := make([]received, len(got))
	for i, q := range got {
		out[i] = received{At: q.At, Payload: q.Value, Body: q.Body, Sig: q.Header.Get(subscription.SignatureHeader)}
	}
	return out
}

// rig is an engine on a store in a temporary directory.
type rig struct {
	t    *testing.T
	dir  string
	st   *sqlite.Store
	eng  *Engine
	hook *receiver
	keys *subscription.Keyring
}

func rigKeyring(t *testing.T) *subscription.Keyring {
	t.Helper()
	k, err := subscription.NewKeyring([]subscription.Key{{ID: "k1", Secret: bytes.Repeat([]byte{7}, 32)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newRig opens a store in dir and starts an engine on it. Call it inside
// a synctest bubble and close the rig before the bubble ends.
func newRig(t *testing.T, dir string, hook *receiver) *rig {
	t.Helper()
	return newRigSweep(t, dir, hook, 0)
}

// newRigSweep is newRig with a SweepInterval (0: the default).
func newRigSweep(t *testing.T, dir string, hook *receiver, sweep time.Duration) *rig {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir, TouchFlushInterval: time.Hour, CheckpointInterval: time.Hour, RelaxedInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, st: st, hook: hook, keys: rigKeyring(t)}
	r.eng = startEngine(t, st, hook, r.keys, sweep, true)
	return r
}

// newSender is a sender that delivers wakes to hook.
func newSender(hook *receiver) *testhttp.Sender {
	return testhttp.NewSender(hook)
}

// startEngine starts an engine on st that delivers wakes to hook.
// exclusive is EngineConfig.ExclusiveStore: true for the embedded store
// and the in-memory one; the model test also runs with it off.
func startEngine(t *testing.T, st EngineStore, hook *receiver, keys *subscription.Keyring, sweep time.Duration, exclusive bool) *Engine {
	t.Helper()
	eng, err := NewEngine(EngineConfig{
		Store:           st,
		Sender:          newSender(hook),
		Keyring:         keys,
		CallbackBaseURL: "https://herald.test",
		SweepInterval:   sweep,
		ExclusiveStore:  exclusive,
		StreamOwner:     tenantOfPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng
}

// tenantOfPath is the engines' StreamOwner in tests: /tenants/{tenant}/
// is a tenant's namespace.
func tenantOfPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/tenants/")
	if !ok {
		return "", false
	}
	tenant, _, ok := strings.Cut(rest, "/")
	return tenant, ok && tenant != ""
}

// close stops the engine and closes the store (a clean shutdown).
func (r *rig) close() {
	r.eng.Stop(context.Background())
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) createStream(path string, data string) {
	r.t.Helper()
	_, err := r.st.StreamCreate(context.Background(), &store.StreamCreateParams{
		Path: path, ContentType: "application/octet-stream", Data: []byte(data), Now: time.Now(),
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// appendData appends and returns the new tail offset.
func (r *rig) appendData(path, data string) string {
	r.t.Helper()
	res, err := r.st.StreamAppend(context.Background(), &store.StreamAppendParams{
		Path: path, ContentType: "application/octet-stream", Data: []byte(data), Now: time.Now(),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return protocol.FormatOffset(res.Stream.Tail)
}

// appendWithoutEngine stops the engine, appends to path while no engine
// runs (a crash between an append and its wake), closes the store, and
// returns the new tail.
func (r *rig) appendWithoutEngine(path, data string) string {
	r.t.Helper()
	r.eng.Stop(context.Background())
	tail := r.appendData(path, data)
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
	return tail
}

func (r *rig) deleteStream(path string) {
	r.t.Helper()
	if err := r.st.StreamDelete(context.Background(), &store.StreamDeleteParams{Path: path, Now: time.Now()}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) subscribe(id, pattern string) string {
	r.t.Helper()
	res, err := r.eng.CreateSubscription(context.Background(), &CreateSubscriptionParams{ID: id, Pattern: pattern, Webhook: hookURL})
	if err != nil {
		r.t.Fatal(err)
	}
	if !res.Created || !strings.HasPrefix(res.Subscription.WebhookSecret, subscription.WebhookSecretPrefix) {
		r.t.Fatalf("create: %+v", res)
	}
	return res.Subscription.WebhookSecret
}

func (r *rig) consumer(id string) *store.Consumer {
	r.t.Helper()
	c, err := r.st.ConsumerGet(context.Background(), id)
	if err != nil {
		r.t.Fatalf("consumer %s: %v", id, err)
	}
	return c
}

func (r *rig) callback(id, token string, body string) (*subscription.CallbackResponse, error) {
	return r.eng.Callback(context.Background(), &CallbackParams{ConsumerID: id, Token: token, Body: []byte(body)})
}

func (r *rig) mustCallback(id, token string, body string) *subscription.CallbackResponse {
	r.t.Helper()
	resp, err := r.callback(id, token, body)
	if err != nil {
		r.t.Fatalf("callback %s: %v", body, err)
	}
	return resp
}

// wantCallbackError checks that a callback fails with the documented code.
func (r *rig) wantCallbackError(id, token, body, code string) *CallbackError {
	r.t.Helper()
	_, err := r.callback(id, token, body)
	var ce *CallbackError
	if !errors.As(err, &ce) {
		r.t.Fatalf("callback %s: got %v, want a %s callback error", body, err, code)
	}
	if got, _ := subscription.CallbackErrorCode(err); got != code {
		r.t.Fatalf("callback %s: got code %s (%v), want %s", body, got, err, code)
	}
	return ce
}

// verifySignature checks S8 for one received wake.
func verifySignature(t *testing.T, secret string, w received) {
	t.Helper()
	ts, sig, ok := strings.Cut(w.Sig, ",sha256=")
	if !ok || !strings.HasPrefix(ts, "t=") {
		t.Fatalf("malformed signature header %q", w.Sig)
	}
	unix, err := strconv.ParseInt(strings.TrimPrefix(ts, "t="), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(unix, 10) + "."))
	mac.Write(w.Body)
	if hex.EncodeToString(mac.Sum(nil)) != sig {
		t.Fatalf("signature %q does not verify", w.Sig)
	}
	if d := w.At.Sub(time.Unix(unix, 0)); d < 0 || d > time.Second {
		t.Fatalf("signature time %d is %v from the send", unix, d)
	}
}

func body(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
