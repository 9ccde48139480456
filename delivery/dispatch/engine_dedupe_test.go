package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// An event id is delivered once per installation: raw appends that repeat
// an id (in one append, in later ones, on another stream, or after a
// publish through the API) are not sent again, every POST made is an
// attempt of the log, and a replay of the stream does not send the
// repeats either.
func TestEngineRawDuplicateIDsDeliveredOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		ctx := context.Background()
		for _, path := range []string{"/shop", "/other"} {
			if _, err := r.st.StreamCreate(ctx, &store.StreamCreateParams{Path: path, ContentType: "application/json", Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		appendJSON := func(path, body string) {
			t.Helper()
			if _, err := r.st.StreamAppend(ctx, &store.StreamAppendParams{Path: path, ContentType: "application/json", Data: []byte(body),
				Messages: strings.Count(body, "\n"), Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		one := `{"id":"ord-1","type":"order.paid","data":{"n":%d}}` + "\n"
		appendJSON("/shop", fmt.Sprintf(one, 1)+fmt.Sprintf(one, 2))
		appendJSON("/shop", fmt.Sprintf(one, 3))
		appendJSON("/other", fmt.Sprintf(one, 4))
		pub, err := r.e.Publish(ctx, &PublishParams{Event: &delivery.Event{ID: "ord-2", Type: "order.paid", Timestamp: time.Now().UTC(),
			Data: json.RawMessage(`{"n":5}`)}, Stream: "/shop"})
		if err != nil || pub.Duplicate {
			t.Fatalf("publish = %+v, %v", pub, err)
		}
		synctest.Wait()
		appendJSON("/shop", `{"id":"ord-2","type":"order.paid","data":{"n":6}}`+"\n")

		got := r.rc.Requests()
		if len(got) != 2 || got[0].Event.ID != "ord-1" || string(got[0].Event.Data) != `{"n":1}` || got[1].Event.ID != "ord-2" {
			t.Fatalf("%d requests (%+v), want ord-1 then ord-2, once each", len(got), got)
		}
		attempts := 0
		for _, d := range r.deliveries(ep.ID) {
			as, err := r.st.DeliveryAttempts(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			attempts += len(as)
		}
		if attempts != len(got) {
			t.Fatalf("%d attempts logged for %d POSTs", attempts, len(got))
		}

		// A duplicate publish answers with the event as first seen.
		dup, err := r.e.Publish(ctx, &PublishParams{Event: &delivery.Event{ID: "ord-1", Type: "order.refunded", Data: json.RawMessage(`{"n":9}`)}})
		if err != nil || !dup.Duplicate || dup.Stream != "/shop" || dup.Event.Type != "order.paid" || string(dup.Event.Data) != `{"n":1}` {
			t.Fatalf("duplicate publish = %+v, %v", dup, err)
		}

		job, err := r.e.Replay(ctx, &ReplayParams{EndpointID: ep.ID, Stream: "/shop", HasFrom: true})
		if err != nil || job.Queued != 2 || job.Total != 2 {
			t.Fatalf("replay = %+v, %v", job, err)
		}
		synctest.Wait()
		if n := len(r.rc.Requests()); n != 4 {
			t.Fatalf("%d requests after the replay, want 4", n)
		}
	})
}

// Event ids are unique per tenant: the same id published by two tenants
// and the platform is three events, each delivered, and a duplicate
// publish answers with the caller's own event only; a raw append keeps
// "delivered once" within its tenant.
func TestEngineEventIDsPerTenant(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		r.endpoint(&CreateEndpointParams{Active: true})
		ctx := context.Background()
		publish := func(tenant, data string) *PublishResult {
			t.Helper()
			res, err := r.e.Publish(ctx, &PublishParams{Event: &delivery.Event{ID: "order-1001", Type: "order.paid", Data: json.RawMessage(data)},
				Tenant: tenant})
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			return res
		}
		if g := publish("globex", `{"card":"globex-card"}`); g.Duplicate {
			t.Fatalf("globex's first publish = %+v", g)
		}
		if a := publish("acme", `{"card":"acme-card"}`); a.Duplicate || string(a.Event.Data) != `{"card":"acme-card"}` {
			t.Fatalf("acme's publish of globex's id = %+v, want a new event", a)
		}
		if p := publish("", `{"card":"platform"}`); p.Duplicate {
			t.Fatalf("the platform's publish of the id = %+v, want a new event", p)
		}
		again := publish("acme", `{"card":"other"}`)
		if !again.Duplicate || string(again.Event.Data) != `{"card":"acme-card"}` {
			t.Fatalf("acme's repeat = %+v, want acme's own event", again)
		}
		raw := `{"id":"order-1001","type":"order.paid","tenant":"initech","data":{"n":%d}}` + "\n"
		for n := range 2 {
			if _, err := r.st.StreamAppend(ctx, &store.StreamAppendParams{Path: "/events", ContentType: "application/json",
				Data: fmt.Appendf(nil, raw, n), Messages: 1, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		var got []string
		for _, req := range r.rc.Requests() {
			got = append(got, string(req.Event.Data))
		}
		want := []string{`{"card":"globex-card"}`, `{"card":"acme-card"}`, `{"card":"platform"}`, `{"n":0}`}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("delivered %v, want %v (each tenant's event once)", got, want)
		}
	})
}
