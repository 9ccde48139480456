package deliveryapi

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/store"
)

const orderPaidSchema = `{"type":"object","properties":{"total":{"type":"number"},"items":{"type":"array","items":{"type":"object","required":["sku"]}}},"required":["total"]}`

// The catalogue through the API: create (with a compiled schema), read,
// page, PATCH (null restores a default), delete.
func TestAPIEventTypeCatalogue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		var created eventTypeJSON
		if code := r.call("POST", "/_herald/v1/event-types", `{"name":"order.paid","description":"an order was paid","schema":`+orderPaidSchema+`}`, &created); code != http.StatusCreated {
			t.Fatalf("create: %d", code)
		}
		if created.Name != "order.paid" || created.Description != "an order was paid" || string(created.Schema) != orderPaidSchema || created.Deprecated || created.CreatedAt == nil {
			t.Fatalf("created %+v", created)
		}
		var e apiErr
		if code := r.call("POST", "/_herald/v1/event-types", `{"name":"order.paid"}`, &e); code != http.StatusConflict || e.Error.Code != "EVENT_TYPE_EXISTS" {
			t.Fatalf("again: %d %+v", code, e.Error)
		}
		for _, name := range []string{"order.shipped", "invoice.sent"} {
			if code := r.call("POST", "/_herald/v1/event-types", `{"name":"`+name+`","deprecated":true}`, nil); code != http.StatusCreated {
				t.Fatalf("create %s: %d", name, code)
			}
		}
		var got eventTypeJSON
		if code := r.call("GET", "/_herald/v1/event-types/order.shipped", "", &got); code != http.StatusOK || !got.Deprecated || string(got.Schema) != "null" {
			t.Fatalf("get: %d %+v", code, got)
		}
		var page1, page2 listEventTypesJSON
		r.call("GET", "/_herald/v1/event-types?limit=2", "", &page1)
		if len(page1.Data) != 2 || page1.Data[0].Name != "invoice.sent" || page1.Data[1].Name != "order.paid" || page1.NextCursor == nil {
			t.Fatalf("page 1 %+v", page1)
		}
		r.call("GET", "/_herald/v1/event-types?limit=2&cursor="+*page1.NextCursor, "", &page2)
		if len(page2.Data) != 1 || page2.Data[0].Name != "order.shipped" || page2.NextCursor != nil {
			t.Fatalf("page 2 %+v", page2)
		}

		var patched eventTypeJSON
		if code := r.call("PATCH", "/_herald/v1/event-types/order.paid", `{"deprecated":true,"schema":null}`, &patched); code != http.StatusOK {
			t.Fatalf("patch: %d", code)
		}
		if !patched.Deprecated || string(patched.Schema) != "null" || patched.Description != "an order was paid" {
			t.Fatalf("patched %+v", patched)
		}
		r.call("PATCH", "/_herald/v1/event-types/order.paid", `{"description":null,"deprecated":null,"schema":{"type":"object"}}`, &patched)
		if patched.Deprecated || string(patched.Schema) != `{"type":"object"}` || patched.Description != "" {
			t.Fatalf("patched back %+v", patched)
		}

		if code := r.call("DELETE", "/_herald/v1/event-types/order.shipped", "", nil); code != http.StatusNoContent {
			t.Fatalf("delete: %d", code)
		}
		for _, c := range []struct{ method, body string }{{"GET", ""}, {"PATCH", `{"deprecated":true}`}, {"DELETE", ""}} {
			if code := r.call(c.method, "/_herald/v1/event-types/order.shipped", c.body, &e); code != http.StatusNotFound || e.Error.Code != "EVENT_TYPE_NOT_FOUND" {
				t.Errorf("%s of a deleted type: %d %+v", c.method, code, e.Error)
			}
		}
	})
}

