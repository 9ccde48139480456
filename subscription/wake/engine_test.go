package wake

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/webhook"
)

func TestEngineWakesOnNewEventsOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r := newRig(t, dir, hook)
		defer r.close()
		r.createStream("/agents/old", "abc")
		r.createStream("/other/x", "abc")
		secret := r.subscribe("sub", "/agents/*")
		synctest.Wait()

		// Existing streams: an IDLE consumer acked at the tail, no wake.
		oldID := subscription.ConsumerID("sub", "/agents/old")
		c := r.consumer(oldID)
		if c.State != "IDLE" || c.Epoch != 0 || c.Streams[0].Acked != protocol.FormatOffset(3) {
			t.Fatalf("existing stream's consumer = %+v", c)
		}
		if n := len(hook.wakes()); n != 0 {
			t.Fatalf("%d wakes before any new event", n)
		}

		// A new event wakes it, with every field of the wake request.
		r.appendData("/agents/old", "de")
		synctest.Wait()
		w := hook.wakes()
		if len(w) != 1 {
			t.Fatalf("got %d wakes, want 1", len(w))
		}
		p := w[0].Payload
		if p.ConsumerID != oldID || p.Epoch != 1 || p.PrimaryStream != "/agents/old" ||
			!slices.Equal(p.Streams, []subscription.StreamOffset{{Path: "/agents/old", Offset: protocol.FormatOffset(3)}}) ||
			!slices.Equal(p.TriggeredBy, []string{"/agents/old"}) ||
			p.Callback != "https://herald.test/callback/sub:%2Fagents%2Fold" || len(p.WakeID) < 10 {
			t.Fatalf("payload = %+v", p)
		}
		claims, err := r.keys.Verify(p.Token, oldID, time.Now())
		if err != nil || claims.Epoch != 1 {
			t.Fatalf("token: %+v, %v", claims, err)
		}
		verifySignature(t, secret, w[0])
		// A 2xx makes the consumer LIVE.
		if c := r.consumer(oldID); c.State != "LIVE" {
			t.Fatalf("state after 2xx = %s, want LIVE", c.State)
		}

		// A stream created after the subscription spawns a consumer that
		// starts at the beginning; a stream that does not match spawns none.
		r.createStream("/agents/new", "xyz")
		r.appendData("/other/x", "more")
		synctest.Wait()
		w = hook.wakes()
		if len(w) != 2 || w[1].Payload.PrimaryStream != "/agents/new" || w[1].Payload.Streams[0].Offset != subscription.OffsetStart {
			t.Fatalf("wakes = %+v", w)
		}
		if _, err := r.st.ConsumerGet(context.Background(), subscription.ConsumerID("sub", "/other/x")); !errors.Is(err, store.ErrConsumerNotFound) {
			t.Fatalf("non-matching stream got a consumer: %v", err)
		}
	})
}

// TestEngineNoLostWake is issue item 4: a synchronous {"done": true} acks
// each stream to the tail the notification was built with; an event
// appended while the webhook was being answered is pending work and
// causes a new wake.
func TestEngineNoLostWake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r := newRig(t, dir, hook)
		defer r.close()
		// Created before the subscription: its consumer waits for events.
		r.createStream("/agents/a", "")
		r.subscribe("sub", "/agents/*")
		synctest.Wait()
		first := true
		var between string
		hook.setReply(func(p subscription.WakePayload, _ *http.Request) (int, string) {
			if first {
				first = false
				between = r.appendData("/agents/a", "appended while the webhook answered")
			}
			return http.StatusOK, `{"done": true}`
		})
		tail1 := r.appendData("/agents/a", "one")
		synctest.Wait()

		w := hook.wakes()
		if len(w) != 2 {
			t.Fatalf("got %d wakes, want 2 (the event appended during the first must wake again)", len(w))
		}
		if w[1].Payload.Epoch != 2 || w[1].Payload.Streams[0].Offset != tail1 {
			t.Fatalf("second wake = %+v, want epoch 2 from offset %s", w[1].Payload, tail1)
		}
		c := r.consumer(subscription.ConsumerID("sub", "/agents/a"))
		if c.State != "IDLE" || c.Streams[0].Acked != between {
			t.Fatalf("after the second done: %+v, want IDLE acked at %s", c, between)
		}

		// Nothing new: no third wake, however long we wait.
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := len(hook.wakes()); n != 2 {
			t.Fatalf("got %d wakes, want 2", n)
		}
	})
}

func TestEngineLiveUntilLivenessTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r := newRig(t, dir, hook)
		defer r.close()
		r.subscribe("sub", "/agents/*")
		r.createStream("/agents/a", "one")
		synctest.Wait()
		id := subscription.ConsumerID("sub", "/agents/a")
		if c := r.consumer(id); c.State != "LIVE" {
			t.Fatalf("state = %s, want LIVE", c.State)
		}
		// Wake batching: events while LIVE do not wake again.
		r.appendData("/agents/a", "two")
		r.appendData("/agents/a", "three")
		synctest.Wait()
		if n := len(hook.wakes()); n != 1 {
			t.Fatalf("%d wakes while LIVE, want 1", n)
		}
		// A keep-alive callback at 30 s restarts the 45 s timer.
		time.Sleep(30 * time.Second)
		synctest.Wait()
		tok := hook.wakes()[0].Payload.Token
		r.mustCallback(id, tok, `{"epoch": 1}`)
		time.Sleep(44 * time.Second)
		synctest.Wait()
		if c := r.consumer(id); c.State != "LIVE" {
			t.Fatalf("state 44 s after a callback = %s, want LIVE", c.State)
		}
		// 45 s without a callback: IDLE, and the unacked events wake it
		// again at once (epoch 2).
		time.Sleep(time.Second + deadlineResolution)
		synctest.Wait()
		w := hook.wakes()
		if len(w) != 2 || w[1].Payload.Epoch != 2 || w[1].Payload.WakeID == w[0].Payload.WakeID {
			t.Fatalf("wakes after the liveness timeout = %+v", w)
		}
	})
}

