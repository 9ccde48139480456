package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func runDeliveries(t *testing.T, f Factory) {
	run(t, f, "EndpointCRUD", testEndpointCRUD)
	run(t, f, "EndpointCursorsSnapshot", testEndpointCursorsSnapshot)
	run(t, f, "EndpointProfileAndVerification", testEndpointProfileAndVerification)
	run(t, f, "EndpointDestination", testEndpointDestination)
	run(t, f, "DeliveryEnqueueCAS", testDeliveryEnqueueCAS)
	run(t, f, "DeliveryClaimLease", testDeliveryClaimLease)
	run(t, f, "DeliveryRecentAttempts", testDeliveryRecentAttempts)
	run(t, f, "DeliveryEnqueueLeased", testDeliveryEnqueueLeased)
	run(t, f, "DeliveryOrderingStream", testDeliveryOrderingStream)
	run(t, f, "DeliveryCompleteHealth", testDeliveryCompleteHealth)
	run(t, f, "DeliveryListRetryPrune", testDeliveryListRetryPrune)
	run(t, f, "EventPublish", testEventPublish)
	run(t, f, "EventIDSpans", testEventIDSpans)
	run(t, f, "EndpointListStatus", testEndpointListStatus)
	run(t, f, "DeliveryCount", testDeliveryCount)
	runEventLog(t, f)
}

func endpoint(id string) store.Endpoint {
	return store.Endpoint{
		ID: id, URL: "https://example.com/" + id, EventTypes: []string{"*"}, Streams: []string{"/**"},
		Active: true, Ordering: "none", RetrySchedule: []time.Duration{0, 5 * time.Second},
		Secret: "whsec_a",
	}
}

func mustEndpoint(t *testing.T, s store.Store, ep store.Endpoint) *store.Endpoint {
	t.Helper()
	out, err := s.EndpointCreate(context.Background(), &store.EndpointCreateParams{Endpoint: ep, Now: t0})
	if err != nil {
		t.Fatalf("create endpoint %s: %v", ep.ID, err)
	}
	return out
}

func delivery(ep, event string, pos int64) store.Delivery {
	return store.Delivery{ID: ep + "/" + event, EndpointID: ep, EventID: event, EventType: "t.x", Stream: "/s",
		Position: pos, Body: []byte(`{"id":"` + event + `"}`), NextAttemptAt: t0}
}

func mustEnqueue(t *testing.T, s store.Store, ds ...store.Delivery) {
	t.Helper()
	if _, err := s.DeliveryEnqueue(context.Background(), &store.DeliveryEnqueueParams{Stream: "/s", Deliveries: ds, Now: t0}); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
}

func mustClaim(t *testing.T, s store.Store, ep string, limit int, now time.Time) *store.DeliveryClaimResult {
	t.Helper()
	res, err := s.DeliveryClaim(context.Background(), &store.DeliveryClaimParams{EndpointID: ep, Limit: limit, Lease: time.Minute, Now: now})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return res
}

func eventIDs(ds []store.Delivery) []string {
	return fieldOf(ds, func(d *store.Delivery) string { return d.EventID })
}

// fieldOf returns one field of each item.
func fieldOf[T any](items []T, field func(*T) string) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = field(&items[i])
	}
	return out
}

// oddEvenDeliveries are five deliveries of ep, e0 to e4 at positions 0
// to 40; the odd ones of type "t.odd".
func oddEvenDeliveries(ep string) []store.Delivery {
	var ds []store.Delivery
	for i := range 5 {
		d := delivery(ep, fmt.Sprintf("e%d", i), int64(i*10))
		if i%2 == 1 {
			d.EventType = "t.odd"
		}
		ds = append(ds, d)
	}
	return ds
}

