package deliveryapi

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/heraldstreams/herald/delivery/dispatch"
)

// One PATCH changes every field of an endpoint the dashboard edits, and
// GET shows each as sent (header values masked).
func TestPatchChangesEveryField(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true})
		patch := `{"url":"` + hookURL + `/v2","name":"orders","description":"the shop","event_types":["order.*"],
			"streams":["/shop/*"],"filter":{"data.total":{"gte":10}},"headers":{"X-Api-Key":"k1"},
			"retry_schedule":["0s","5s","1m"],"rate_limit":5,"max_in_flight":3,"ordering":"stream",
			"batch":{"max_events":10,"max_wait_ms":200},"profile":"standard-webhooks","failure_policy":"retry_all","timeout_ms":4000}`
		var got endpointJSON
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, patch, &got); code != 200 {
			t.Fatalf("PATCH: %d %+v", code, got)
		}
		if code := r.call("GET", "/_herald/v1/endpoints/"+ep.ID, "", &got); code != 200 {
			t.Fatalf("GET: %d", code)
		}
		filter, _ := json.Marshal(got.Filter)
		if got.URL != hookURL+"/v2" || got.Name != "orders" || got.Description != "the shop" ||
			strings.Join(got.EventTypes, ",") != "order.*" || strings.Join(got.Streams, ",") != "/shop/*" ||
			string(filter) != `{"data.total":{"gte":10}}` || got.Headers["X-Api-Key"] != MaskedHeaderValue ||
			len(got.RetrySchedule) != 3 || got.RateLimit != 5 || got.MaxInFlight != 3 || got.Ordering != "stream" ||
			got.Batch == nil || got.Batch.MaxEvents != 10 || got.Batch.MaxWaitMS != 200 ||
			got.Profile != "standard-webhooks" || got.FailurePolicy != "retry_all" || got.TimeoutMS != 4000 {
			t.Fatalf("after PATCH: %+v", got)
		}
		// A new filter replaces the old one whole.
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, `{"filter":{"or":[{"data.tier":"gold"},{"data.total":{"gt":5000}}]}}`, &got); code != 200 {
			t.Fatalf("PATCH filter: %d", code)
		}
		if filter, _ := json.Marshal(got.Filter); string(filter) != `{"or":[{"data.tier":"gold"},{"data.total":{"gt":5000}}]}` {
			t.Fatalf("the filter after PATCH is %s", filter)
		}
		// The masked value sent back keeps the stored one.
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, `{"headers":{"X-Api-Key":"***","X-Other":"v"}}`, &got); code != 200 {
			t.Fatalf("PATCH headers: %d", code)
		}
		stored, err := r.st.EndpointGet(t.Context(), ep.ID)
		if err != nil || stored.Headers["X-Api-Key"] != "k1" || stored.Headers["X-Other"] != "v" {
			t.Fatalf("stored headers %v (%v)", stored.Headers, err)
		}
	})
}

// A PATCH's validation error names the field it is about, so a form can
// show it there.
func TestPatchErrorNamesTheField(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true})
		for _, c := range []struct{ body, field string }{
			{`{"rate_limit":-1}`, "rate_limit"},
			{`{"retry_schedule":["soon"]}`, "retry_schedule"},
			{`{"filter":{"data.x":{"near":1}}}`, "filter"},
			{`{"timeout_ms":"fast"}`, "timeout_ms"},
		} {
			var e struct {
				Error struct{ Code, Message, Field string }
			}
			if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, c.body, &e); code != 400 || !strings.HasPrefix(e.Error.Field, c.field) {
				t.Errorf("PATCH %s: %d %+v, want 400 on field %s", c.body, code, e.Error, c.field)
			}
		}
	})
}

// A test event may carry a type and data of the catalogue: it is checked
// against the type's schema as a published event is, and sent with that
// type.
func TestTestEventOfAType(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *dispatch.EngineConfig) { c.EnforceEventTypes = true })
		if code := r.call("POST", "/_herald/v1/event-types", `{"name":"order.paid","schema":{"type":"object","required":["total"]}}`, nil); code != 201 {
			t.Fatalf("create type: %d", code)
		}
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true})
		var tr testJSON
		if code := r.call("POST", "/_herald/v1/endpoints/"+ep.ID+"/test", `{"type":"order.paid","data":{"total":3}}`, &tr); code != 200 || !tr.OK || tr.Event.Type != "order.paid" {
			t.Fatalf("test: %d %+v", code, tr)
		}
		if got := r.rc.Requests()[0].Header.Get("Webhook-Id"); got != tr.Event.ID {
			t.Fatalf("sent id %q, want %q", got, tr.Event.ID)
		}
		for _, body := range []string{`{"type":"order.paid","data":{}}`, `{"type":"no such type!"}`, `{"type":"order.unknown"}`} {
			if code := r.call("POST", "/_herald/v1/endpoints/"+ep.ID+"/test", body, nil); code/100 != 4 {
				t.Errorf("test %s: %d, want a 4xx", body, code)
			}
		}
		if n := len(r.rc.Requests()); n != 1 {
			t.Fatalf("%d requests sent, want only the valid test", n)
		}
	})
}