func TestEngineCallbacks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		hook.setReply(func(subscription.WakePayload, *http.Request) (int, string) { return http.StatusServiceUnavailable, "" })
		// A long sweep interval keeps the hour this test lets pass cheap;
		// the engine's own deadlines fire on time regardless.
		r := newRigSweep(t, dir, hook, 10*time.Minute)
		defer r.close()
		r.subscribe("sub", "/agents/*")
		r.createStream("/agents/a", "hello")
		synctest.Wait()
		id := subscription.ConsumerID("sub", "/agents/a")
		wake := hook.wakes()[0].Payload
		tok := wake.Token
		tail := protocol.FormatOffset(5)

		// Errors of the callback error table; none changes the consumer.
		before := r.consumer(id)
		r.wantCallbackError(id, "", `{"epoch": 1}`, subscription.CodeTokenInvalid)
		r.wantCallbackError(id, "not.a.token", `{"epoch": 1}`, subscription.CodeTokenInvalid)
		other, err := r.keys.Issue(subscription.TokenSubject{ConsumerID: subscription.ConsumerID("sub", "/agents/b"), Epoch: 1}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		r.wantCallbackError(id, other, `{"epoch": 1}`, subscription.CodeTokenInvalid)
		if ce := r.wantCallbackError(id, tok, `{"wake_id": "x"}`, subscription.CodeInvalidRequest); ce.Token == "" {
			t.Fatal("an error after a valid token carries a token")
		}
		r.wantCallbackError(id, tok, `not json`, subscription.CodeInvalidRequest)
		r.wantCallbackError(id, tok, body(subscription.CallbackRequest{Epoch: 1, WakeID: "w_other"}), subscription.CodeAlreadyClaimed)
		r.wantCallbackError(id, tok, body(subscription.CallbackRequest{Epoch: 1, Subscribe: []string{"/tools/t"},
			Acks: []subscription.StreamOffset{{Path: "/agents/a", Offset: protocol.FormatOffset(6)}}}), subscription.CodeInvalidOffset)
		r.wantCallbackError("sub:%2Fagents%2Fnone", tok, `{"epoch": 1}`, subscription.CodeTokenInvalid)
		if after := r.consumer(id); after.Version != before.Version {
			t.Fatalf("failed callbacks changed the consumer: %+v -> %+v", before, after)
		}

		// Claim by callback while the webhook is being retried; claiming
		// again is idempotent.
		resp := r.mustCallback(id, tok, body(subscription.CallbackRequest{Epoch: 1, WakeID: wake.WakeID}))
		if !resp.OK || resp.Token == "" || !slices.Equal(resp.Streams, []subscription.StreamOffset{{Path: "/agents/a", Offset: subscription.OffsetStart}}) {
			t.Fatalf("claim response = %+v", resp)
		}
		if c := r.consumer(id); c.State != "LIVE" || !c.NextRetryAt.IsZero() {
			t.Fatalf("after the claim: %+v", c)
		}
		r.mustCallback(id, resp.Token, body(subscription.CallbackRequest{Epoch: 1, WakeID: wake.WakeID}))

		// Ack, and subscribe to a stream that does not exist yet (lazy,
		// starts at the tail).
		resp = r.mustCallback(id, resp.Token, body(subscription.CallbackRequest{Epoch: 1,
			Acks: []subscription.StreamOffset{{Path: "/agents/a", Offset: tail}}, Subscribe: []string{"/tools/t"}}))
		if !slices.Equal(resp.Streams, []subscription.StreamOffset{{Path: "/agents/a", Offset: tail}, {Path: "/tools/t", Offset: subscription.OffsetStart}}) {
			t.Fatalf("streams = %+v", resp.Streams)
		}
		// Done without pending work: IDLE, no wake.
		r.mustCallback(id, resp.Token, `{"epoch": 1, "done": true}`)
		synctest.Wait()
		if c := r.consumer(id); c.State != "IDLE" {
			t.Fatalf("state after done = %s", c.State)
		}
		n := len(hook.wakes())

		// The secondary stream is created and gets an event: the consumer
		// wakes for it (epoch 2); the epoch-1 token is now stale.
		hook.setReply(nil)
		r.createStream("/tools/t", "")
		r.appendData("/tools/t", "tool output")
		synctest.Wait()
		w := hook.wakes()
		if len(w) != n+1 || w[n].Payload.Epoch != 2 || !slices.Equal(w[n].Payload.TriggeredBy, []string{"/tools/t"}) {
			t.Fatalf("wakes = %+v", w[n:])
		}
		r.wantCallbackError(id, resp.Token, `{"epoch": 1}`, subscription.CodeStaleEpoch)

		// An expired token gets a new one in the error response, which
		// works.
		time.Sleep(subscription.TokenTTL)
		synctest.Wait()
		ce := r.wantCallbackError(id, w[n].Payload.Token, `{"epoch": 2}`, subscription.CodeTokenExpired)
		if claims, err := r.keys.Verify(ce.Token, id, time.Now()); err != nil || claims.Epoch != 2 {
			t.Fatalf("renewed token: %+v, %v", claims, err)
		}
		// Meanwhile the unacked event woke the consumer again after every
		// liveness timeout (L1): the renewed epoch-2 token is stale.
		r.wantCallbackError(id, ce.Token, `{"epoch": 2}`, subscription.CodeStaleEpoch)
		w = hook.wakes()
		last := w[len(w)-1].Payload
		// (TokenTTL/LivenessTimeout timeouts, give or take the one at the
		// edge of the hour.)
		if n := int64(subscription.TokenTTL / subscription.LivenessTimeout); last.Epoch < n+1 || last.Epoch > n+2 {
			t.Fatalf("epoch after an hour of liveness timeouts = %d, want %d or %d", last.Epoch, n+1, n+2)
		}

		// Unsubscribing from every stream removes the consumer; later
		// callbacks get CONSUMER_GONE.
		resp = r.mustCallback(id, last.Token, body(subscription.CallbackRequest{Epoch: last.Epoch, Unsubscribe: []string{"/agents/a", "/tools/t"}}))
		if len(resp.Streams) != 0 || resp.Streams == nil {
			t.Fatalf("streams after unsubscribing from all = %#v", resp.Streams)
		}
		r.wantCallbackError(id, resp.Token, body(subscription.CallbackRequest{Epoch: last.Epoch}), subscription.CodeConsumerGone)
	})
}

