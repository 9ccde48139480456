package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func runEventLog(t *testing.T, f Factory) {
	run(t, f, "EventLogFilters", testEventLogFilters)
	run(t, f, "EventLogOutcome", testEventLogOutcome)
	run(t, f, "EventLogEvent", testEventLogEvent)
}

// publishAt publishes event id of tenant with type typ to stream at t.
func publishAt(t *testing.T, s store.Store, tenant, id, typ, stream string, at time.Time) {
	t.Helper()
	if _, err := s.EventPublish(context.Background(), &store.EventPublishParams{Stream: stream, Tenant: tenant, EventID: id, EventType: typ,
		Data: []byte(`{"id":"` + id + `","type":"` + typ + `"}` + "\n"), Now: at}); err != nil {
		t.Fatalf("publish %s: %v", id, err)
	}
}

// eventList lists every page of the event log under params, Limit a
// page, and returns the ids in order with the number of pages.
func eventList(t *testing.T, s store.Store, params store.EventListParams) ([]string, int) {
	t.Helper()
	var ids []string
	pages := 0
	for {
		res, err := s.EventList(context.Background(), &params)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(res.Events) > params.Limit {
			t.Fatalf("a page of %d events, over the limit of %d", len(res.Events), params.Limit)
		}
		for _, e := range res.Events {
			ids = append(ids, e.Tenant+"/"+e.ID)
		}
		if res.Next == nil {
			return ids, pages
		}
		if pages > 100 {
			t.Fatal("the pages never end")
		}
		params.Before = res.Next
	}
}

// The event log lists recorded events newest first, page by page, by
// tenant, type, stream and time; events recorded at the same instant are
// ordered by tenant and id, and sightings are listed with their type.
func testEventLogFilters(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	for i := range 7 {
		tenant := []string{"acme", "initech", ""}[i%3]
		typ := []string{"order.created", "order.paid"}[i%2]
		publishAt(t, s, tenant, fmt.Sprintf("e%d", i), typ, "/s"+fmt.Sprint(i%2), t0.Add(time.Duration(i/2)*time.Second))
	}
	// The same id in two tenants is two events.
	publishAt(t, s, "initech", "e0", "order.created", "/s0", t0.Add(10*time.Second))
	mustEndpoint(t, s, endpoint("ep"))
	if _, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/raw", Now: t0.Add(20 * time.Second),
		Sightings: []store.EventSighting{{Tenant: "acme", EventID: "seen-1", Position: 0, EventType: "invoice.sent"}}}); err != nil {
		t.Fatal(err)
	}
	s = f.Reopen(t, s)
	all, pages := eventList(t, s, store.EventListParams{Limit: 3})
	want := []string{"acme/seen-1", "initech/e0", "acme/e6", "initech/e4", "/e5", "acme/e3", "/e2", "initech/e1", "acme/e0"}
	if !slices.Equal(all, want) || pages != 3 {
		t.Fatalf("the log in %d pages: %v, want %v in 3", pages, all, want)
	}
	for _, c := range []struct {
		name   string
		params store.EventListParams
		want   []string
	}{
		{"tenant", store.EventListParams{ByTenant: true, Tenant: "acme", Limit: 2}, []string{"acme/seen-1", "acme/e6", "acme/e3", "acme/e0"}},
		{"platform", store.EventListParams{ByTenant: true, Limit: 2}, []string{"/e5", "/e2"}},
		{"type", store.EventListParams{Type: "order.paid", Limit: 2}, []string{"/e5", "acme/e3", "initech/e1"}},
		{"sighted type", store.EventListParams{Type: "invoice.sent", Limit: 2}, []string{"acme/seen-1"}},
		{"stream", store.EventListParams{Stream: "/s0", Limit: 10}, []string{"initech/e0", "acme/e6", "initech/e4", "/e2", "acme/e0"}},
		{"tenant and type", store.EventListParams{ByTenant: true, Tenant: "initech", Type: "order.created", Limit: 1}, []string{"initech/e0", "initech/e4"}},
		{"time", store.EventListParams{Since: t0.Add(time.Second), Until: t0.Add(3 * time.Second), Limit: 10}, []string{"initech/e4", "/e5", "acme/e3", "/e2"}},
	} {
		if got, _ := eventList(t, s, c.params); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	ev, err := s.EventGet(ctx, store.EventKey{Tenant: "acme", ID: "seen-1"})
	if err != nil || ev.Type != "invoice.sent" || ev.Stream != "/raw" || !ev.CreatedAt.Equal(t0.Add(20*time.Second)) || ev.Outcome() != store.OutcomeNone {
		t.Fatalf("the sighted event: %+v, %v", ev, err)
	}
	_, err = s.EventGet(ctx, store.EventKey{Tenant: "initech", ID: "e6"})
	expectErr(t, err, store.ErrEventNotFound)
}