func testEndpointCRUD(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	ep := endpoint("ep_b")
	ep.Filter = []byte(`{"data.x":1}`)
	ep.Headers = map[string]string{"X-A": "1"}
	ep.Tenant = "acme"
	got := mustEndpoint(t, s, ep)
	if got.Version != 1 || !got.CreatedAt.Equal(t0) || got.Status() != store.EndpointActive {
		t.Fatalf("created = %+v", got)
	}
	_, err := s.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: ep, Now: t0})
	expectErr(t, err, store.ErrEndpointExists)
	mustEndpoint(t, s, endpoint("ep_a"))

	read, err := s.EndpointGet(ctx, "ep_b")
	if err != nil || string(read.Filter) != `{"data.x":1}` || read.Headers["X-A"] != "1" || len(read.RetrySchedule) != 2 ||
		read.RetrySchedule[1] != 5*time.Second || read.Tenant != "acme" || read.Secret != "whsec_a" {
		t.Fatalf("get = %+v, %v", read, err)
	}
	_, err = s.EndpointGet(ctx, "nope")
	expectErr(t, err, store.ErrEndpointNotFound)

	all, err := s.EndpointList(ctx, &store.EndpointListParams{})
	if err != nil || len(all) != 2 || all[0].ID != "ep_a" {
		t.Fatalf("list = %+v, %v", all, err)
	}
	page, err := s.EndpointList(ctx, &store.EndpointListParams{After: "ep_a", Limit: 1})
	if err != nil || len(page) != 1 || page[0].ID != "ep_b" {
		t.Fatalf("page = %+v, %v", page, err)
	}
	byTenant, err := s.EndpointList(ctx, &store.EndpointListParams{Tenant: "acme"})
	if err != nil || len(byTenant) != 1 || byTenant[0].ID != "ep_b" {
		t.Fatalf("by tenant = %+v, %v", byTenant, err)
	}

	read.Active = false
	read.Description = "paused"
	upd, err := s.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *read, ExpectVersion: 1, Now: t0.Add(time.Second)})
	if err != nil || upd.Version != 2 || upd.Status() != store.EndpointPaused || upd.Description != "paused" {
		t.Fatalf("update = %+v, %v", upd, err)
	}
	_, err = s.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *read, ExpectVersion: 1, Now: t0})
	expectErr(t, err, store.ErrEndpointConflict)
	counts, err := s.EndpointCount(ctx)
	if err != nil || counts[store.EndpointActive] != 1 || counts[store.EndpointPaused] != 1 || counts[store.EndpointDisabled] != 0 {
		t.Fatalf("count = %v, %v", counts, err)
	}

	mustEnqueue(t, s, delivery("ep_b", "e1", 0))
	if err := s.EndpointDelete(ctx, "ep_b"); err != nil {
		t.Fatal(err)
	}
	expectErr(t, s.EndpointDelete(ctx, "ep_b"), store.ErrEndpointNotFound)
	if d := byEvent(t, s, "ep_b", "e1"); d != nil {
		t.Fatalf("delivery of a deleted endpoint: %+v", d)
	}
	_, err = s.DeliveryGet(ctx, "dlv_nope")
	expectErr(t, err, store.ErrDeliveryNotFound)

	s = f.Reopen(t, s)
	if _, err := s.EndpointGet(ctx, "ep_a"); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}

// testEndpointProfileAndVerification round-trips the name, profile,
// failure policy, timeout and verification state through create, update
// and a reopen, and checks that an endpoint awaiting verification counts
// as pending and has nothing claimed until it is verified.
func testEndpointProfileAndVerification(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	ep := endpoint("ep_v")
	ep.Name, ep.Profile, ep.FailurePolicy, ep.Timeout = "orders", "x-acme", "retry_all", 1500*time.Millisecond
	ep.Verification = store.EndpointVerification{Required: true, CodeHash: "abc", SentAt: t0, Error: "HTTP 404"}
	mustEndpoint(t, s, ep)
	got, err := s.EndpointGet(ctx, "ep_v")
	if err != nil || got.Name != "orders" || got.Profile != "x-acme" || got.FailurePolicy != "retry_all" ||
		got.Timeout != 1500*time.Millisecond || got.Verification != ep.Verification || got.Status() != store.EndpointPending {
		t.Fatalf("get = %+v, %v", got, err)
	}
	counts, err := s.EndpointCount(ctx)
	if err != nil || counts[store.EndpointPending] != 1 || counts[store.EndpointActive] != 0 {
		t.Fatalf("count = %v, %v", counts, err)
	}
	mustEnqueue(t, s, delivery("ep_v", "e1", 0))
	if res := mustClaim(t, s, "ep_v", 10, t0.Add(time.Second)); len(res.Deliveries) != 0 {
		t.Fatalf("claimed %v from a pending endpoint", eventIDs(res.Deliveries))
	}

	got.Name, got.Profile, got.FailurePolicy, got.Timeout = "orders v2", "", "", 0
	got.Verification = store.EndpointVerification{Required: true, VerifiedAt: t0.Add(time.Minute)}
	upd, err := s.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *got, ExpectVersion: got.Version, Now: t0.Add(time.Minute)})
	if err != nil || upd.Name != "orders v2" || upd.Profile != "" || upd.FailurePolicy != "" || upd.Timeout != 0 ||
		upd.Verification != got.Verification || upd.Status() != store.EndpointActive {
		t.Fatalf("update = %+v, %v", upd, err)
	}
	if res := mustClaim(t, s, "ep_v", 10, t0.Add(2*time.Minute)); len(res.Deliveries) != 1 {
		t.Fatalf("claim after verification = %v", eventIDs(res.Deliveries))
	}
	s = f.Reopen(t, s)
	again, err := s.EndpointGet(ctx, "ep_v")
	if err != nil || again.Name != "orders v2" || again.Verification != got.Verification {
		t.Fatalf("after reopen = %+v, %v", again, err)
	}
}