// Bad catalogue input is a 4xx naming the field: a bad name, a schema
// that does not compile (with where), a $ref or $schema that leaves the
// schema (no remote or file loading), a schema or body over its bound.
func TestAPIEventTypeBadInput(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		r.call("POST", "/_herald/v1/event-types", `{"name":"order.paid"}`, nil)
		hugeSchema := `{"description":"` + strings.Repeat("x", delivery.MaxSchemaBytes) + `"}`
		hugeBody := `{"name":"a.b","description":"` + strings.Repeat(" ", maxEventTypeBody) + `"}`
		for _, c := range []struct {
			name, method, path, body string
			status                   int
			code, field              string
		}{
			{"bad name", "POST", "/_herald/v1/event-types", `{"name":"order..paid"}`, 400, "INVALID_EVENT_TYPE", "name"},
			{"pattern as name", "POST", "/_herald/v1/event-types", `{"name":"order.*"}`, 400, "INVALID_EVENT_TYPE", "name"},
			{"no name", "POST", "/_herald/v1/event-types", `{"description":"x"}`, 400, "INVALID_EVENT_TYPE", "name"},
			{"invalid schema", "POST", "/_herald/v1/event-types", `{"name":"a.b","schema":{"type":"wat"}}`, 400, "INVALID_SCHEMA", "schema/type"},
			{"bad regex", "POST", "/_herald/v1/event-types", `{"name":"a.b","schema":{"properties":{"x":{"pattern":"("}}}}`, 400, "INVALID_SCHEMA", "schema/properties/x/pattern"},
			{"remote ref", "POST", "/_herald/v1/event-types", `{"name":"a.b","schema":{"$ref":"https://example.com/s.json"}}`, 400, "INVALID_SCHEMA", "schema"},
			{"file ref", "POST", "/_herald/v1/event-types", `{"name":"a.b","schema":{"$ref":"file:///etc/passwd"}}`, 400, "INVALID_SCHEMA", "schema"},
			{"relative ref", "POST", "/_herald/v1/event-types", `{"name":"a.b","schema":{"$ref":"other.json"}}`, 400, "INVALID_SCHEMA", "schema"},
			{"unknown metaschema", "POST", "/_herald/v1/event-types", `{"name":"a.b","schema":{"$schema":"https://example.com/meta"}}`, 400, "INVALID_SCHEMA", "schema"},
			{"schema not an object", "POST", "/_herald/v1/event-types", `{"name":"a.b","schema":[1]}`, 400, "INVALID_SCHEMA", "schema"},
			{"schema too large", "POST", "/_herald/v1/event-types", `{"name":"a.b","schema":` + hugeSchema + `}`, 413, "SCHEMA_TOO_LARGE", "schema"},
			{"body too large", "POST", "/_herald/v1/event-types", hugeBody, 413, "PAYLOAD_TOO_LARGE", ""},
			{"long description", "POST", "/_herald/v1/event-types", `{"name":"a.b","description":"` + strings.Repeat("x", delivery.MaxDescriptionLen+1) + `"}`, 400, "INVALID_DESCRIPTION", "description"},
			{"unknown field", "POST", "/_herald/v1/event-types", `{"name":"a.b","version":2}`, 400, "UNKNOWN_FIELD", "version"},
			{"patch name", "PATCH", "/_herald/v1/event-types/order.paid", `{"name":"order.done"}`, 400, "UNKNOWN_FIELD", "name"},
			{"patch bad deprecated", "PATCH", "/_herald/v1/event-types/order.paid", `{"deprecated":"yes"}`, 400, "INVALID_JSON", "deprecated"},
			{"patch bad schema", "PATCH", "/_herald/v1/event-types/order.paid", `{"schema":{"minimum":"1"}}`, 400, "INVALID_SCHEMA", "schema/minimum"},
			{"bad cursor", "GET", "/_herald/v1/event-types?cursor=a..b", "", 400, "INVALID_PARAMETER", "cursor"},
			{"unknown parameter", "GET", "/_herald/v1/event-types?prefix=a", "", 400, "UNKNOWN_PARAMETER", "prefix"},
		} {
			var e apiErr
			if code := r.call(c.method, c.path, c.body, &e); code != c.status || e.Error.Code != c.code || e.Error.Field != c.field || e.Error.Message == "" {
				t.Errorf("%s: %d %+v, want %d %s %q", c.name, code, e.Error, c.status, c.code, c.field)
			}
		}
		var list listEventTypesJSON
		r.call("GET", "/_herald/v1/event-types", "", &list)
		if len(list.Data) != 1 {
			t.Fatalf("bad input stored types: %+v", list.Data)
		}
		var got eventTypeJSON
		if r.call("GET", "/_herald/v1/event-types/order.paid", "", &got); got.Deprecated || string(got.Schema) != "null" {
			t.Fatalf("a refused PATCH changed the type: %+v", got)
		}
	})
}

