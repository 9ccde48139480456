package deliveryapi

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/internal/testhttp"
	"github.com/heraldstreams/herald/store"
)

// A delivery in flight shows its lease, by id and in the endpoint's list:
// the replica that holds it and until when. One waiting for its retry
// shows none, nor one delivered.
func TestDeliveryLeaseShown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		release := make(chan struct{})
		unblock := sync.OnceFunc(func() { close(release) })
		t.Cleanup(unblock) // before the engine stops: it waits for its sends
		r.rc.SetReply(func(n int, _ delivery.Event, _ *http.Request) (int, map[string]string, string) {
			if n == 0 {
				return http.StatusServiceUnavailable, nil, "busy"
			}
			<-release // the retry is in flight until released
			return http.StatusOK, nil, testhttp.DefaultBody
		})
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{EventTypes: []string{"a.*"}}})
		r.publish("a.b", "", `{"i":1}`)
		synctest.Wait()
		id := r.deliveries(ep.ID)[0].ID
		byID := func() deliveryJSON {
			t.Helper()
			var d deliveryJSON
			if code := r.call("GET", APIPrefix+"deliveries/"+id, "", &d); code != http.StatusOK {
				t.Fatalf("get: %d", code)
			}
			return d
		}
		listed := func() deliveryJSON {
			t.Helper()
			var l listDeliveriesJSON
			if code := r.call("GET", APIPrefix+"endpoints/"+ep.ID+"/deliveries", "", &l); code != http.StatusOK || len(l.Data) != 1 {
				t.Fatalf("list: %d, %d deliveries", code, len(l.Data))
			}
			return l.Data[0]
		}
		if d, l := byID(), listed(); d.Status != store.DeliveryFailed || d.Lease != nil || l.Lease != nil {
			t.Fatalf("waiting for its retry: %s with lease %+v, listed %+v", d.Status, d.Lease, l.Lease)
		}

		time.Sleep(time.Until(r.deliveries(ep.ID)[0].NextAttemptAt)) // the retry falls due, and its send blocks
		synctest.Wait()
		until := r.e.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
		for _, d := range []deliveryJSON{byID(), listed()} {
			if d.Lease == nil || d.Lease.Replica != r.st.ReplicaID() || d.Lease.Replica == "" || d.Lease.Until == nil || *d.Lease.Until != until {
				t.Fatalf("in flight: %s (%d requests) lease %+v, want replica %q until %s", d.Status, len(r.rc.Requests()), d.Lease, r.st.ReplicaID(), until)
			}
		}

		unblock()
		synctest.Wait()
		if d, l := byID(), listed(); d.Status != store.DeliveryDelivered || d.Lease != nil || l.Lease != nil {
			t.Fatalf("delivered: %s with lease %+v, listed %+v", d.Status, d.Lease, l.Lease)
		}
	})
}

// A lease whose end has passed is not shown: its holder stopped, and
// nobody sends the delivery until another replica claims it.
func TestDeliveryLeaseEnded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := &store.Delivery{Status: store.DeliveryPending, LeaseOwner: "r1", LeaseUntil: now.Add(time.Second)}
	if v := deliveryView(d, now); v.Lease == nil || v.Lease.Replica != "r1" {
		t.Fatalf("live lease shown as %+v", v.Lease)
	}
	if v := deliveryView(d, now.Add(time.Second)); v.Lease != nil {
		t.Fatalf("ended lease shown as %+v", v.Lease)
	}
}
