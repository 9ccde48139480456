package deliveryapi

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
)

// An event on a stream in a tenant's namespace is that tenant's: it
// reaches the tenant's endpoints, never those of the tenant its message
// names, nor the platform's tenant-less view of another tenant.
func TestNamespaceStreamEventsAreTheNamespaceTenants(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		acme := r.endpoint(&dispatch.CreateEndpointParams{Config: delivery.EndpointConfig{Tenant: "acme"}, Active: true})
		globex := r.endpoint(&dispatch.CreateEndpointParams{Config: delivery.EndpointConfig{Tenant: "globex"}, Active: true})
		// Written as the engine's own publish would (no API check), naming
		// globex inside acme's namespace.
		if _, err := r.e.Publish(context.Background(), &dispatch.PublishParams{Tenant: "globex", Stream: "/tenants/acme/orders",
			Event: &delivery.Event{Type: "order.paid", Timestamp: time.Now().UTC(), Data: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := len(r.deliveries(acme.ID)); n != 1 {
			t.Errorf("acme's endpoint has %d deliveries, want 1", n)
		}
		if n := len(r.deliveries(globex.ID)); n != 0 {
			t.Errorf("globex's endpoint has %d deliveries of an event in acme's namespace", n)
		}
	})
}

func TestStreamTenant(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		stream, given, want string
		ok                  bool
	}{
		{"/events", "", "", true},
		{"/events", "globex", "globex", true},
		{"/tenants/acme/events", "", "acme", true},
		{"/tenants/acme/events", "acme", "acme", true},
		{"/tenants/acme/events", "globex", "", false},
	} {
		got, err := streamTenant("/tenants/{tenant}/", c.stream, c.given)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("streamTenant(%q, %q) = %q, %v", c.stream, c.given, got, err)
		}
	}
}
