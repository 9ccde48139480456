package dispatch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery/internal/deliverytest"
	"github.com/heraldstreams/herald/store"
)

// TestEngineEndpointsOfAnotherReplica: an endpoint created, changed,
// disabled by its breaker and deleted through the store by someone else
// (another replica) reaches the engine's cache through the invalidation
// feed, with no sweep.
func TestEngineEndpointsOfAnotherReplica(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ctx := context.Background()
		cached := func() *store.Endpoint {
			synctest.Wait()
			if le := r.e.endpoint("ep_other"); le != nil {
				return &le.ep
			}
			return nil
		}
		ep, err := r.st.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: store.Endpoint{
			ID: "ep_other", URL: deliverytest.HookURL, EventTypes: []string{"*"}, Streams: []string{"/**"}, Active: true, Ordering: "none", Secret: "whsec_a",
		}, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if got := cached(); got == nil || !got.Active {
			t.Fatalf("cached after a create elsewhere = %+v", got)
		}
		ep.Active = false
		if ep, err = r.st.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *ep, ExpectVersion: ep.Version, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if got := cached(); got == nil || got.Active || got.Version != ep.Version {
			t.Fatalf("cached after an update elsewhere = %+v, want version %d paused", got, ep.Version)
		}
		h := store.EndpointHealth{ConsecutiveFailures: 10, DisabledAt: time.Now(), DisabledReason: "10 failures"}
		if _, err := r.st.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep_other", Health: h,
			ExpectHealthVersion: ep.HealthVersion, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if got := cached(); got == nil || got.Health.DisabledAt.IsZero() {
			t.Fatalf("cached after the breaker opened elsewhere = %+v", got)
		}
		if err := r.st.EndpointDelete(ctx, "ep_other"); err != nil {
			t.Fatal(err)
		}
		if got := cached(); got != nil {
			t.Fatalf("cached after a delete elsewhere = %+v", got)
		}
	})
}

// TestEngineResetReloadsEndpoints: when the store's feed says that
// everything is invalid (a shared store's feed was lost and is back), the
// engine reads every endpoint again.
func TestEngineResetReloadsEndpoints(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		// The engine's own cache loses an endpoint, as if its change
		// had been missed.
		ep := r.endpoint(&CreateEndpointParams{})
		r.e.uninstall(ep.ID)
		hub, ok := r.st.Notifier().(*store.Hub)
		if !ok {
			t.Fatal("the embedded store's notifier is not a Hub")
		}
		hub.Reset()
		synctest.Wait()
		if r.e.endpoint(ep.ID) == nil {
			t.Fatal("endpoint not read again after a reset")
		}
	})
}
