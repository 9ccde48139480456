package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// Issue item 1: deliveries are signed the Standard Webhooks way, verified
// here by the official library; webhook-id is the event id, stable across
// retries; a rotation signs with both secrets during the overlap.
func TestEngineSignsStandardWebhooks(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		r.rc.SetRespond(func(n int, ev delivery.Event) (int, map[string]string) {
			if n == 0 {
				return http.StatusInternalServerError, nil // one retry, to see the id stay
			}
			return http.StatusOK, nil
		})
		pub := r.publish("order.created", "", `{"n":1}`)
		synctest.Wait()
		time.Sleep(5 * time.Second) // the second step of the schedule
		synctest.Wait()
		got := r.rc.Requests()
		if len(got) != 2 {
			t.Fatalf("%d requests, want 2", len(got))
		}
		wh, err := standardwebhooks.NewWebhook(ep.Secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if err := wh.Verify(g.Body, g.Header); err != nil {
				t.Fatalf("the official library refuses Herald's signature: %v", err)
			}
			if id := g.Header.Get("webhook-id"); id != pub.Event.ID {
				t.Fatalf("webhook-id %q, want the event id %q", id, pub.Event.ID)
			}
			if g.Event.Type != "order.created" || string(g.Event.Data) != `{"n":1}` || g.Event.ID != pub.Event.ID {
				t.Fatalf("body %s", g.Body)
			}
		}

		rotated, err := r.e.RotateSecret(context.Background(), ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		r.publish("order.created", "", `{"n":2}`)
		synctest.Wait()
		last := r.rc.Requests()[2]
		for _, secret := range []string{ep.Secret, rotated.Secret} {
			wh, _ := standardwebhooks.NewWebhook(secret)
			if err := wh.Verify(last.Body, last.Header); err != nil {
				t.Fatalf("during the overlap, secret %s does not verify: %v", secret[:10], err)
			}
		}
		time.Sleep(delivery.DefaultRotationOverlap)
		r.publish("order.created", "", `{"n":3}`)
		synctest.Wait()
		after := r.rc.Requests()[3]
		old, _ := standardwebhooks.NewWebhook(ep.Secret)
		if err := old.Verify(after.Body, after.Header); err == nil {
			t.Fatal("the old secret still verifies after the overlap")
		}
		cur, _ := standardwebhooks.NewWebhook(rotated.Secret)
		if err := cur.Verify(after.Body, after.Header); err != nil {
			t.Fatal(err)
		}
	})
}

// Issue item 2: every failure is retried on the schedule (default 0, 5s,
// 5m, 30m, 2h, 8h, 24h); Retry-After on 429/503 lengthens a step; after
// the last attempt the delivery is exhausted and counted as a dead letter.
func TestEngineRetryScheduleAndDeadLetter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		r.rc.SetRespond(func(n int, ev delivery.Event) (int, map[string]string) {
			if n == 2 {
				return http.StatusServiceUnavailable, map[string]string{"Retry-After": "3600"}
			}
			return http.StatusInternalServerError, nil
		})
		start := time.Now()
		r.publish("job.failed", "", `{}`)
		synctest.Wait()
		time.Sleep(40 * time.Hour)
		synctest.Wait()
		got := r.rc.Requests()
		// Attempt 3 answered 503 with Retry-After: 1h, so attempt 4 waits
		// max(30m, 1h) = 1h.
		want := []time.Duration{0, 5 * time.Second, 5 * time.Minute, time.Hour, 2 * time.Hour, 8 * time.Hour, 24 * time.Hour}
		if len(got) != len(want) {
			t.Fatalf("%d attempts, want %d", len(got), len(want))
		}
		prev := start
		for i, g := range got {
			if d := g.At.Sub(prev); d != want[i] {
				t.Fatalf("attempt %d came %v after the previous, want %v", i+1, d, want[i])
			}
			prev = g.At
		}
		ds := r.deliveries(ep.ID)
		if len(ds) != 1 || ds[0].Status != store.DeliveryExhausted || ds[0].Attempts != 7 || ds[0].LastStatusCode != 500 {
			t.Fatalf("delivery = %+v", ds)
		}
		atts, err := r.st.DeliveryAttempts(context.Background(), ds[0].ID)
		if err != nil || len(atts) != 7 || atts[2].StatusCode != 503 || string(atts[0].ResponseBody) != `{"received":true}` || atts[0].Error != "HTTP 500" {
			t.Fatalf("attempts = %+v, %v", atts, err)
		}
		if n := r.metric("herald_delivery_dead_letters_total"); n != 1 {
			t.Fatalf("dead letters metric = %v", n)
		}
		if n := r.metric("herald_delivery_attempts_total", "outcome", "retrying"); n != 6 {
			t.Fatalf("retrying metric = %v", n)
		}
		// A success after failures resets the breaker count (item 3).
		ep2, _ := r.st.EndpointGet(context.Background(), ep.ID)
		if ep2.Health.ConsecutiveFailures != 7 {
			t.Fatalf("failures = %d", ep2.Health.ConsecutiveFailures)
		}
		r.rc.SetRespond(nil)
		r.publish("job.ok", "", `{}`)
		synctest.Wait()
		ep2, _ = r.st.EndpointGet(context.Background(), ep.ID)
		if ep2.Health.ConsecutiveFailures != 0 || ep2.Health.LastSuccessAt.IsZero() {
			t.Fatalf("after a success: %+v", ep2.Health)
		}
	})
}

