package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// testEndpointListStatus lists endpoints of each status: active, paused,
// pending (awaiting verification) and disabled (the breaker), alone and
// with a tenant and a page.
func testEndpointListStatus(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep_active1"))
	mustEndpoint(t, s, endpoint("ep_active2"))
	paused := endpoint("ep_paused")
	paused.Active = false
	paused.Tenant = "acme"
	mustEndpoint(t, s, paused)
	pending := endpoint("ep_pending")
	pending.Verification.Required = true
	mustEndpoint(t, s, pending)
	// A disabled endpoint that is also paused and unverified is disabled.
	disabled := endpoint("ep_disabled")
	disabled.Active = false
	disabled.Verification.Required = true
	mustEndpoint(t, s, disabled)
	hv := mustHealthVersion(t, s, "ep_disabled")
	if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep_disabled", ExpectHealthVersion: hv, Now: t0,
		Health: store.EndpointHealth{ConsecutiveFailures: 10, DisabledAt: t0, DisabledReason: "10 failures"}}); err != nil {
		t.Fatal(err)
	}
	for status, want := range map[string]string{
		store.EndpointActive:   "[ep_active1 ep_active2]",
		store.EndpointPaused:   "[ep_paused]",
		store.EndpointPending:  "[ep_pending]",
		store.EndpointDisabled: "[ep_disabled]",
		"":                     "[ep_active1 ep_active2 ep_disabled ep_paused ep_pending]",
	} {
		eps, err := s.EndpointList(ctx, &store.EndpointListParams{Status: status})
		if got := fmt.Sprint(endpointIDs(eps)); err != nil || got != want {
			t.Errorf("status %q: %s, %v; want %s", status, got, err, want)
		}
	}
	page, err := s.EndpointList(ctx, &store.EndpointListParams{Status: store.EndpointActive, After: "ep_active1", Limit: 5})
	if got := fmt.Sprint(endpointIDs(page)); err != nil || got != "[ep_active2]" {
		t.Errorf("active after ep_active1: %s, %v", got, err)
	}
	for tenant, want := range map[string]string{"acme": "[ep_paused]", "other": "[]"} {
		eps, err := s.EndpointList(ctx, &store.EndpointListParams{Status: store.EndpointPaused, Tenant: tenant})
		if got := fmt.Sprint(endpointIDs(eps)); err != nil || got != want {
			t.Errorf("paused of %s: %s, %v; want %s", tenant, got, err, want)
		}
	}
}

func endpointIDs(eps []store.Endpoint) []string {
	return fieldOf(eps, func(ep *store.Endpoint) string { return ep.ID })
}

// testDeliveryCount counts an endpoint's deliveries under each filter of
// DeliveryList, ignoring the cursor and the limit, and none of another
// endpoint's.
func testDeliveryCount(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	mustEndpoint(t, s, endpoint("ep_other"))
	mustEnqueue(t, s, append(oddEvenDeliveries("ep"), delivery("ep_other", "x", 0))...)
	claimed := mustClaim(t, s, "ep", 1, t0).Deliveries
	if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: mustHealthVersion(t, s, "ep"),
		Now: t0, Results: []store.DeliveryResult{{DeliveryID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken, Status: store.DeliveryExhausted}}}); err != nil {
		t.Fatal(err)
	}
	newest, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", Limit: 1})
	if err != nil || len(newest) != 1 {
		t.Fatalf("list = %v, %v", newest, err)
	}
	for _, c := range []struct {
		name string
		p    store.DeliveryListParams
		want int
	}{
		{"all", store.DeliveryListParams{}, 5},
		{"cursor and limit ignored", store.DeliveryListParams{Before: newest[0].ID, Limit: 1}, 5},
		{"event type", store.DeliveryListParams{EventType: "t.odd"}, 2},
		{"status", store.DeliveryListParams{Status: store.DeliveryExhausted}, 1},
		{"status pending", store.DeliveryListParams{Status: store.DeliveryPending}, 4},
		{"since", store.DeliveryListParams{Since: t0}, 5},
		{"until", store.DeliveryListParams{Until: t0}, 0},
		{"since and until", store.DeliveryListParams{Since: t0.Add(-time.Hour), Until: t0.Add(time.Hour), EventType: "t.x"}, 3},
	} {
		p := c.p
		p.EndpointID = "ep"
		if n, err := s.DeliveryCount(ctx, &p); err != nil || n != c.want {
			t.Errorf("%s: %d, %v; want %d", c.name, n, err, c.want)
		}
	}
	if n, err := s.DeliveryCount(ctx, &store.DeliveryListParams{EndpointID: "ep_none"}); err != nil || n != 0 {
		t.Errorf("unknown endpoint: %d, %v", n, err)
	}
}

