package dispatch

import (
	"testing"
	"testing/synctest"

	"github.com/heraldstreams/herald/internal/testenv"
)

// The engine holds no matcher goroutine while no stream waits to be
// matched: an event starts one, which ends once it is matched. Not
// parallel: it counts the goroutines of the whole process.
func TestEngineMatchersOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		synctest.Wait()
		if n := testenv.Goroutines("delivery/dispatch.(*Engine).match"); n != 0 {
			t.Fatalf("%d matchers on an idle engine, want 0", n)
		}
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		r.publish("order.created", "", `{"n":1}`)
		synctest.Wait()
		if n := len(r.deliveries(ep.ID)); n != 1 {
			t.Fatalf("%d deliveries, want 1", n)
		}
		if n, w := testenv.Goroutines("delivery/dispatch.(*Engine).match"), r.e.queue.Workers(); n != 0 || w != 0 {
			t.Fatalf("%d matcher goroutines (%d counted) after the work, want 0", n, w)
		}
	})
}