// testEndpointDestination round-trips an endpoint's type and broker
// config through create, update (a webhook made a broker endpoint and
// back) and a reopen; an endpoint stored without a type reads "webhook".
func testEndpointDestination(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep_w"))
	nats := endpoint("ep_n")
	nats.Type, nats.URL, nats.Destination = "nats", "", []byte(`{"servers":["nats://n.example:4222"],"token":"t0k"}`)
	mustEndpoint(t, s, nats)
	w, err := s.EndpointGet(ctx, "ep_w")
	if err != nil || w.Type != "webhook" || w.Destination != nil {
		t.Fatalf("webhook = %q %s, %v", w.Type, w.Destination, err)
	}
	n, err := s.EndpointGet(ctx, "ep_n")
	if err != nil || n.Type != "nats" || string(n.Destination) != string(nats.Destination) || n.URL != "" {
		t.Fatalf("nats = %q %s, %v", n.Type, n.Destination, err)
	}
	w.Type, w.URL, w.Destination = "kafka", "", []byte(`{"brokers":["k.example:9092"]}`)
	upd, err := s.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *w, ExpectVersion: w.Version, Now: t0.Add(time.Second)})
	if err != nil || upd.Type != "kafka" || string(upd.Destination) != `{"brokers":["k.example:9092"]}` {
		t.Fatalf("update = %q %s, %v", upd.Type, upd.Destination, err)
	}
	n.Type, n.URL, n.Destination = "webhook", "https://example.com/n", nil
	if _, err := s.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *n, ExpectVersion: n.Version, Now: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	s = f.Reopen(t, s)
	eps, err := s.EndpointList(ctx, &store.EndpointListParams{})
	if err != nil || len(eps) != 2 || eps[0].Type != "webhook" || eps[0].Destination != nil || eps[1].Type != "kafka" ||
		string(eps[1].Destination) != `{"brokers":["k.example:9092"]}` {
		t.Fatalf("after reopen = %+v, %v", eps, err)
	}
}

func testEndpointCursorsSnapshot(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/s", ContentType: "application/json", Data: []byte("{}\n"), Messages: 1})
	mustEndpoint(t, s, endpoint("ep"))
	cs, err := s.DeliveryCursors(ctx, &store.DeliveryCursorsParams{Stream: "/s"})
	if err != nil || len(cs) != 1 || cs[0].EndpointID != "ep" || cs[0].Position != 3 || cs[0].StreamID == 0 {
		t.Fatalf("cursors = %+v, %v", cs, err)
	}
	// A stream created after the endpoint has no cursor: the engine reads it
	// from its start. An update snapshots it, so widening patterns does not
	// deliver the past.
	mustCreate(t, s, &store.StreamCreateParams{Path: "/later", ContentType: "application/json", Data: []byte("{}\n"), Messages: 1})
	if cs, _ := s.DeliveryCursors(ctx, &store.DeliveryCursorsParams{Stream: "/later"}); len(cs) != 0 {
		t.Fatalf("cursor before update: %+v", cs)
	}
	ep, err := s.EndpointGet(ctx, "ep")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *ep, ExpectVersion: ep.Version, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if cs, _ := s.DeliveryCursors(ctx, &store.DeliveryCursorsParams{Stream: "/later"}); len(cs) != 1 || cs[0].Position != 3 {
		t.Fatalf("cursor after update: %+v", cs)
	}
}

