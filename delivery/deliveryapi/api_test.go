package deliveryapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

type apiErr struct {
	Error struct {
		Code    string
		Message string
		Field   string
	}
}

// Issue item 10: bad input gets a clear 4xx with a JSON error code, and
// nothing is stored.
func TestAPIBadInput(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		var ep endpointJSON
		if code := r.call("POST", "/_herald/v1/endpoints", `{"url":"`+hookURL+`"}`, &ep); code != http.StatusCreated {
			t.Fatalf("create: %d", code)
		}
		big := `{"type":"a.b","data":"` + strings.Repeat("x", delivery.DefaultMaxEventBytes) + `"}`
		for _, c := range []struct {
			name, method, path, body string
			status                   int
			code                     string
		}{
			{"malformed url", "POST", "/_herald/v1/endpoints", `{"url":"http://exa mple.com/x"}`, 400, "URL_REFUSED"},
			{"not http", "POST", "/_herald/v1/endpoints", `{"url":"ftp://example.com/x"}`, 400, "URL_REFUSED"},
			{"http outside the allow list", "POST", "/_herald/v1/endpoints", `{"url":"http://93.184.216.34/x"}`, 400, "URL_REFUSED"},
			{"ssrf", "POST", "/_herald/v1/endpoints", `{"url":"https://169.254.169.254/latest"}`, 400, "URL_REFUSED"},
			{"bad type pattern", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","event_types":["a.*.b"]}`, 400, "INVALID_EVENT_TYPE_PATTERN"},
			{"bad stream pattern", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","streams":["no-slash"]}`, 400, "INVALID_STREAM_PATTERN"},
			{"bad schedule", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","retry_schedule":["5s","-1s"]}`, 400, "INVALID_RETRY_SCHEDULE"},
			{"empty schedule", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","retry_schedule":[]}`, 400, "INVALID_RETRY_SCHEDULE"},
			{"bad filter", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","filter":{"data.x":{"gt":true}}}`, 400, "INVALID_FILTER"},
			{"bad ordering", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","ordering":"fifo"}`, 400, "INVALID_ORDERING"},
			{"bad rate", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","rate_limit":-1}`, 400, "INVALID_RATE_LIMIT"},
			{"bad header", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","headers":{"webhook-id":"x"}}`, 400, "INVALID_HEADER"},
			{"bad secret", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","secret":"hunter2"}`, 400, "INVALID_SECRET"},
			{"unknown field", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","event_type":["a.b"]}`, 400, "UNKNOWN_FIELD"},
			{"wrong type", "POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `","max_in_flight":"3"}`, 400, "INVALID_JSON"},
			{"not json", "POST", "/_herald/v1/endpoints", `{"url":`, 400, "INVALID_JSON"},
			{"patch unknown", "PATCH", "/_herald/v1/endpoints/" + ep.ID, `{"colour":"red"}`, 400, "UNKNOWN_FIELD"},
			{"patch secret", "PATCH", "/_herald/v1/endpoints/" + ep.ID, `{"secret":"whsec_x"}`, 400, "UNKNOWN_FIELD"},
			{"patch bad schedule", "PATCH", "/_herald/v1/endpoints/" + ep.ID, `{"retry_schedule":"5s"}`, 400, "INVALID_RETRY_SCHEDULE"},
			{"missing endpoint", "GET", "/_herald/v1/endpoints/ep_nope", ``, 404, "ENDPOINT_NOT_FOUND"},
			{"missing delivery", "GET", "/_herald/v1/deliveries/dlv_nope", ``, 404, "DELIVERY_NOT_FOUND"},
			{"unknown parameter", "GET", "/_herald/v1/endpoints/" + ep.ID + "/deliveries?state=failed", ``, 400, "UNKNOWN_PARAMETER"},
			{"bad status", "GET", "/_herald/v1/endpoints/" + ep.ID + "/deliveries?status=done", ``, 400, "INVALID_PARAMETER"},
			{"bad since", "GET", "/_herald/v1/endpoints/" + ep.ID + "/deliveries?since=yesterday", ``, 400, "INVALID_PARAMETER"},
			{"bad limit", "GET", "/_herald/v1/endpoints?limit=0", ``, 400, "INVALID_PARAMETER"},
			{"replay without since", "POST", "/_herald/v1/endpoints/" + ep.ID + "/replay", `{}`, 400, "INVALID_PARAMETER"},
			{"replay bad offset", "POST", "/_herald/v1/endpoints/" + ep.ID + "/replay", `{"offset":"12"}`, 400, "INVALID_PARAMETER"},
			{"replay unsourced stream", "POST", "/_herald/v1/endpoints/" + ep.ID + "/replay", `{"offset":"-1","stream":"/_herald/x"}`, 400, "INVALID_STREAM"},
			{"event without type", "POST", "/_herald/v1/events", `{"data":{}}`, 400, "INVALID_EVENT_TYPE"},
			{"event bad type", "POST", "/_herald/v1/events", `{"type":"a..b"}`, 400, "INVALID_EVENT_TYPE"},
			{"event unknown field", "POST", "/_herald/v1/events", `{"type":"a.b","payload":{}}`, 400, "UNKNOWN_FIELD"},
			{"event bad timestamp", "POST", "/_herald/v1/events", `{"type":"a.b","timestamp":"now"}`, 400, "INVALID_PARAMETER"},
			{"event reserved stream", "POST", "/_herald/v1/events", `{"type":"a.b","stream":"/_herald/x"}`, 400, "INVALID_STREAM"},
			{"event too large", "POST", "/_herald/v1/events", big, 413, "EVENT_TOO_LARGE"},
			{"event not an object", "POST", "/_herald/v1/events", `[1]`, 400, "INVALID_EVENT"},
		} {
			var e apiErr
			if code := r.call(c.method, c.path, c.body, &e); code != c.status || e.Error.Code != c.code || e.Error.Message == "" {
				t.Errorf("%s: %d %+v, want %d %s", c.name, code, e.Error, c.status, c.code)
			}
		}
		var list listEndpointsJSON
		r.call("GET", "/_herald/v1/endpoints", "", &list)
		if len(list.Data) != 1 {
			t.Fatalf("bad input stored endpoints: %d", len(list.Data))
		}
		// Unknown event types in filters are fine.
		if code := r.call("POST", "/_herald/v1/endpoints", `{"url":"`+hookURL+`","event_types":["never.seen.before","x.*"]}`, nil); code != http.StatusCreated {
			t.Fatalf("unknown event types refused: %d", code)
		}
	})
}

// The endpoint lifecycle through the API: the secret only on create and
// rotation, PATCH, pagination, test, deliveries with attempts, retry,
// delete, idempotent events.
func TestAPIEndpointLifecycle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		var created endpointJSON
		if code := r.call("POST", "/_herald/v1/endpoints", `{"url":"`+hookURL+`","event_types":["order.*"],"description":"shop","headers":{"X-Tenant":"acme"}}`, &created); code != 201 {
			t.Fatalf("create %d", code)
		}
		if created.ID == "" || !strings.HasPrefix(created.Secret, "whsec_") || created.Status != "active" || len(created.RetrySchedule) != 7 {
			t.Fatalf("created %+v", created)
		}
		var got endpointJSON
		r.call("GET", "/_herald/v1/endpoints/"+created.ID, "", &got)
		if got.Secret != "" || got.Description != "shop" {
			t.Fatalf("get shows %+v", got)
		}
		for i := range 3 {
			r.call("POST", "/_herald/v1/endpoints", fmt.Sprintf(`{"url":"%s","description":"n%d"}`, hookURL, i), nil)
		}
		var page1, page2 listEndpointsJSON
		r.call("GET", "/_herald/v1/endpoints?limit=3", "", &page1)
		if len(page1.Data) != 3 || page1.NextCursor == nil {
			t.Fatalf("page 1 %+v", page1)
		}
		r.call("GET", "/_herald/v1/endpoints?limit=3&cursor="+*page1.NextCursor, "", &page2)
		if len(page2.Data) != 1 || page2.NextCursor != nil {
			t.Fatalf("page 2 %+v", page2)
		}

		// test: a signed herald.test event.
		var tr testJSON
		if code := r.call("POST", "/_herald/v1/endpoints/"+created.ID+"/test", "", &tr); code != 200 || !tr.OK || tr.Event.Type != dispatch.TestEventType {
			t.Fatalf("test %d %+v", code, tr)
		}
		sent := r.rc.Requests()[0]
		wh, _ := standardwebhooks.NewWebhook(created.Secret)
		if err := wh.Verify(sent.Body, sent.Header); err != nil || sent.Header.Get("X-Tenant") != "acme" {
			t.Fatalf("test event: %v, headers %v", err, sent.Header)
		}

		// Events: idempotent on id.
		var p1, p2 publishJSON
		if code := r.call("POST", "/_herald/v1/events", `{"id":"ord-1","type":"order.paid","data":{"total":3}}`, &p1); code != 202 || p1.Duplicate || p1.Stream != dispatch.DefaultStream {
			t.Fatalf("publish %d %+v", code, p1)
		}
		if code := r.call("POST", "/_herald/v1/events", `{"id":"ord-1","type":"order.paid","data":{"total":3}}`, &p2); code != 200 || !p2.Duplicate || p2.Offset != p1.Offset {
			t.Fatalf("again %d %+v", code, p2)
		}
		synctest.Wait()
		r.rc.SetRespond(func(n int, ev delivery.Event) (int, map[string]string) { return 500, nil })
		r.call("POST", "/_herald/v1/events", `{"type":"order.refunded","data":{}}`, nil)
		synctest.Wait()

		var ds listDeliveriesJSON
		r.call("GET", "/_herald/v1/endpoints/"+created.ID+"/deliveries", "", &ds)
		if len(ds.Data) != 2 || ds.Data[0].EventType != "order.refunded" || ds.Data[0].Status != "failed" || ds.Data[1].Status != "delivered" {
			t.Fatalf("deliveries %+v", ds)
		}
		var failed listDeliveriesJSON
		r.call("GET", "/_herald/v1/endpoints/"+created.ID+"/deliveries?status=failed&event_type=order.refunded&limit=1", "", &failed)
		if len(failed.Data) != 1 || failed.NextCursor != nil {
			t.Fatalf("filtered %+v", failed)
		}
		var one deliveryJSON
		r.call("GET", "/_herald/v1/deliveries/"+ds.Data[0].ID, "", &one)
		if len(one.Attempts) != 1 || one.Attempts[0].StatusCode != 500 || one.Attempts[0].ResponseBody != `{"received":true}` || one.Payload == nil {
			t.Fatalf("delivery %+v", one)
		}
		r.rc.SetRespond(nil)
		var retried deliveryJSON
		if code := r.call("POST", "/_herald/v1/deliveries/"+one.ID+"/retry", "", &retried); code != 202 || retried.Status != "pending" {
			t.Fatalf("retry %d %+v", code, retried)
		}
		synctest.Wait()
		r.call("GET", "/_herald/v1/deliveries/"+one.ID, "", &one)
		if one.Status != "delivered" || len(one.Attempts) != 2 {
			t.Fatalf("after retry %+v", one)
		}

		// PATCH: pause, change, null resets to the default.
		var patched endpointJSON
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+created.ID, `{"active":false,"event_types":null,"rate_limit":5}`, &patched); code != 200 {
			t.Fatalf("patch %d", code)
		}
		if patched.Status != "paused" || len(patched.EventTypes) != 1 || patched.EventTypes[0] != "*" || patched.RateLimit != 5 || patched.Description != "shop" {
			t.Fatalf("patched %+v", patched)
		}

		var rot endpointJSON
		r.call("POST", "/_herald/v1/endpoints/"+created.ID+"/rotate-secret", "", &rot)
		if rot.Secret == created.Secret || !strings.HasPrefix(rot.Secret, "whsec_") || rot.PreviousSecretExpiresAt == nil {
			t.Fatalf("rotate %+v", rot)
		}
		if want := time.Now().Add(delivery.DefaultRotationOverlap).UTC().Format(time.RFC3339Nano); *rot.PreviousSecretExpiresAt != want {
			t.Fatalf("overlap ends %s, want %s", *rot.PreviousSecretExpiresAt, want)
		}

		if code := r.call("DELETE", "/_herald/v1/endpoints/"+created.ID, "", nil); code != 204 {
			t.Fatalf("delete %d", code)
		}
		var e apiErr
		if code := r.call("GET", "/_herald/v1/deliveries/"+one.ID, "", &e); code != 404 {
			t.Fatalf("delivery of a deleted endpoint: %d", code)
		}
	})
}