func TestEngineRemovesConsumers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r := newRig(t, dir, hook)
		defer r.close()
		r.subscribe("sub", "/agents/*")
		r.subscribe("sub2", "/agents/**")
		r.createStream("/agents/a", "x")
		r.createStream("/agents/b", "x")
		r.createStream("/common/s", "")
		synctest.Wait()
		a, b := subscription.ConsumerID("sub", "/agents/a"), subscription.ConsumerID("sub", "/agents/b")
		tokA, tokB := "", ""
		for _, w := range hook.wakes() {
			switch w.Payload.ConsumerID {
			case a:
				tokA = w.Payload.Token
			case b:
				tokB = w.Payload.Token
			}
		}
		// Two subscriptions matching a stream: independent consumers.
		if len(hook.wakes()) != 4 {
			t.Fatalf("got %d wakes, want 4", len(hook.wakes()))
		}
		r.mustCallback(b, tokB, body(subscription.CallbackRequest{Epoch: 1, Subscribe: []string{"/common/s"}}))

		// Deleting a secondary stream drops it from the consumer.
		r.deleteStream("/common/s")
		synctest.Wait()
		if c := r.consumer(b); len(c.Streams) != 1 || c.Streams[0].Path != "/agents/b" {
			t.Fatalf("consumer after its secondary was deleted: %+v", c)
		}
		// Deleting the primary stream removes the consumer (S7).
		r.deleteStream("/agents/a")
		synctest.Wait()
		r.wantCallbackError(a, tokA, `{"epoch": 1}`, subscription.CodeConsumerGone)
		// Deleting the subscription removes its consumers at once.
		if err := r.eng.DeleteSubscription(context.Background(), Platform, "/agents/*", "sub"); err != nil {
			t.Fatal(err)
		}
		r.wantCallbackError(b, tokB, `{"epoch": 1}`, subscription.CodeConsumerGone)
		if c := r.consumer(subscription.ConsumerID("sub2", "/agents/b")); c.SubscriptionID != "sub2" {
			t.Fatalf("the other subscription's consumer: %+v", c)
		}
		// An append after the deletion spawns nothing for the deleted one.
		r.appendData("/agents/b", "y")
		synctest.Wait()
		if _, err := r.st.ConsumerGet(context.Background(), b); !errors.Is(err, store.ErrConsumerNotFound) {
			t.Fatalf("consumer of a deleted subscription: %v", err)
		}
	})
}

func TestEngineSubscriptionAPI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, dir, &receiver{})
		defer r.close()
		ctx := context.Background()
		create := func(id, pattern, hook, desc string) (*CreateSubscriptionResult, error) {
			return r.eng.CreateSubscription(ctx, &CreateSubscriptionParams{ID: id, Pattern: pattern, Webhook: hook, Description: desc})
		}
		res, err := create("s1", "/agents/%2A", hookURL, "d")
		if err != nil || !res.Created || res.Subscription.Pattern != "/agents/*" || res.Subscription.WebhookSecret == "" {
			t.Fatalf("create: %+v, %v", res, err)
		}
		// Same configuration (with * for %2A): 200 without the secret.
		res, err = create("s1", "/agents/*", hookURL, "d")
		if err != nil || res.Created || res.Subscription.WebhookSecret != "" {
			t.Fatalf("idempotent create: %+v, %v", res, err)
		}
		if _, err := create("s1", "/agents/*", hookURL, "other"); !errors.Is(err, ErrSubscriptionExists) {
			t.Fatalf("conflicting create: %v", err)
		}
		if _, err := create("s2", "/x/*", "http://10.0.0.1/hook", ""); !errors.Is(err, webhook.ErrURLRefused) {
			t.Fatalf("private webhook: %v", err)
		}
		if _, err := create("s2", "/x/*", "ftp://example.com/", ""); !errors.Is(err, webhook.ErrURLRefused) {
			t.Fatalf("ftp webhook: %v", err)
		}
		if _, err := create("bad id", "/x/*", hookURL, ""); !errors.Is(err, subscription.ErrInvalidSubscriptionID) {
			t.Fatalf("bad id: %v", err)
		}
		if _, err := create("s2", "/x/a*", hookURL, ""); err == nil {
			t.Fatal("a partial wildcard was accepted")
		}
		if _, err := create("s3", "/other/**", hookURL, ""); err != nil {
			t.Fatal(err)
		}
		got, err := r.eng.GetSubscription(ctx, Platform, "s1")
		if err != nil || got.WebhookSecret != "" || got.Description != "d" {
			t.Fatalf("get: %+v, %v", got, err)
		}
		if _, err := r.eng.GetSubscription(ctx, Platform, "nope"); !errors.Is(err, ErrSubscriptionNotFound) {
			t.Fatalf("get absent: %v", err)
		}
		all, err := r.eng.ListSubscriptions(ctx, Platform, AllPattern)
		if err != nil || len(all) != 2 || all[0].SubscriptionID != "s1" || all[1].SubscriptionID != "s3" {
			t.Fatalf("list all: %+v, %v", all, err)
		}
		some, err := r.eng.ListSubscriptions(ctx, Platform, "/agents/*")
		if err != nil || len(some) != 1 || some[0].SubscriptionID != "s1" {
			t.Fatalf("list by pattern: %+v, %v", some, err)
		}
		if err := r.eng.DeleteSubscription(ctx, Platform, "/other/*", "s1"); !errors.Is(err, ErrSubscriptionNotFound) {
			t.Fatalf("delete under another pattern: %v", err)
		}
		if err := r.eng.DeleteSubscription(ctx, Platform, "/agents/*", "s1"); err != nil {
			t.Fatal(err)
		}
		if err := r.eng.DeleteSubscription(ctx, Platform, "/agents/*", "s1"); !errors.Is(err, ErrSubscriptionNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
	})
}