// With the catalogue enforced, an event of an unknown type or whose data
// fails its type's schema is refused with where it fails, nothing
// stored; a deprecated type is accepted and flagged; an endpoint's exact
// types must be catalogued and its prefix patterns cover one.
func TestAPIEnforcedCatalogue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *dispatch.EngineConfig) { c.EnforceEventTypes = true })
		for _, body := range []string{
			`{"name":"order.paid","schema":` + orderPaidSchema + `}`,
			`{"name":"order.legacy","deprecated":true}`,
		} {
			if code := r.call("POST", "/_herald/v1/event-types", body, nil); code != http.StatusCreated {
				t.Fatalf("create %s: %d", body, code)
			}
		}
		for _, c := range []struct {
			name, body  string
			code, field string
		}{
			{"unknown type", `{"type":"order.unknown","data":{}}`, "UNKNOWN_EVENT_TYPE", "type"},
			{"missing field", `{"type":"order.paid","data":{}}`, "EVENT_DATA_INVALID", "data"},
			{"wrong type", `{"type":"order.paid","data":{"total":"12"}}`, "EVENT_DATA_INVALID", "data/total"},
			{"deep", `{"type":"order.paid","data":{"total":1,"items":[{"sku":"a"},{"qty":2}]}}`, "EVENT_DATA_INVALID", "data/items/1"},
			{"no data", `{"type":"order.paid"}`, "EVENT_DATA_INVALID", "data"},
		} {
			var e apiErr
			if code := r.call("POST", "/_herald/v1/events", c.body, &e); code != http.StatusBadRequest || e.Error.Code != c.code || e.Error.Field != c.field {
				t.Errorf("%s: %d %+v, want %s at %q", c.name, code, e.Error, c.code, c.field)
			}
		}
		if _, err := r.st.StreamGet(t.Context(), &store.StreamGetParams{Path: dispatch.DefaultStream, Now: time.Now()}); err == nil {
			t.Fatal("a refused event was stored")
		}
		var ok, legacy map[string]any
		if code := r.call("POST", "/_herald/v1/events", `{"type":"order.paid","data":{"total":12,"items":[{"sku":"a"}]}}`, &ok); code != http.StatusAccepted || ok["deprecated_type"] != nil {
			t.Fatalf("valid event: %d %v", code, ok)
		}
		if code := r.call("POST", "/_herald/v1/events", `{"type":"order.legacy","data":{}}`, &legacy); code != http.StatusAccepted || legacy["deprecated_type"] != true {
			t.Fatalf("deprecated type: %d %v", code, legacy)
		}
		// A changed schema applies to the next event.
		r.call("PATCH", "/_herald/v1/event-types/order.paid", `{"schema":{"required":["currency"]}}`, nil)
		var e apiErr
		if code := r.call("POST", "/_herald/v1/events", `{"type":"order.paid","data":{"total":12}}`, &e); code != http.StatusBadRequest || e.Error.Code != "EVENT_DATA_INVALID" {
			t.Fatalf("after the schema changed: %d %+v", code, e.Error)
		}

		for _, c := range []struct {
			types string
			field string // "" when accepted
		}{
			{`["order.paid"]`, ""},
			{`["order.*"]`, ""},
			{`["*"]`, ""},
			{`["order.paid","order.unknown"]`, "event_types[1]"},
			{`["invoice.*"]`, "event_types[0]"},
			{`["order.paid.*"]`, "event_types[0]"},
		} {
			var e apiErr
			code := r.call("POST", "/_herald/v1/endpoints", `{"url":"`+hookURL+`","event_types":`+c.types+`}`, &e)
			switch {
			case c.field == "" && code != http.StatusCreated:
				t.Errorf("%s: %d %+v, want 201", c.types, code, e.Error)
			case c.field != "" && (code != http.StatusBadRequest || e.Error.Code != "UNKNOWN_EVENT_TYPE" || e.Error.Field != c.field):
				t.Errorf("%s: %d %+v, want 400 unknown_event_type at %s", c.types, code, e.Error, c.field)
			}
		}
		// A type removed from the catalogue does not block other changes
		// of an endpoint that names it; naming it anew is refused.
		ep := r.endpoint(&dispatch.CreateEndpointParams{Config: delivery.EndpointConfig{EventTypes: []string{"order.legacy"}}, Active: true})
		r.call("DELETE", "/_herald/v1/event-types/order.legacy", "", nil)
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, `{"description":"kept"}`, &e); code != http.StatusOK {
			t.Fatalf("patch of an endpoint naming a removed type: %d %+v", code, e.Error)
		}
		other := r.endpoint(&dispatch.CreateEndpointParams{Config: delivery.EndpointConfig{EventTypes: []string{"order.paid"}}, Active: true})
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+other.ID, `{"event_types":["order.legacy"]}`, &e); code != http.StatusBadRequest || e.Error.Field != "event_types[0]" {
			t.Fatalf("patch naming a removed type: %d %+v", code, e.Error)
		}
	})
}