// Issue item 3: N consecutive failures disable the endpoint with a reason
// and time; its pending deliveries are kept and resume when it is
// re-enabled.
func TestEngineBreakerKeepsAndResumes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *EngineConfig) {
			c.BreakerThreshold = 3
			c.RetrySchedule = delivery.Schedule{0, time.Second, time.Second, time.Second, time.Second}
		})
		ep := r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{MaxInFlight: 1}})
		r.rc.SetRespond(func(int, delivery.Event) (int, map[string]string) { return http.StatusBadGateway, nil })
		for i := range 5 {
			r.publish("a.b", "", fmt.Sprintf(`{"i":%d}`, i))
		}
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		got, err := r.st.EndpointGet(context.Background(), ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status() != store.EndpointDisabled || got.Health.DisabledReason == "" || got.Health.DisabledAt.IsZero() {
			t.Fatalf("endpoint = %+v", got.Health)
		}
		if n := len(r.rc.Requests()); n != 3 {
			t.Fatalf("%d attempts, want 3 (the breaker stops at the threshold)", n)
		}
		backlog, _ := r.st.DeliveryBacklog(context.Background())
		if backlog[ep.ID] != 5 {
			t.Fatalf("backlog %v, want the 5 deliveries kept", backlog)
		}
		// Disabled: new events are still recorded, not sent.
		r.publish("a.b", "", `{"i":5}`)
		synctest.Wait()
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(r.rc.Requests()); n != 3 {
			t.Fatalf("a disabled endpoint got %d requests", n)
		}
		r.rc.SetRespond(nil)
		if _, err := r.e.UpdateEndpoint(context.Background(), &UpdateEndpointParams{ID: ep.ID, Config: ConfigOf(got), Active: true, Reenable: true, ExpectVersion: got.Version}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		for _, d := range r.deliveries(ep.ID) {
			if d.Status != store.DeliveryDelivered {
				t.Fatalf("after re-enabling: %s is %s", d.EventID, d.Status)
			}
		}
		if len(r.deliveries(ep.ID)) != 6 {
			t.Fatal("deliveries lost")
		}
	})
}

// Issue item 4: a delivery claimed by a sender that died is claimed again
// once its lease ends.
func TestEngineReclaimsExpiredLease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *EngineConfig) { c.Lease = 30 * time.Second })
		ep := r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{MaxInFlight: 1}})
		// A sender elsewhere claims the delivery first and dies: pause the
		// endpoint so the engine cannot claim it before, claim directly.
		cur, _ := r.st.EndpointGet(context.Background(), ep.ID)
		if _, err := r.e.UpdateEndpoint(context.Background(), &UpdateEndpointParams{ID: ep.ID, Config: ConfigOf(cur), Active: false, ExpectVersion: cur.Version}); err != nil {
			t.Fatal(err)
		}
		r.publish("x.y", "", `{}`)
		synctest.Wait()
		// The engine learns of the change through the store's invalidation
		// feed; holding its load lock keeps it from reloading the endpoint
		// (and claiming the delivery) until the other sender has claimed.
		r.e.loadMu.Lock()
		cur, _ = r.st.EndpointGet(context.Background(), ep.ID)
		cur.Active = true
		if _, err := r.st.EndpointUpdate(context.Background(), &store.EndpointUpdateParams{Endpoint: *cur, ExpectVersion: cur.Version, Now: time.Now()}); err != nil {
			r.e.loadMu.Unlock()
			t.Fatal(err)
		}
		claimed, err := r.st.DeliveryClaim(context.Background(), &store.DeliveryClaimParams{EndpointID: ep.ID, Limit: 1, Lease: 30 * time.Second, Now: time.Now()})
		r.e.loadMu.Unlock()
		if err != nil || len(claimed.Deliveries) != 1 {
			t.Fatalf("claim = %+v, %v", claimed, err)
		}
		start := time.Now()
		if err := r.e.EndpointChanged(context.Background(), ep.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := len(r.rc.Requests()); n != 0 {
			t.Fatal("a leased delivery was sent before its lease ended")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		got := r.rc.Requests()
		if len(got) != 1 || got[0].At.Sub(start) != 30*time.Second {
			t.Fatalf("requests %d, first after %v; want 1 after the 30s lease", len(got), got[0].At.Sub(start))
		}
	})
}