func testDeliveryEnqueueCAS(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	adv := store.CursorAdvance{EndpointID: "ep", StreamID: 7, Position: 10}
	res, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Cursors: []store.CursorAdvance{adv},
		Deliveries: []store.Delivery{delivery("ep", "e1", 0), delivery("ep", "e2", 5)}, Now: t0})
	if err != nil || res.Queued != 2 {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	// The same expected state again: the cursor moved, nothing is written.
	_, err = s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Cursors: []store.CursorAdvance{adv},
		Deliveries: []store.Delivery{delivery("ep", "e3", 10)}, Now: t0})
	expectErr(t, err, store.ErrCursorConflict)
	if byEvent(t, s, "ep", "e3") != nil {
		t.Fatal("a conflicting enqueue wrote its delivery")
	}
	next := store.CursorAdvance{EndpointID: "ep", Found: true, ExpectStreamID: 7, ExpectPosition: 10, StreamID: 7, Position: 20}
	// One delivery per (endpoint, event): e1 again is not a second delivery.
	res, err = s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Cursors: []store.CursorAdvance{next},
		Deliveries: []store.Delivery{delivery("ep", "e3", 10), {ID: "other", EndpointID: "ep", EventID: "e1", Stream: "/s", Body: []byte("{}")}}, Now: t0})
	if err != nil || res.Queued != 1 {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	cs, err := s.DeliveryCursors(ctx, &store.DeliveryCursorsParams{Stream: "/s"})
	if err != nil || len(cs) != 1 || cs[0].Position != 20 {
		t.Fatalf("cursors = %+v, %v", cs, err)
	}
	s = f.Reopen(t, s)
	d, err := s.DeliveryGet(ctx, byEvent(t, s, "ep", "e3").ID)
	if err != nil || d.Status != store.DeliveryPending || string(d.Body) != `{"id":"e3"}` || d.Position != 10 {
		t.Fatalf("after reopen = %+v, %v", d, err)
	}
	backlog, err := s.DeliveryBacklog(ctx)
	if err != nil || backlog["ep"] != 3 {
		t.Fatalf("backlog = %v, %v", backlog, err)
	}
}

func testDeliveryClaimLease(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	later := delivery("ep", "e3", 20)
	later.NextAttemptAt = t0.Add(time.Hour)
	mustEnqueue(t, s, delivery("ep", "e1", 0), delivery("ep", "e2", 10), later)

	res := mustClaim(t, s, "ep", 1, t0)
	if got := eventIDs(res.Deliveries); len(got) != 1 || got[0] != "e1" || string(res.Deliveries[0].Body) != `{"id":"e1"}` {
		t.Fatalf("claim = %v", got)
	}
	first := res.Deliveries[0]
	if !first.LeaseUntil.Equal(t0.Add(time.Minute)) {
		t.Fatalf("lease until %v", first.LeaseUntil)
	}
	res = mustClaim(t, s, "ep", 10, t0)
	if got := eventIDs(res.Deliveries); len(got) != 1 || got[0] != "e2" {
		t.Fatalf("second claim = %v (a leased delivery was claimed twice?)", got)
	}
	if !res.NextDueAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next due = %v, want the lease end", res.NextDueAt)
	}
	// The sender of e1 died: after the lease, e1 is claimable again with a
	// new token, and the dead sender's late result is ignored.
	re := mustClaim(t, s, "ep", 10, t0.Add(time.Minute))
	var again store.Delivery
	for _, d := range re.Deliveries {
		if d.EventID == "e1" {
			again = d
		}
	}
	if again.ID == "" || again.LeaseToken == first.LeaseToken {
		t.Fatalf("reclaim = %+v", re.Deliveries)
	}
	ep, _ := s.EndpointGet(ctx, "ep")
	cres, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: ep.HealthVersion, Now: t0.Add(time.Minute),
		Results: []store.DeliveryResult{
			{DeliveryID: first.ID, LeaseToken: first.LeaseToken, Status: store.DeliveryDelivered, Attempt: store.DeliveryAttempt{At: t0, StatusCode: 200}},
			{DeliveryID: again.ID, LeaseToken: again.LeaseToken, Status: store.DeliveryFailed, NextAttemptAt: t0.Add(2 * time.Minute),
				Attempt: store.DeliveryAttempt{At: t0.Add(time.Minute), StatusCode: 503, ResponseBody: []byte("busy"), Latency: time.Millisecond, Error: "HTTP 503"}},
		}})
	if err != nil || cres.Applied != 1 {
		t.Fatalf("complete = %+v, %v", cres, err)
	}
	d, err := s.DeliveryGet(ctx, first.ID)
	if err != nil || d.Status != store.DeliveryFailed || d.Attempts != 1 || d.LastStatusCode != 503 || !d.NextAttemptAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("after complete = %+v, %v", d, err)
	}
	atts, err := s.DeliveryAttempts(ctx, first.ID)
	if err != nil || len(atts) != 1 || string(atts[0].ResponseBody) != "busy" || atts[0].Latency != time.Millisecond || atts[0].Error != "HTTP 503" {
		t.Fatalf("attempts = %+v, %v", atts, err)
	}
	// Paused endpoints are not claimed.
	if ep, err = s.EndpointGet(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	ep.Active = false
	if _, err := s.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *ep, ExpectVersion: ep.Version, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if res := mustClaim(t, s, "ep", 10, t0.Add(3*time.Hour)); len(res.Deliveries) != 0 {
		t.Fatalf("claimed from a paused endpoint: %v", eventIDs(res.Deliveries))
	}
}

