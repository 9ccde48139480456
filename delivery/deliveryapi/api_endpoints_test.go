package deliveryapi

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
)

// An endpoint without a schedule of its own shows the engine's
// configured default.
func TestEndpointShowsTheDefaultSchedule(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *dispatch.EngineConfig) { c.RetrySchedule = delivery.Schedule{0, time.Second} })
		def := r.endpoint(&dispatch.CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{EventTypes: []string{"def.*"}}})
		var v endpointJSON
		if code := r.call("GET", "/_herald/v1/endpoints/"+def.ID, "", &v); code != 200 || len(v.RetrySchedule) != 2 {
			t.Fatalf("GET: %d, shown schedule %v, want the engine default", code, v.RetrySchedule)
		}
	})
}