// TestEngineDoneWithPendingRewakes: L3 through the callback API. A done
// callback while events the consumer has not acked exist starts a new
// wake cycle at once, with the next epoch; the old epoch is fenced.
func TestEngineDoneWithPendingRewakes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r := newRig(t, dir, hook)
		defer r.close()
		r.subscribe("sub", "/agents/*")
		r.createStream("/agents/a", "one")
		synctest.Wait()
		id := subscription.ConsumerID("sub", "/agents/a")
		w := hook.wakes()[0].Payload
		resp := r.mustCallback(id, w.Token, body(subscription.CallbackRequest{Epoch: 1, WakeID: w.WakeID,
			Acks: []subscription.StreamOffset{{Path: "/agents/a", Offset: protocol.FormatOffset(3)}}}))
		r.appendData("/agents/a", "two") // while LIVE: no wake yet
		synctest.Wait()
		if n := len(hook.wakes()); n != 1 {
			t.Fatalf("%d wakes while LIVE", n)
		}
		r.mustCallback(id, resp.Token, `{"epoch": 1, "done": true}`)
		synctest.Wait()
		ws := hook.wakes()
		if len(ws) != 2 || ws[1].Payload.Epoch != 2 || ws[1].Payload.Streams[0].Offset != protocol.FormatOffset(3) {
			t.Fatalf("wakes after done with pending work: %+v", ws)
		}
		r.wantCallbackError(id, resp.Token, `{"epoch": 1}`, subscription.CodeStaleEpoch)
	})
}

// TestEngineMembershipsFollowCallbacks: a stream that already had events
// (so the engine knows who listens to it) gets a new listener by a
// callback's subscribe: its next event wakes that consumer; after an
// unsubscribe, it no longer does.
func TestEngineMembershipsFollowCallbacks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		hook.setReply(func(subscription.WakePayload, *http.Request) (int, string) { return http.StatusOK, `{"done": true}` })
		r := newRig(t, dir, hook)
		defer r.close()
		r.subscribe("sub", "/agents/*")
		r.createStream("/common/s", "")
		r.appendData("/common/s", "before anyone listens")
		r.createStream("/agents/a", "x")
		synctest.Wait()
		id := subscription.ConsumerID("sub", "/agents/a")
		r.appendData("/agents/a", "y") // wake, claimed by the callbacks below
		hook.setReply(nil)
		synctest.Wait()
		w := hook.wakes()
		last := w[len(w)-1].Payload
		resp := r.mustCallback(id, last.Token, body(subscription.CallbackRequest{Epoch: last.Epoch, Subscribe: []string{"/common/s"},
			Acks: []subscription.StreamOffset{{Path: "/agents/a", Offset: protocol.FormatOffset(2)}}}))
		r.mustCallback(id, resp.Token, body(subscription.CallbackRequest{Epoch: last.Epoch, Done: true}))
		synctest.Wait()
		n := len(hook.wakes())

		r.appendData("/common/s", "for the new listener")
		synctest.Wait()
		w = hook.wakes()
		if len(w) != n+1 || !slices.Equal(w[n].Payload.TriggeredBy, []string{"/common/s"}) {
			t.Fatalf("wakes after an event on the subscribed stream: %+v", w[n:])
		}
		p := w[n].Payload
		resp = r.mustCallback(id, p.Token, body(subscription.CallbackRequest{Epoch: p.Epoch, Unsubscribe: []string{"/common/s"}, Done: true}))
		synctest.Wait()
		n = len(hook.wakes())
		r.appendData("/common/s", "nobody listens")
		synctest.Wait()
		if got := len(hook.wakes()); got != n {
			t.Fatalf("%d wakes after unsubscribing", got-n)
		}
	})
}