// A sender with free slots takes fresh deliveries leased at insert: no
// claim sees them while the lease runs, the lease token completes them,
// and if the sender dies they fall due when the lease ends.
func testDeliveryEnqueueLeased(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	leased := func(event string, pos int64) store.Delivery {
		d := delivery("ep", event, pos)
		d.LeaseUntil = t0.Add(time.Minute)
		return d
	}
	mustEnqueue(t, s, delivery("ep", "e0", 0))
	res, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Now: t0,
		Deliveries: []store.Delivery{leased("e1", 10), leased("e2", 20), delivery("ep", "e3", 30), leased("e0", 0)}})
	if err != nil || res.Queued != 3 {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	// e0 existed: it is neither inserted again nor leased.
	if got := fmt.Sprint(eventIDs(res.Leased)); got != "[e1 e2]" {
		t.Fatalf("leased = %s, want [e1 e2]", got)
	}
	e1 := res.Leased[0]
	if e1.ID == "" || e1.LeaseToken == 0 || !e1.LeaseUntil.Equal(t0.Add(time.Minute)) || e1.Status != store.DeliveryPending ||
		string(e1.Body) != `{"id":"e1"}` {
		t.Fatalf("leased delivery = %+v", e1)
	}
	if got := eventIDs(mustClaim(t, s, "ep", 10, t0).Deliveries); fmt.Sprint(got) != "[e0 e3]" {
		t.Fatalf("claim = %v, want only the unleased ones", got)
	}
	stored, err := s.DeliveryGet(ctx, e1.ID)
	if err != nil || stored.EventID != "e1" || stored.LeaseToken != e1.LeaseToken || !stored.LeaseUntil.Equal(t0.Add(time.Minute)) {
		t.Fatalf("stored = %+v, %v", stored, err)
	}
	hv := mustHealthVersion(t, s, "ep")
	cres, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: hv, Now: t0,
		Results: []store.DeliveryResult{{DeliveryID: e1.ID, LeaseToken: e1.LeaseToken, Status: store.DeliveryDelivered,
			Attempt: store.DeliveryAttempt{At: t0, StatusCode: 204}}}})
	if err != nil || cres.Applied != 1 {
		t.Fatalf("complete = %+v, %v", cres, err)
	}
	// e2's sender died (as did e0's and e3's): e2 is claimed again when
	// its lease ends, with a new token (its dead sender's late result
	// would be ignored); e1, delivered, is not.
	if res := mustClaim(t, s, "ep", 10, t0.Add(time.Second)); len(res.Deliveries) != 0 || !res.NextDueAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("claim during the lease = %v, next %v", eventIDs(res.Deliveries), res.NextDueAt)
	}
	again := mustClaim(t, s, "ep", 10, t0.Add(time.Minute)).Deliveries
	if got := fmt.Sprint(eventIDs(again)); got != "[e0 e2 e3]" || again[1].LeaseToken == res.Leased[1].LeaseToken {
		t.Fatalf("after the lease = %s, %+v", got, again)
	}
}

