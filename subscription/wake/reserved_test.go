package wake

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/internal/testhttp"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/subscription"
)

// The reserved API's engine tests run the real engine on the embedded
// store inside synctest bubbles, as the other front door's do: leases,
// retries and restarts pass in fake time.

// dsRig is the engine with its reserved-API front door (eng) on a
// store in a directory.
type dsRig struct {
	t      *testing.T
	dir    string
	st     *sqlite.Store
	engine *Engine
	eng    *Reserved
	hook   *testhttp.Receiver[subscription.DSWebhookBody]
	keys   *subscription.Keyring
}

func newDSRig(t *testing.T, dir string, hook *testhttp.Receiver[subscription.DSWebhookBody]) *dsRig {
	t.Helper()
	return newDSRigWith(t, dir, hook, func(*EngineConfig) {})
}

// newDSRigWith is newDSRig with the engine's configuration changed by
// set before it starts.
func newDSRigWith(t *testing.T, dir string, hook *testhttp.Receiver[subscription.DSWebhookBody], set func(*EngineConfig)) *dsRig {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir, TouchFlushInterval: time.Hour, CheckpointInterval: time.Hour, RelaxedInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	r := &dsRig{t: t, dir: dir, st: st, hook: hook, keys: rigKeyring(t)}
	cfg := EngineConfig{Store: st, Sender: testhttp.NewSender(hook), Keyring: r.keys, CallbackBaseURL: "https://herald.test",
		ExclusiveStore: true, Reserved: ReservedConfig{Store: st, Root: "/v1/stream"}}
	set(&cfg)
	r.engine, err = NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.engine.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.eng = r.engine.Reserved()
	return r
}

// crash stops the engine without letting anything finish and closes
// the store: what a kill -9 leaves is the store's state alone.
// inDSRig runs body in a synctest bubble on a fresh rig over a new data
// directory, crashed when body returns.
func inDSRig(t *testing.T, body func(t *testing.T, r *dsRig, hook *testhttp.Receiver[subscription.DSWebhookBody])) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &testhttp.Receiver[subscription.DSWebhookBody]{}
		r := newDSRig(t, dir, hook)
		defer r.crash()
		body(t, r, hook)
	})
}

func (r *dsRig) crash() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = r.engine.Stop(ctx) // cancelled at once: work in flight is abandoned
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *dsRig) create(id, body string) *subscription.DSSubscriptionView {
	r.t.Helper()
	cfg, err := subscription.ParseDSConfig([]byte(body))
	if err != nil {
		r.t.Fatal(err)
	}
	v, created, err := r.eng.Create(context.Background(), &ReservedCreateParams{ID: id, Config: cfg})
	if err != nil || !created {
		r.t.Fatalf("create %s: %v, created %v", id, err, created)
	}
	return v
}

func (r *dsRig) stream(path, ct, data string) string {
	r.t.Helper()
	res, err := r.st.StreamCreate(context.Background(), &store.StreamCreateParams{Path: path, ContentType: ct, Data: []byte(data), Now: time.Now()})
	if err != nil {
		r.t.Fatal(err)
	}
	return protocol.FormatOffset(res.Stream.Tail)
}

func (r *dsRig) appendTo(path, data string) string {
	r.t.Helper()
	res, err := r.st.StreamAppend(context.Background(), &store.StreamAppendParams{Path: path, ContentType: "text/plain", Data: []byte(data), Now: time.Now()})
	if err != nil {
		r.t.Fatal(err)
	}
	return protocol.FormatOffset(res.Stream.Tail)
}

