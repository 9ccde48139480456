package dispatch

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/heraldstreams/herald/delivery"
)

// fixedIDs names an event "assigned_<pos>".
type fixedIDs struct{}

func (fixedIDs) id(_ context.Context, pos int64) (string, error) {
	return "assigned_" + strconv.FormatInt(pos, 10), nil
}

func TestParseMessage(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		raw, wantID, wantType, wantData, wantTenant string
		wantTS                                      time.Time
	}{
		{raw: `{"type":"a.b"}`, wantID: "assigned_40", wantType: "a.b", wantData: "null", wantTS: now},
		{raw: `{"id":"x1","type":"a.b","timestamp":"2025-05-05T00:00:00Z","data":{"k":[1,2]},"tenant":"t"}`,
			wantID: "x1", wantType: "a.b", wantData: `{"k":[1,2]}`, wantTenant: "t", wantTS: time.Date(2025, 5, 5, 0, 0, 0, 0, time.UTC)},
		{raw: `{"id":"has space","type":"a.b","timestamp":"yesterday","extra":1}`, wantID: "assigned_40", wantType: "a.b", wantData: "null", wantTS: now},
		{raw: `{"type":"a..b"}`},
		{raw: `{"type":3}`},
		{raw: `{"data":{}}`},
		{raw: `[1,2]`},
		{raw: `"a.b"`},
	} {
		m, err := parseMessage(context.Background(), []byte(c.raw), "/s", 40, fixedIDs{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if c.wantType == "" {
			if m != nil {
				t.Errorf("%s: parsed as an event %+v", c.raw, m.target.Event)
			}
			continue
		}
		if m == nil {
			t.Errorf("%s: not an event", c.raw)
			continue
		}
		ev := m.target.Event
		if ev.ID != c.wantID || ev.Type != c.wantType || string(ev.Data) != c.wantData || m.tenant != c.wantTenant || !ev.Timestamp.Equal(c.wantTS) {
			t.Errorf("%s: %+v tenant %q", c.raw, ev, m.tenant)
		}
	}
}

// FuzzParseMessage: whatever a stream holds, a message read as an event
// gives a body that is the event envelope, with a valid id and type.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{`{"type":"a.b"}`, `{"id":"x","type":"a.b","data":null,"timestamp":"2025-01-01T00:00:00Z"}`,
		`{"type":"a.b","data":"\u2028<>&"}`, `{"type":["a"]}`, `{`, `null`, `{"type":"a.b","tenant":5}`} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseMessage(context.Background(), raw, "/f", 0, fixedIDs{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			return
		}
		ev := m.target.Event
		if delivery.ValidateEventID(ev.ID) != nil || delivery.ValidateEventType(ev.Type) != nil {
			t.Fatalf("invalid id or type: %+v", ev)
		}
		for _, p := range []*delivery.Profile{&delivery.StandardWebhooks, &delivery.XRucheV1, &delivery.XAgentIdPSHA256} {
			body, err := m.body(p)
			if err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
			var back map[string]json.RawMessage
			if err := json.Unmarshal(body, &back); err != nil {
				t.Fatalf("%s: body %q: %v", p.Name, body, err)
			}
			if len(back) != len(p.Envelope) {
				t.Fatalf("%s: body %s is not the envelope", p.Name, body)
			}
		}
		// The Standard Webhooks envelope is the event's own encoding.
		if body, err := ev.Body(); err != nil || string(body) != string(m.bodies[&delivery.StandardWebhooks]) {
			t.Fatalf("standard body %s, event body %s (%v)", m.bodies[&delivery.StandardWebhooks], body, err)
		}
	})
}