// testDeliveryRecentAttempts reads an endpoint's latest attempts, newest
// first and without bodies, among its newest deliveries only, and none of
// another endpoint's.
func testDeliveryRecentAttempts(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	mustEndpoint(t, s, endpoint("ep_other"))
	mustEnqueue(t, s, delivery("ep", "e0", 0), delivery("ep", "e1", 10), delivery("ep", "e2", 20), delivery("ep_other", "x", 0))
	attempt := func(code int, ms int) store.DeliveryAttempt {
		return store.DeliveryAttempt{At: t0, StatusCode: code, ResponseBody: []byte("body"), Latency: time.Duration(ms) * time.Millisecond}
	}
	complete := func(ep string, ds []store.Delivery, outcomes ...store.DeliveryResult) {
		t.Helper()
		for i := range outcomes {
			outcomes[i].DeliveryID, outcomes[i].LeaseToken = ds[i].ID, ds[i].LeaseToken
		}
		if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: ep, ExpectHealthVersion: mustHealthVersion(t, s, ep),
			Now: t0, Results: outcomes}); err != nil {
			t.Fatal(err)
		}
	}
	first := mustClaim(t, s, "ep", 3, t0).Deliveries
	if len(first) != 3 {
		t.Fatalf("claimed %d, want 3", len(first))
	}
	complete("ep", first,
		store.DeliveryResult{Attempt: attempt(500, 30), Status: store.DeliveryFailed, NextAttemptAt: t0},
		store.DeliveryResult{Attempt: attempt(200, 10), Status: store.DeliveryDelivered},
		store.DeliveryResult{Attempt: attempt(200, 20), Status: store.DeliveryDelivered})
	again := mustClaim(t, s, "ep", 1, t0.Add(time.Second)).Deliveries
	if len(again) != 1 || again[0].ID != first[0].ID {
		t.Fatalf("claimed again %v, want %s", again, first[0].ID)
	}
	complete("ep", again, store.DeliveryResult{Attempt: attempt(200, 40), Status: store.DeliveryDelivered})
	complete("ep_other", mustClaim(t, s, "ep_other", 1, t0).Deliveries,
		store.DeliveryResult{Attempt: attempt(503, 99), Status: store.DeliveryFailed, NextAttemptAt: t0.Add(time.Hour)})

	latencies := func(as []store.DeliveryAttempt) []string {
		return fieldOf(as, func(a *store.DeliveryAttempt) string { return a.Latency.String() })
	}
	all, err := s.DeliveryRecentAttempts(ctx, &store.RecentAttemptsParams{EndpointID: "ep", Limit: 10})
	if err != nil || len(all) != 4 {
		t.Fatalf("recent = %v, %v; want 4 attempts", all, err)
	}
	if got := latencies(all); got[0] != "40ms" {
		t.Errorf("newest attempt's latency %v, want 40ms first (of %v)", got[0], got)
	}
	if all[0].DeliveryID != first[0].ID || all[0].StatusCode != 200 || all[0].ResponseBody != nil {
		t.Errorf("newest attempt %+v: want delivery %s, status 200, no body", all[0], first[0].ID)
	}
	codes := map[int]int{}
	for _, a := range all {
		codes[a.StatusCode]++
	}
	if codes[200] != 3 || codes[500] != 1 {
		t.Errorf("status codes %v, want three 200 and one 500", codes)
	}
	// A limit of 1 reads the newest delivery (e2) only.
	one, err := s.DeliveryRecentAttempts(ctx, &store.RecentAttemptsParams{EndpointID: "ep", Limit: 1})
	if err != nil || len(one) != 1 || one[0].Latency != 20*time.Millisecond || one[0].DeliveryID != first[2].ID {
		t.Errorf("limit 1 = %+v, %v; want the attempt of %s (20ms)", one, err, first[2].ID)
	}
	if none, err := s.DeliveryRecentAttempts(ctx, &store.RecentAttemptsParams{EndpointID: "ep_none", Limit: 10}); err != nil || len(none) != 0 {
		t.Errorf("unknown endpoint: %v, %v", none, err)
	}
}