func (r *dsRig) get(id string) *subscription.DSSubscriptionView {
	r.t.Helper()
	v, err := r.eng.Get(context.Background(), Platform, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

// wakeEvents are the wake events in a wake stream.
func (r *dsRig) wakeEvents(path string) []subscription.DSWakeEvent {
	r.t.Helper()
	res, err := r.st.StreamRead(context.Background(), &store.StreamReadParams{Path: path, From: -1, MaxBytes: 1 << 20, Now: time.Now()})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []subscription.DSWakeEvent
	if err := json.Unmarshal(protocol.AppendJSONArray(nil, res.Data), &out); err != nil {
		r.t.Fatalf("wake stream %q: %v", res.Data, err)
	}
	return out
}

// verifyDS checks a webhook's signature against the engine's JWKS.
func verifyDS(t *testing.T, eng *Reserved, got testhttp.Received[subscription.DSWebhookBody]) string {
	t.Helper()
	var set subscription.JWKS
	if err := json.Unmarshal(eng.JWKS(), &set); err != nil {
		t.Fatal(err)
	}
	h := got.Header.Get("Webhook-Signature")
	parts := strings.Split(h, ",")
	if len(parts) != 3 {
		t.Fatalf("signature header %q", h)
	}
	ts, kid, sig := strings.TrimPrefix(parts[0], "t="), strings.TrimPrefix(parts[1], "kid="), strings.TrimPrefix(parts[2], "ed25519=")
	for _, k := range set.Keys {
		if k.Kid != kid {
			continue
		}
		pub, _ := base64.RawURLEncoding.DecodeString(k.X)
		raw, _ := base64.RawURLEncoding.DecodeString(sig)
		if !ed25519.Verify(pub, append([]byte(ts+"."), got.Body...), raw) {
			t.Fatalf("the signature of kid %s does not verify", kid)
		}
		return kid
	}
	t.Fatalf("kid %s is not in the JWKS %s", kid, eng.JWKS())
	return ""
}

// dsAck is a done that acks one stream.
func dsAck(wakeID string, gen int64, stream, offset string) *subscription.DSAckRequest {
	var req subscription.DSAckRequest
	if err := json.Unmarshal([]byte(`{"acks":[{"stream":"`+stream+`","offset":"`+offset+`"}]}`), &req); err != nil {
		panic(err) // a literal of the test's
	}
	req.WakeID, req.Generation, req.Done = wakeID, gen, true
	return &req
}

func TestReservedWebhookDoneAndCallback(t *testing.T) {
	t.Parallel()
	inDSRig(t, func(t *testing.T, r *dsRig, hook *testhttp.Receiver[subscription.DSWebhookBody]) {
		old := r.stream("/v1/stream/events/old", "text/plain", "abc")
		v := r.create("sub-1", `{"type":"webhook","pattern":"events/*","webhook":{"url":"`+hookURL+`"},"lease_ttl_ms":5000}`)
		if len(v.Streams) != 1 || v.Streams[0].AckedOffset != old || v.Webhook.Signing.JWKSURL != "https://herald.test/v1/stream/__ds/jwks.json" {
			t.Fatalf("created = %+v", v)
		}
		synctest.Wait()
		if n := len(hook.Requests()); n != 0 {
			t.Fatalf("%d wakes for streams linked at their tail", n)
		}
		// Synchronous done: the snapshot is acked.
		hook.SetReply(func(int, subscription.DSWebhookBody, *http.Request) (int, map[string]string, string) {
			return http.StatusOK, nil, `{"done":true}`
		})
		tail := r.stream("/v1/stream/events/new", "text/plain", "xyz")
		synctest.Wait()
		got := hook.Requests()
		if len(got) != 1 {
			t.Fatalf("got %d wakes, want 1", len(got))
		}
		verifyDS(t, r.eng, got[0])
		b := got[0].Value
		if b.SubscriptionID != "sub-1" || b.Generation != 1 || b.CallbackURL != "https://herald.test/v1/stream/__ds/subscriptions/sub-1/callback" {
			t.Fatalf("wake = %+v", b)
		}
		for _, s := range r.get("sub-1").Streams {
			if s.Path == "events/new" && s.AckedOffset != tail {
				t.Fatalf("after done, events/new acked %s, want %s", s.AckedOffset, tail)
			}
		}

		// Asynchronous: the webhook answers 2xx, then calls back.
		hook.SetReply(nil)
		tail = r.appendTo("/v1/stream/events/new", "more")
		synctest.Wait()
		got = hook.Requests()
		b = got[len(got)-1].Value
		if b.Generation != 2 {
			t.Fatalf("second wake generation %d", b.Generation)
		}
		ack := dsAck(b.WakeID, 2, "events/new", tail)
		if _, err := r.eng.Ack(context.Background(), "sub-1", "bogus", ack); !errors.Is(err, subscription.ErrTokenInvalid) {
			t.Fatalf("a callback with a bad token: %v", err)
		}
		res, err := r.eng.Ack(context.Background(), "sub-1", b.CallbackToken, ack)
		if err != nil || !res.OK || res.NextWake {
			t.Fatalf("callback = %+v, %v", res, err)
		}
		if _, err := r.eng.Ack(context.Background(), "sub-1", b.CallbackToken, ack); !errors.Is(err, subscription.ErrFenced) {
			t.Fatalf("the same callback again: %v, want FENCED", err)
		}
		// A deleted subscription's callbacks fail and advance nothing.
		r.appendTo("/v1/stream/events/new", "again")
		synctest.Wait()
		got = hook.Requests()
		b = got[len(got)-1].Value
		if err := r.eng.Delete(context.Background(), Platform, "sub-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.eng.Ack(context.Background(), "sub-1", b.CallbackToken, &subscription.DSAckRequest{WakeID: b.WakeID, Generation: b.Generation, Done: true}); !errors.Is(err, ErrSubscriptionNotFound) {
			t.Fatalf("a callback of a deleted subscription: %v", err)
		}
	})
}

// TestReservedWakesShareMaxInFlight: the reserved API's webhook wakes
// take the engine's in-flight slots, as the other front door's do: with
// MaxInFlight 1 and a webhook that has not answered yet, a second
// subscription's wake waits for the first's answer.
func TestReservedWakesShareMaxInFlight(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		hook := &testhttp.Receiver[subscription.DSWebhookBody]{}
		hook.SetReply(func(int, subscription.DSWebhookBody, *http.Request) (int, map[string]string, string) {
			<-release
			return http.StatusOK, nil, `{"done":true}`
		})
		r := newDSRigWith(t, dir, hook, func(c *EngineConfig) { c.MaxInFlight = 1 })
		defer r.crash()
		released := false
		defer func() {
			if !released {
				close(release)
			}
		}()
		for _, id := range []string{"a", "b"} {
			r.create("sub-"+id, `{"type":"webhook","streams":["events/`+id+`"],"webhook":{"url":"`+hookURL+`"}}`)
			r.stream("/v1/stream/events/"+id, "text/plain", "x")
		}
		synctest.Wait()
		if n := len(hook.Requests()); n != 1 {
			t.Fatalf("%d wakes in flight, want 1 (MaxInFlight)", n)
		}
		close(release)
		released = true
		synctest.Wait()
		if n := len(hook.Requests()); n != 2 {
			t.Fatalf("%d wakes once the first was answered, want 2", n)
		}
	})
}