// An event's outcome follows its deliveries, and the log filters by it,
// reading at most Scan events a call: a page may come back short, or
// empty, with where to go on.
func testEventLogOutcome(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		mustEndpoint(t, s, endpoint(id))
	}
	for i := range 6 {
		publishAt(t, s, "", fmt.Sprintf("e%d", i), "t.x", "/s", t0.Add(time.Duration(i)*time.Second))
	}
	// e1 goes to a (delivered) and b (exhausted); e3 to a (delivered);
	// e4 to b (pending); the rest match nothing.
	var ds []store.Delivery
	for _, d := range []struct {
		ep, ev string
	}{{"a", "e1"}, {"b", "e1"}, {"a", "e3"}, {"b", "e4"}} {
		ds = append(ds, delivery(d.ep, d.ev, 0))
	}
	if _, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Deliveries: ds, Now: t0}); err != nil {
		t.Fatal(err)
	}
	finish := func(ep string, status string, events ...string) {
		t.Helper()
		var results []store.DeliveryResult
		for _, d := range mustClaim(t, s, ep, 10, t0).Deliveries {
			if slices.Contains(events, d.EventID) {
				results = append(results, store.DeliveryResult{DeliveryID: d.ID, LeaseToken: d.LeaseToken, Status: status, Attempt: store.DeliveryAttempt{At: t0, StatusCode: 200}})
			}
		}
		if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: ep, Results: results, ExpectHealthVersion: mustHealthVersion(t, s, ep), Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	finish("a", store.DeliveryDelivered, "e1", "e3")
	finish("b", store.DeliveryExhausted, "e1")
	for outcome, want := range map[string][]string{
		store.OutcomeDelivered: {"/e3"},
		store.OutcomeExhausted: {"/e1"},
		store.OutcomePending:   {"/e4"},
		store.OutcomeNone:      {"/e5", "/e2", "/e0"},
		store.OutcomeFailed:    nil,
	} {
		if got, _ := eventList(t, s, store.EventListParams{Outcome: outcome, Limit: 10, Scan: 10}); !slices.Equal(got, want) {
			t.Errorf("outcome %s: %v, want %v", outcome, got, want)
		}
	}
	// Reading two events a call, the dead letter is on the second page.
	res, err := s.EventList(ctx, &store.EventListParams{Outcome: store.OutcomeExhausted, Limit: 1, Scan: 2})
	if err != nil || len(res.Events) != 0 || res.Next == nil || res.Next.ID != "e4" {
		t.Fatalf("first call reading 2: %+v, %v", res, err)
	}
	if got, pages := eventList(t, s, store.EventListParams{Outcome: store.OutcomeExhausted, Limit: 1, Scan: 2}); !slices.Equal(got, []string{"/e1"}) || pages < 3 {
		t.Fatalf("reading 2 a call: %v in %d pages", got, pages)
	}
	ev, err := s.EventGet(ctx, store.EventKey{ID: "e1"})
	if err != nil || ev.Deliveries[store.DeliveryDelivered] != 1 || ev.Deliveries[store.DeliveryExhausted] != 1 || ev.Outcome() != store.OutcomeExhausted {
		t.Fatalf("e1: %+v, %v", ev, err)
	}
}

// An event's deliveries are those of its tenant's event of that id, one
// per endpoint, oldest first.
func testEventLogEvent(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		mustEndpoint(t, s, endpoint(id))
	}
	mine, theirs := delivery("a", "x", 0), delivery("b", "x", 10)
	mine.EventTenant, theirs.EventTenant = "acme", "initech"
	also := delivery("b", "x", 0)
	also.EventTenant = "acme"
	if _, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Deliveries: []store.Delivery{mine, theirs, also}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	ds, err := s.EventDeliveries(ctx, store.EventKey{Tenant: "acme", ID: "x"})
	if err != nil || len(ds) != 2 || ds[0].EndpointID != "a" || ds[1].EndpointID != "b" || ds[0].EventTenant != "acme" || ds[1].Status != store.DeliveryPending {
		t.Fatalf("acme's x: %+v, %v", ds, err)
	}
	if ds, err := s.EventDeliveries(ctx, store.EventKey{Tenant: "umbrella", ID: "x"}); err != nil || len(ds) != 0 {
		t.Fatalf("umbrella's x: %+v, %v", ds, err)
	}
}