func testDeliveryOrderingStream(t *testing.T, f Factory) {
	s := f.Open(t)
	ep := endpoint("ep")
	ep.Ordering = "stream"
	mustEndpoint(t, s, ep)
	other := delivery("ep", "o1", 0)
	other.Stream = "/other"
	mustEnqueue(t, s, delivery("ep", "e1", 0), delivery("ep", "e2", 10), delivery("ep", "e3", 20), other)
	res := mustClaim(t, s, "ep", 10, t0)
	if got := fmt.Sprint(eventIDs(res.Deliveries)); got != "[e1 o1]" {
		t.Fatalf("claim = %s, want the head of each stream", got)
	}
	e1 := res.Deliveries[0]
	// e1 fails and waits for its retry: e2 stays behind it.
	hv := mustHealthVersion(t, s, "ep")
	if _, err := s.DeliveryComplete(context.Background(), &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: hv, Now: t0,
		Results: []store.DeliveryResult{{DeliveryID: e1.ID, LeaseToken: e1.LeaseToken, Status: store.DeliveryFailed, NextAttemptAt: t0.Add(time.Minute)}}}); err != nil {
		t.Fatal(err)
	}
	if res := mustClaim(t, s, "ep", 10, t0.Add(time.Second)); len(res.Deliveries) != 0 || !res.NextDueAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("claim behind a failed head = %v, next %v", eventIDs(res.Deliveries), res.NextDueAt)
	}
	// At t0+1m e1 is due, and o1's lease (never completed) has ended.
	if got := eventIDs(mustClaim(t, s, "ep", 10, t0.Add(time.Minute)).Deliveries); fmt.Sprint(got) != "[e1 o1]" {
		t.Fatalf("retry claim = %v", got)
	}
}

// byEvent returns the endpoint's delivery of an event, or nil.
func byEvent(t *testing.T, s store.Store, ep, event string) *store.Delivery {
	t.Helper()
	ds, err := s.DeliveryList(context.Background(), &store.DeliveryListParams{EndpointID: ep})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ds {
		if ds[i].EventID == event {
			return &ds[i]
		}
	}
	return nil
}

func mustHealthVersion(t *testing.T, s store.Store, id string) int64 {
	t.Helper()
	ep, err := s.EndpointGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ep.HealthVersion
}

func testDeliveryCompleteHealth(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	mustEnqueue(t, s, delivery("ep", "e1", 0))
	hv := mustHealthVersion(t, s, "ep")
	h := store.EndpointHealth{ConsecutiveFailures: 10, LastFailureAt: t0, LastError: "HTTP 500", DisabledAt: t0, DisabledReason: "10 failures"}
	res, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", Health: h, ExpectHealthVersion: hv, Now: t0})
	if err != nil || res.HealthVersion != hv+1 {
		t.Fatalf("complete = %+v, %v", res, err)
	}
	_, err = s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", Health: h, ExpectHealthVersion: hv, Now: t0})
	expectErr(t, err, store.ErrEndpointConflict)
	_, err = s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "nope", ExpectHealthVersion: 1, Now: t0})
	expectErr(t, err, store.ErrEndpointNotFound)
	ep, _ := s.EndpointGet(ctx, "ep")
	if ep.Status() != store.EndpointDisabled || ep.Health.ConsecutiveFailures != 10 || ep.Health.DisabledReason != "10 failures" {
		t.Fatalf("endpoint = %+v", ep)
	}
	// Disabled: pending deliveries are kept but not claimed.
	if res := mustClaim(t, s, "ep", 10, t0); len(res.Deliveries) != 0 {
		t.Fatal("claimed from a disabled endpoint")
	}
	ep, err = s.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *ep, ExpectVersion: ep.Version, ResetHealth: true, Now: t0})
	if err != nil || ep.Status() != store.EndpointActive || ep.Health.ConsecutiveFailures != 0 || ep.HealthVersion != hv+2 {
		t.Fatalf("re-enabled = %+v, %v", ep, err)
	}
	if got := eventIDs(mustClaim(t, s, "ep", 10, t0).Deliveries); fmt.Sprint(got) != "[e1]" {
		t.Fatalf("claim after re-enable = %v", got)
	}
	counts, _ := s.EndpointCount(ctx)
	if counts[store.EndpointActive] != 1 {
		t.Fatalf("counts = %v", counts)
	}
}