// TestReservedWebhookRetryAfterCrash: a failed webhook is retried with
// the same wake after 1 s or so; a process killed with the retry due
// leaves it in the store, and the next start sends it.
func TestReservedWebhookRetryAfterCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &testhttp.Receiver[subscription.DSWebhookBody]{}
		hook.SetReply(func(int, subscription.DSWebhookBody, *http.Request) (int, map[string]string, string) {
			return http.StatusServiceUnavailable, nil, ""
		})
		r := newDSRig(t, dir, hook)
		r.create("sub-1", `{"type":"webhook","streams":["events/a"],"webhook":{"url":"`+hookURL+`"}}`)
		r.stream("/v1/stream/events/a", "text/plain", "abc")
		synctest.Wait()
		tail := r.appendTo("/v1/stream/events/a", "d")
		synctest.Wait()
		first := hook.Requests()
		if len(first) != 1 || r.get("sub-1").Status != "failed" {
			t.Fatalf("%d wakes, status %s; want 1 and failed", len(first), r.get("sub-1").Status)
		}
		r.crash()
		time.Sleep(2 * time.Second)
		hook.SetReply(func(int, subscription.DSWebhookBody, *http.Request) (int, map[string]string, string) {
			return http.StatusOK, nil, `{"done":true}`
		})
		r = newDSRig(t, dir, hook)
		defer r.crash()
		synctest.Wait()
		got := hook.Requests()
		// The same wake again (its snapshot is the tail before the second
		// append), then, once done acked it, a new one for the rest.
		if len(got) != 3 || got[1].Value.WakeID != first[0].Value.WakeID || got[1].Value.Generation != 1 || got[2].Value.Generation != 2 {
			t.Fatalf("after the restart: %d wakes, want the same wake again and then generation 2", len(got))
		}
		if v := r.get("sub-1"); v.Status != "active" || v.Streams[0].AckedOffset != tail {
			t.Fatalf("after the retries: %+v, want acked to %s", v, tail)
		}
	})
}

