package delivery

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 4, 5, 6, 7, 8, 0, time.UTC)

func TestParseEventAccepts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want Event
	}{
		{
			"full", `{"id":"evt_1","type":"scenario.activated","timestamp":"2026-01-02T03:04:05.5+02:00","data":{"a": [1, 2]}}`,
			Event{ID: "evt_1", Type: "scenario.activated", Timestamp: time.Date(2026, 1, 2, 1, 4, 5, 5e8, time.UTC), Data: json.RawMessage(`{"a":[1,2]}`)},
		},
		{"minimal", `{"type":"ping"}`, Event{Type: "ping", Timestamp: testNow, Data: json.RawMessage("null")}},
		{"nulls", `{"id":null,"type":"a.b","timestamp":null,"data":null}`, Event{Type: "a.b", Timestamp: testNow, Data: json.RawMessage("null")}},
		{"scalar data", `{"type":"a","data":"x"}`, Event{Type: "a", Timestamp: testNow, Data: json.RawMessage(`"x"`)}},
		{"type chars", `{"type":"infra:v2.turn_started-now"}`, Event{Type: "infra:v2.turn_started-now", Timestamp: testNow, Data: json.RawMessage("null")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := ParseEvent([]byte(tc.in), &ParseEventParams{Now: testNow})
			if err != nil {
				t.Fatalf("ParseEvent: %v", err)
			}
			if ev.ID != tc.want.ID || ev.Type != tc.want.Type || !ev.Timestamp.Equal(tc.want.Timestamp) || string(ev.Data) != string(tc.want.Data) {
				t.Fatalf("got %+v (data %s), want %+v (data %s)", ev, ev.Data, tc.want, tc.want.Data)
			}
		})
	}
}

func TestParseEventRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		in    string
		code  Code
		field string
	}{
		{"not json", `{"type":`, CodeInvalidEvent, ""},
		{"array", `[{"type":"a"}]`, CodeInvalidEvent, ""},
		{"null", `null`, CodeInvalidEvent, ""},
		{"no type", `{"data":{}}`, CodeInvalidEventType, "type"},
		{"null type", `{"type":null}`, CodeInvalidEventType, "type"},
		{"empty type", `{"type":""}`, CodeInvalidEventType, "type"},
		{"number type", `{"type":5}`, CodeInvalidEventType, "type"},
		{"wildcard type", `{"type":"a.*"}`, CodeInvalidEventType, "type"},
		{"dot type", `{"type":"a..b"}`, CodeInvalidEventType, "type"},
		{"trailing dot", `{"type":"a."}`, CodeInvalidEventType, "type"},
		{"space type", `{"type":"a b"}`, CodeInvalidEventType, "type"},
		{"long type", `{"type":"` + strings.Repeat("a", 256) + `"}`, CodeInvalidEventType, "type"},
		{"empty id", `{"id":"","type":"a"}`, CodeInvalidEventID, "id"},
		{"number id", `{"id":7,"type":"a"}`, CodeInvalidEventID, "id"},
		{"id with newline", `{"id":"a\nb","type":"a"}`, CodeInvalidEventID, "id"},
		{"bad timestamp", `{"type":"a","timestamp":"yesterday"}`, CodeInvalidParameter, "timestamp"},
		{"unix timestamp", `{"type":"a","timestamp":1700000000}`, CodeInvalidParameter, "timestamp"},
		{"no zone", `{"type":"a","timestamp":"2026-01-02T03:04:05"}`, CodeInvalidParameter, "timestamp"},
		{"typo", `{"tpye":"a","type":"a"}`, CodeUnknownField, "tpye"},
		{"extra", `{"type":"a","tenant":"t1"}`, CodeUnknownField, "tenant"},
		{"bad utf-8", "{\"type\":\"a\",\"data\":\"\xff\"}", CodeInvalidEvent, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseEvent([]byte(tc.in), &ParseEventParams{Now: testNow})
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("ParseEvent(%s) = %v, want a ValidationError", tc.in, err)
			}
			if ve.Code != tc.code || ve.Field != tc.field {
				t.Fatalf("ParseEvent(%s) = %s at %q (%v), want %s at %q", tc.in, ve.Code, ve.Field, err, tc.code, tc.field)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatal("ValidationError does not match ErrInvalid")
			}
		})
	}
}

func TestParseEventSizeCap(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"type":"a","data":"` + strings.Repeat("x", 100) + `"}`)
	if _, err := ParseEvent(raw, &ParseEventParams{Now: testNow, MaxBytes: len(raw)}); err != nil {
		t.Fatalf("event exactly at the cap: %v", err)
	}
	_, err := ParseEvent(raw, &ParseEventParams{Now: testNow, MaxBytes: len(raw) - 1})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Code != CodeEventTooLarge {
		t.Fatalf("event over the cap = %v, want CodeEventTooLarge", err)
	}
	big := []byte(`{"type":"a","data":"` + strings.Repeat("x", DefaultMaxEventBytes) + `"}`)
	if _, err := ParseEvent(big, &ParseEventParams{Now: testNow}); !errors.As(err, &ve) || ve.Code != CodeEventTooLarge {
		t.Fatalf("event over the default cap = %v", err)
	}
}

func TestEventMarshalsAsEnvelope(t *testing.T) {
	t.Parallel()
	ev, err := ParseEvent([]byte(`{"id":"e1","type":"a.b","timestamp":"2026-01-02T03:04:05Z","data":{"k":"<v>"}}`), &ParseEventParams{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ev.Body()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"e1","type":"a.b","timestamp":"2026-01-02T03:04:05Z","data":{"k":"<v>"}}`; string(b) != want {
		t.Fatalf("body = %s, want %s", b, want)
	}
	// The body parses back to the same event.
	again, err := ParseEvent(b, &ParseEventParams{Now: testNow})
	if err != nil || again.ID != ev.ID || !again.Timestamp.Equal(ev.Timestamp) || string(again.Data) != string(ev.Data) {
		t.Fatalf("round trip: %+v, %v", again, err)
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"a.b"}`, `{"id":"x","type":"a","timestamp":"2026-01-02T03:04:05Z","data":[1,{"a":null}]}`,
		`{"type":"a","extra":1}`, `[]`, `{"type":"a.","data":`, `{"type":"a","timestamp":"2026-13-40T99:99:99Z"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := ParseEvent(raw, &ParseEventParams{Now: testNow})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not a ValidationError", err)
			}
			return
		}
		if ValidateEventType(ev.Type) != nil || (ev.ID != "" && ValidateEventID(ev.ID) != nil) || !json.Valid(ev.Data) {
			t.Fatalf("accepted an invalid event: %+v", ev)
		}
		// What Herald sends parses back to the same event.
		b, err := ev.Body()
		if err != nil {
			t.Fatalf("Body: %v", err)
		}
		again, err := ParseEvent(b, &ParseEventParams{Now: testNow, MaxBytes: len(b)})
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if again.ID != ev.ID || again.Type != ev.Type || !again.Timestamp.Equal(ev.Timestamp) || string(again.Data) != string(ev.Data) {
			t.Fatalf("round trip changed %+v to %+v", ev, again)
		}
	})
}
