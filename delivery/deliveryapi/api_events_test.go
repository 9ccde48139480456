package deliveryapi

import (
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
)

// The event log lists events newest first, page by page, filtered by
// type, stream and outcome, finds one by id, and shows one event with its
// payload and every delivery it made with their attempts.
func TestEventLog(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{EventTypes: []string{"order.*"}}})
		paid := r.publish("order.paid", "/shop", `{"total":3}`)
		time.Sleep(time.Second)
		r.publish("user.created", "/users", `{}`)
		time.Sleep(time.Second)
		r.publish("order.created", "/shop", `{"total":1}`)
		synctest.Wait()

		var page, next listEventsJSON
		if code := r.call("GET", "/_herald/v1/events?limit=2", "", &page); code != 200 || len(page.Data) != 2 || page.NextCursor == nil ||
			page.Data[0].Type != "order.created" || page.Data[1].Type != "user.created" {
			t.Fatalf("first page: %d %+v", code, page)
		}
		if code := r.call("GET", "/_herald/v1/events?limit=2&cursor="+*page.NextCursor, "", &next); code != 200 || len(next.Data) != 1 ||
			next.NextCursor != nil || next.Data[0].ID != paid.Event.ID || next.Data[0].Outcome != "delivered" || next.Data[0].Deliveries["delivered"] != 1 {
			t.Fatalf("second page: %d %+v", code, next)
		}
		for q, want := range map[string]int{
			"type=order.paid": 1, "stream=/shop": 2, "outcome=none": 1, "outcome=delivered": 2, "outcome=exhausted": 0,
			"id=" + url.QueryEscape(paid.Event.ID): 1, "id=nope": 0, "tenant=acme": 0, "tenant=": 3,
		} {
			var got listEventsJSON
			if code := r.call("GET", "/_herald/v1/events?"+q, "", &got); code != 200 || len(got.Data) != want {
				t.Errorf("?%s: %d, %d events, want %d", q, code, len(got.Data), want)
			}
		}
		for _, q := range []string{"outcome=lost", "type=no%20such", "stream=relative", "since=yesterday", "cursor=xyz", "limit=0", "colour=red"} {
			if code := r.call("GET", "/_herald/v1/events?"+q, "", nil); code != 400 {
				t.Errorf("?%s: %d, want 400", q, code)
			}
		}

		var one eventJSON
		if code := r.call("GET", "/_herald/v1/events/"+paid.Event.ID, "", &one); code != 200 || one.Event == nil ||
			string(one.Event.Data) != `{"total":3}` || len(one.Matched) != 1 || one.Matched[0].EndpointID != ep.ID ||
			one.Matched[0].Status != "delivered" || len(one.Matched[0].Attempts) != 1 {
			t.Fatalf("one event: %d %+v", code, one)
		}
		for _, path := range []string{"/_herald/v1/events/nope", "/_herald/v1/events/" + paid.Event.ID + "?tenant=acme"} {
			if code := r.call("GET", path, "", nil); code != 404 {
				t.Errorf("GET %s: %d, want 404", path, code)
			}
		}
	})
}