// TestReservedPullWake: wake events in the wake stream, claim, heartbeat,
// release, and a lease that outlives no crash.
func TestReservedPullWake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		r := newDSRig(t, dir, &testhttp.Receiver[subscription.DSWebhookBody]{})
		r.stream("/v1/stream/wake/pool", "application/json", "")
		r.create("pull-1", `{"type":"pull-wake","pattern":"events/**","wake_stream":"wake/pool","lease_ttl_ms":2000}`)
		tail := r.stream("/v1/stream/events/a/b", "text/plain", "abc")
		synctest.Wait()
		ev := r.wakeEvents("/v1/stream/wake/pool")
		if len(ev) != 1 || ev[0].Type != "wake" || ev[0].SubscriptionID != "pull-1" || ev[0].Stream != "events/a/b" || ev[0].Generation != 1 {
			t.Fatalf("wake events = %+v", ev)
		}
		ctx := context.Background()
		c, err := r.eng.Claim(ctx, Platform, "pull-1", "w1")
		if err != nil || c.Generation != 1 || len(c.Streams) != 1 || c.Streams[0].TailOffset != tail || !c.Streams[0].HasPending {
			t.Fatalf("claim = %+v, %v", c, err)
		}
		var held *subscription.ClaimedError
		if _, err := r.eng.Claim(ctx, Platform, "pull-1", "w2"); !errors.As(err, &held) || held.Holder != "w1" {
			t.Fatalf("a second claim: %v", err)
		}
		// Heartbeats keep the lease past its first term.
		for range 3 {
			time.Sleep(1500 * time.Millisecond)
			if _, err := r.eng.Ack(ctx, "pull-1", c.Token, &subscription.DSAckRequest{WakeID: c.WakeID, Generation: 1}); err != nil {
				t.Fatalf("heartbeat: %v", err)
			}
		}
		if _, err := r.eng.Claim(ctx, Platform, "pull-1", "w2"); !errors.As(err, &held) {
			t.Fatalf("the lease ended despite heartbeats: %v", err)
		}
		// The worker dies with the lease (and so does the process): after
		// a restart the lease still ends on time, and the pending work is
		// woken again.
		r.crash()
		r = newDSRig(t, dir, &testhttp.Receiver[subscription.DSWebhookBody]{})
		defer r.crash()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		ev = r.wakeEvents("/v1/stream/wake/pool")
		if len(ev) != 2 || ev[1].Generation != 2 {
			t.Fatalf("after the lease expired: wake events %+v, want generation 2", ev)
		}
		c, err = r.eng.Claim(ctx, Platform, "pull-1", "w2")
		if err != nil || c.Generation != 2 {
			t.Fatalf("claim after expiry = %+v, %v", c, err)
		}
		ack := dsAck(c.WakeID, 2, "events/a/b", tail)
		if res, err := r.eng.Ack(ctx, "pull-1", c.Token, ack); err != nil || res.NextWake {
			t.Fatalf("ack done = %+v, %v", res, err)
		}
		if _, err := r.eng.Claim(ctx, Platform, "pull-1", "w3"); !errors.Is(err, subscription.ErrNothingToClaim) {
			t.Fatalf("a claim with nothing pending: %v", err)
		}
		if v := r.get("pull-1"); v.Streams[0].AckedOffset != tail {
			t.Fatalf("the acked position = %+v, want %s", v.Streams, tail)
		}
	})
}

func TestReservedSigningKeyRotation(t *testing.T) {
	t.Parallel()
	inDSRig(t, func(t *testing.T, r *dsRig, hook *testhttp.Receiver[subscription.DSWebhookBody]) {
		before := r.create("sub-1", `{"type":"webhook","streams":["a"],"webhook":{"url":"`+hookURL+`"}}`).Webhook.Signing.Kid
		kid, err := r.eng.RotateSigningKey(context.Background())
		if err != nil || kid == before {
			t.Fatalf("rotate = %s, %v", kid, err)
		}
		var set subscription.JWKS
		if err := json.Unmarshal(r.eng.JWKS(), &set); err != nil || len(set.Keys) != 2 {
			t.Fatalf("JWKS during the overlap = %s, %v", r.eng.JWKS(), err)
		}
		r.stream("/v1/stream/a", "text/plain", "x")
		synctest.Wait()
		got := hook.Requests()
		if len(got) != 1 || verifyDS(t, r.eng, got[0]) != kid || r.get("sub-1").Webhook.Signing.Kid != kid {
			t.Fatalf("a wake after the rotation is not signed with the new key")
		}
	})
}