func testDeliveryListRetryPrune(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	mustEnqueue(t, s, oddEvenDeliveries("ep")...)
	claimed := mustClaim(t, s, "ep", 2, t0).Deliveries // e0, e1
	hv := mustHealthVersion(t, s, "ep")
	if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: hv, Now: t0,
		Results: []store.DeliveryResult{
			{DeliveryID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken, Status: store.DeliveryDelivered},
			{DeliveryID: claimed[1].ID, LeaseToken: claimed[1].LeaseToken, Status: store.DeliveryExhausted},
		}}); err != nil {
		t.Fatal(err)
	}
	page1, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", Limit: 3})
	if err != nil || fmt.Sprint(eventIDs(page1)) != "[e4 e3 e2]" || page1[0].Body != nil {
		t.Fatalf("page 1 = %v, %v", eventIDs(page1), err)
	}
	page2, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", Limit: 3, Before: page1[2].ID})
	if err != nil || fmt.Sprint(eventIDs(page2)) != "[e1 e0]" {
		t.Fatalf("page 2 = %v, %v", eventIDs(page2), err)
	}
	for _, junk := range []string{"1", "dlv_1", page1[2].ID + "0", strings.ToUpper(page1[2].ID)} {
		if _, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", Before: junk}); !errors.Is(err, store.ErrInvalidCursor) {
			t.Fatalf("cursor %q: %v, want ErrInvalidCursor", junk, err)
		}
	}
	odd, _ := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", EventType: "t.odd"})
	dead, _ := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", Status: store.DeliveryExhausted})
	none, _ := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", Until: t0})
	if fmt.Sprint(eventIDs(odd)) != "[e3 e1]" || fmt.Sprint(eventIDs(dead)) != "[e1]" || len(none) != 0 {
		t.Fatalf("filters: odd %v dead %v until %v", eventIDs(odd), eventIDs(dead), eventIDs(none))
	}

	r, err := s.DeliveryRetry(ctx, &store.DeliveryRetryParams{ID: claimed[1].ID, Now: t0.Add(time.Hour)})
	if err != nil || r.Status != store.DeliveryPending || r.RoundAttempts != 0 || r.Attempts != 1 || !r.NextAttemptAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	_, err = s.DeliveryRetry(ctx, &store.DeliveryRetryParams{ID: "nope", Now: t0})
	expectErr(t, err, store.ErrDeliveryNotFound)

	// Replay makes a finished delivery pending again; unfinished ones are
	// left alone.
	res, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Replay: true, Now: t0,
		Deliveries: []store.Delivery{delivery("ep", "e0", 0), delivery("ep", "e2", 20)}})
	if err != nil || res.Queued != 1 {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	claimed = mustClaim(t, s, "ep", 1, t0).Deliveries
	if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: hv + 1, Now: t0,
		Results: []store.DeliveryResult{{DeliveryID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken, Status: store.DeliveryDelivered,
			Attempt: store.DeliveryAttempt{At: t0, StatusCode: 204}}}}); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeliveryPrune(ctx, &store.DeliveryPruneParams{Before: t0.Add(time.Second)})
	if err != nil || n != 1 {
		t.Fatalf("prune = %d, %v", n, err)
	}
	if _, err := s.DeliveryGet(ctx, claimed[0].ID); err == nil {
		t.Fatal("pruned delivery still there")
	}
	if atts, _ := s.DeliveryAttempts(ctx, claimed[0].ID); len(atts) != 0 {
		t.Fatalf("pruned delivery's attempts still there: %v", atts)
	}
	backlog, _ := s.DeliveryBacklog(ctx)
	if backlog["ep"] != 4 {
		t.Fatalf("backlog = %v", backlog)
	}
}
