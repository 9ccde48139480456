package deliveryapi

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/store"
)

// Under the standard policy a 4xx other than 408, 409, 425 and 429 sends
// the delivery to the dead letter state after one attempt, with the
// reason in the delivery API; those four and 5xx are retried. Under
// retry_all (per endpoint, or the installation's default) a 404 is
// retried too.
func TestFailurePolicy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		engineDefault string
		endpoint      string
		status        int
		want          string
	}{
		{"404 standard", "", "", 404, store.DeliveryExhausted},
		{"401 standard", "", delivery.FailurePolicyStandard, 401, store.DeliveryExhausted},
		{"429 standard", "", "", 429, store.DeliveryFailed},
		{"408 standard", "", "", 408, store.DeliveryFailed},
		{"409 standard", "", "", 409, store.DeliveryFailed},
		{"425 standard", "", "", 425, store.DeliveryFailed},
		{"500 standard", "", "", 500, store.DeliveryFailed},
		{"404 retry_all endpoint", "", delivery.FailurePolicyRetryAll, 404, store.DeliveryFailed},
		{"404 retry_all default", delivery.FailurePolicyRetryAll, "", 404, store.DeliveryFailed},
		{"404 standard endpoint over retry_all default", delivery.FailurePolicyRetryAll, delivery.FailurePolicyStandard, 404, store.DeliveryExhausted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, func(cfg *dispatch.EngineConfig) { cfg.FailurePolicy = c.engineDefault })
				ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{FailurePolicy: c.endpoint}})
				r.rc.SetRespond(func(int, delivery.Event) (int, map[string]string) { return c.status, nil })
				r.publish("a.b", "", `{}`)
				synctest.Wait()
				ds := r.deliveries(ep.ID)
				if len(ds) != 1 || ds[0].Status != c.want || ds[0].Attempts != 1 {
					t.Fatalf("deliveries %+v, want one %s after one attempt", ds, c.want)
				}
				var d deliveryJSON
				if code := r.call("GET", "/_herald/v1/deliveries/"+ds[0].ID, "", &d); code != 200 {
					t.Fatalf("get delivery: %d", code)
				}
				final := c.want == store.DeliveryExhausted
				if d.Status != c.want || strings.Contains(d.LastError, "final under failure policy") != final ||
					len(d.Attempts) != 1 || d.Attempts[0].StatusCode != c.status || d.Attempts[0].Error != d.LastError {
					t.Fatalf("delivery API: %+v", d)
				}
				if !final {
					time.Sleep(10 * time.Second) // the second step of the default schedule is 5s
					synctest.Wait()
					if got := len(r.rc.Requests()); got != 2 {
						t.Fatalf("%d attempts, want a retry", got)
					}
				}
				if v := r.metric("herald_delivery_dead_letters_total"); final != (v == 1) {
					t.Fatalf("dead letters %v", v)
				}
			})
		})
	}
}
