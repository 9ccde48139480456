package wake

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// TestEngineRetryLadder: a webhook that keeps failing is retried with the
// backoff of docs/subscriptions.md (retries 1-10: min(2^n x 100 ms, 30 s) +
// up to 1 s; 11+: 60 s + up to 5 s), with the same epoch and wake id every
// time (S2), each signed again.
func TestEngineRetryLadder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		hook.setReply(func(subscription.WakePayload, *http.Request) (int, string) { return http.StatusInternalServerError, "" })
		r := newRig(t, dir, hook)
		defer r.close()
		secret := r.subscribe("sub", "/agents/*")
		r.createStream("/agents/a", "x")
		time.Sleep(20 * time.Minute)
		synctest.Wait()
		w := hook.wakes()
		if len(w) < 20 {
			t.Fatalf("only %d attempts in 20 minutes", len(w))
		}
		for n := 1; n < len(w); n++ {
			base, jitter := subscription.RetryBackoff(n)
			gap := w[n].At.Sub(w[n-1].At)
			if gap < base || gap > base+jitter+deadlineResolution {
				t.Errorf("retry %d came %v after attempt %d, want %v + up to %v", n, gap, n, base, jitter)
			}
			if w[n].Payload.Epoch != 1 || w[n].Payload.WakeID != w[0].Payload.WakeID {
				t.Errorf("retry %d: epoch %d wake %s, want the first's", n, w[n].Payload.Epoch, w[n].Payload.WakeID)
			}
			verifySignature(t, secret, w[n])
		}
		c := r.consumer(subscription.ConsumerID("sub", "/agents/a"))
		if c.State != "WAKING" || c.Attempts != len(w) || !c.FailingSince.Equal(w[0].At) {
			t.Fatalf("consumer = %+v", c)
		}
	})
}

// TestEngineWakingTimeout: a webhook that does not answer within 10 s is
// retried then, although its request only times out at 30 s; the late
// failure of the first attempt does not count twice.
func TestEngineWakingTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		ended := make(chan time.Time, 100)
		hook.setReply(func(_ subscription.WakePayload, req *http.Request) (int, string) {
			<-req.Context().Done() // hang until Herald gives up
			ended <- time.Now()
			return http.StatusOK, ""
		})
		r := newRig(t, dir, hook)
		defer r.close()
		r.subscribe("sub", "/agents/*")
		r.createStream("/agents/a", "x")
		synctest.Wait()
		start := hook.wakes()[0].At
		time.Sleep(40 * time.Second)
		synctest.Wait()
		w := hook.wakes()
		if len(w) < 2 {
			t.Fatalf("%d attempts after 40 s", len(w))
		}
		if gap := w[1].At.Sub(start); gap < subscription.WakingTimeout+200*time.Millisecond || gap > subscription.WakingTimeout+1200*time.Millisecond+deadlineResolution {
			t.Fatalf("first retry after %v, want 10.2 s to 11.2 s", gap)
		}
		if end := <-ended; end.Sub(start) != subscription.WebhookRequestTimeout {
			t.Fatalf("first request ended %v after it started, want %v", end.Sub(start), subscription.WebhookRequestTimeout)
		}
		// Attempts follow the ladder from the waking timeouts alone.
		c := r.consumer(subscription.ConsumerID("sub", "/agents/a"))
		if c.Attempts != len(w) {
			t.Fatalf("attempts = %d, requests = %d", c.Attempts, len(w))
		}
		// A callback claiming the wake stops the retries: the next request
		// is a new wake cycle, 45 s later, when the LIVE consumer that sent
		// no further callback goes IDLE with its event still unacked.
		r.mustCallback(c.ID, w[0].Payload.Token, body(subscription.CallbackRequest{Epoch: 1, WakeID: w[0].Payload.WakeID}))
		claimed := time.Now()
		n := len(hook.wakes())
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		w = hook.wakes()
		if len(w) <= n || w[n].Payload.Epoch != 2 || w[n].At.Sub(claimed) < subscription.LivenessTimeout {
			t.Fatalf("after the claim: %+v", w[n:])
		}
	})
}

// TestEngineGCAfterThreeDays: 3 days of continuous webhook failure remove
// the consumer, and its callbacks get CONSUMER_GONE. About 4,000 retries
// run here, so the store is the in-memory one.
func TestEngineGCAfterThreeDays(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		hook.setReply(func(subscription.WakePayload, *http.Request) (int, string) { return http.StatusBadGateway, "" })
		st := newMemStore()
		keys := rigKeyring(t)
		// Deadlines this engine sets fire on time whatever the sweep
		// interval; a long one keeps 3 days of fake time cheap.
		eng := startEngine(t, st, hook, keys, 10*time.Minute, true)
		defer eng.Stop(context.Background())
		ctx := context.Background()
		if _, err := eng.CreateSubscription(ctx, &CreateSubscriptionParams{ID: "sub", Pattern: "/agents/*", Webhook: hookURL}); err != nil {
			t.Fatal(err)
		}
		st.appendData("/agents/a", 1)
		synctest.Wait()
		id := subscription.ConsumerID("sub", "/agents/a")
		first := hook.wakes()[0]

		time.Sleep(subscription.FailureGCAfter - time.Minute)
		synctest.Wait()
		if _, err := st.ConsumerGet(ctx, id); err != nil {
			t.Fatalf("consumer a minute before 3 days: %v", err)
		}
		// Removal happens at the first failed attempt past 3 days; attempts
		// are 60 s + up to 5 s jitter apart, so look 2 minutes after.
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		if _, err := st.ConsumerGet(ctx, id); !errors.Is(err, store.ErrConsumerNotFound) {
			t.Fatalf("consumer after 3 days of failures: %v", err)
		}
		w := hook.wakes()
		last := w[len(w)-1]
		if d := last.At.Sub(first.At); d < subscription.FailureGCAfter-66*time.Second {
			t.Fatalf("last attempt %v after the first", d)
		}
		if len(w) < 3900 {
			t.Fatalf("%d attempts in 3 days", len(w))
		}
		// The removal is final: a callback for the consumer gets 410.
		tok, err := keys.Issue(subscription.TokenSubject{ConsumerID: id, Epoch: 1}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		_, err = eng.Callback(ctx, &CallbackParams{ConsumerID: id, Token: tok, Body: []byte(`{"epoch": 1}`)})
		if code, _ := subscription.CallbackErrorCode(err); code != subscription.CodeConsumerGone {
			t.Fatalf("callback after removal: %v", err)
		}
	})
}
