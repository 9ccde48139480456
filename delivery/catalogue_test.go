package delivery

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func wantCode(t *testing.T, err error, code Code, field string) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Code != code || ve.Field != field {
		t.Fatalf("error %v, want %s at %q", err, code, field)
	}
}

// A catalogue entry's schema is stored compact, "null" means none, and
// each mistake names its field.
func TestCheckEventTypeEntry(t *testing.T) {
	t.Parallel()
	got, err := CheckEventTypeEntry("order.created", "an order", json.RawMessage("{ \"type\" : \"object\" }"))
	if err != nil || string(got) != `{"type":"object"}` {
		t.Fatalf("schema %s, %v; want it compact", got, err)
	}
	if got, err := CheckEventTypeEntry("order.created", "", json.RawMessage("null")); err != nil || got != nil {
		t.Fatalf("null schema: %s, %v; want none", got, err)
	}
	_, err = CheckEventTypeEntry("order..created", "", nil)
	wantCode(t, err, CodeInvalidEventType, "name")
	_, err = CheckEventTypeEntry("order.created", strings.Repeat("d", MaxDescriptionLen+1), nil)
	wantCode(t, err, CodeInvalidDescription, "description")
	_, err = CheckEventTypeEntry("order.created", "", json.RawMessage(`{"type":`))
	wantCode(t, err, CodeInvalidSchema, "schema")
	_, err = CheckEventTypeEntry("order.created", "", json.RawMessage(`{"properties":{"total":{"type":7}}}`))
	wantCode(t, err, CodeInvalidSchema, "schema/properties/total/type")
	_, err = CheckEventTypeEntry("order.created", "", json.RawMessage(`{"$ref":"https://example.com/s.json"}`))
	wantCode(t, err, CodeInvalidSchema, "schema")
	_, err = CheckEventTypeEntry("order.created", "", json.RawMessage(`[1]`))
	wantCode(t, err, CodeInvalidSchema, "schema")
	_, err = CompileSchema([]byte(`{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`))
	wantCode(t, err, CodeSchemaTooLarge, "schema")
}

// An event's data is checked against its type's schema, the first
// failing value located; no data is JSON null.
func TestCheckEventData(t *testing.T) {
	t.Parallel()
	sch, err := CompileSchema([]byte(`{"type":"object","properties":{"items":{"type":"array","items":{"required":["sku"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckEventData(sch, "order.created", json.RawMessage(`{"items":[{"sku":"a"}]}`)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, CheckEventData(sch, "order.created", json.RawMessage(`{"items":[{}]}`)), CodeEventDataInvalid, "data/items/0")
	wantCode(t, CheckEventData(sch, "order.created", nil), CodeEventDataInvalid, "data")
	wantCode(t, CheckEventData(sch, "order.created", json.RawMessage(`{`)), CodeInvalidEvent, "data")
	wantCode(t, UnknownEventType("a.b"), CodeUnknownEventType, "type")
}

type fakeCatalogue []string

func (c fakeCatalogue) Has(name string) (bool, error) {
	for _, n := range c {
		if n == name {
			return true, nil
		}
	}
	return false, nil
}

func (c fakeCatalogue) HasPrefix(prefix string) (bool, error) {
	for _, n := range c {
		if strings.HasPrefix(n, prefix) {
			return true, nil
		}
	}
	return false, nil
}

// An endpoint's patterns must name a catalogued type or cover one; "*"
// and the patterns it already had pass unchecked.
func TestCheckEndpointEventTypes(t *testing.T) {
	t.Parallel()
	cat := fakeCatalogue{"order.created", "order.paid"}
	if err := CheckEndpointEventTypes(cat, []string{"*", "order.*", "order.paid", "gone.type"}, []string{"gone.type"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, CheckEndpointEventTypes(cat, []string{"order.paid", "user.*"}, nil), CodeUnknownEventType, "event_types[1]")
	wantCode(t, CheckEndpointEventTypes(cat, []string{"order.refunded"}, nil), CodeUnknownEventType, "event_types[0]")
}
