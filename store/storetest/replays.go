package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func runReplays(t *testing.T, f Factory) {
	run(t, f, "ReplayJobLifecycle", testReplayJobLifecycle)
	run(t, f, "ReplayJobWithDeliveries", testReplayJobWithDeliveries)
	run(t, f, "EventSightings", testEventSightings)
	run(t, f, "EventIDsPerTenant", testEventIDsPerTenant)
	run(t, f, "DeliveriesPerEventTenant", testDeliveriesPerEventTenant)
}

func mustJob(t *testing.T, s store.Store, id string) *store.ReplayJob {
	t.Helper()
	j, err := s.ReplayJobGet(context.Background(), id)
	if err != nil {
		t.Fatalf("read job %s: %v", id, err)
	}
	return j
}

// A job is created running and held by its owner, stepped only by it,
// claimed by another once its lease ends, finished once, kept across a
// reopen, and removed with its endpoint or by the prune once finished.
func testReplayJobLifecycle(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	job := &store.ReplayJob{ID: "rpl_1", EndpointID: "ep", Tenant: "acme", Request: []byte(`{"a":1}`), Owner: "run-a",
		LeaseUntil: t0.Add(time.Minute), CreatedAt: t0}
	if err := s.ReplayJobCreate(ctx, job); err != nil {
		t.Fatal(err)
	}
	expectErr(t, s.ReplayJobCreate(ctx, job), store.ErrReplayJobExists)
	_, err := s.ReplayJobGet(ctx, "rpl_nope")
	expectErr(t, err, store.ErrReplayJobNotFound)
	got := mustJob(t, s, "rpl_1")
	if got.State != store.ReplayRunning || got.Tenant != "acme" || string(got.Request) != `{"a":1}` || got.Owner != "run-a" ||
		!got.LeaseUntil.Equal(t0.Add(time.Minute)) || !got.CreatedAt.Equal(t0) || got.Queued != 0 || len(got.Progress) != 0 {
		t.Fatalf("created job = %+v", got)
	}
	step := store.ReplayJobStep{ID: "rpl_1", Owner: "run-a", AddTotal: 3, AddQueued: 2, Progress: []byte(`{"p":1}`),
		LeaseUntil: t0.Add(2 * time.Minute), State: store.ReplayRunning}
	if err := s.ReplayJobUpdate(ctx, &store.ReplayJobUpdateParams{Step: step, Now: t0}); err != nil {
		t.Fatal(err)
	}
	other := step
	other.Owner = "run-b"
	expectErr(t, s.ReplayJobUpdate(ctx, &store.ReplayJobUpdateParams{Step: other, Now: t0}), store.ErrReplayJobLost)
	// Not claimable while its lease runs; claimed by another after.
	if js, err := s.ReplayJobClaim(ctx, &store.ReplayJobClaimParams{Owner: "run-b", LeaseUntil: t0.Add(time.Hour), Limit: 5,
		Now: t0.Add(time.Minute)}); err != nil || len(js) != 0 {
		t.Fatalf("claim during the lease = %v, %v", js, err)
	}
	s = f.Reopen(t, s)
	js, err := s.ReplayJobClaim(ctx, &store.ReplayJobClaimParams{Owner: "run-b", LeaseUntil: t0.Add(time.Hour), Limit: 5,
		Now: t0.Add(3 * time.Minute)})
	if err != nil || len(js) != 1 || js[0].Owner != "run-b" || js[0].Total != 3 || js[0].Queued != 2 || string(js[0].Progress) != `{"p":1}` {
		t.Fatalf("claim after the lease = %+v, %v", js, err)
	}
	expectErr(t, s.ReplayJobUpdate(ctx, &store.ReplayJobUpdateParams{Step: step, Now: t0}), store.ErrReplayJobLost)
	done := other
	done.AddTotal, done.AddQueued, done.State, done.Truncated = 1, 1, store.ReplayDone, true
	if err := s.ReplayJobUpdate(ctx, &store.ReplayJobUpdateParams{Step: done, Now: t0.Add(4 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got = mustJob(t, s, "rpl_1")
	if got.State != store.ReplayDone || !got.Truncated || got.Total != 4 || got.Queued != 3 || !got.FinishedAt.Equal(t0.Add(4*time.Minute)) {
		t.Fatalf("finished job = %+v", got)
	}
	expectErr(t, s.ReplayJobUpdate(ctx, &store.ReplayJobUpdateParams{Step: done, Now: t0}), store.ErrReplayJobLost)
	if js, err := s.ReplayJobClaim(ctx, &store.ReplayJobClaimParams{Owner: "run-c", LeaseUntil: t0.Add(time.Hour), Limit: 5,
		Now: t0.Add(time.Hour)}); err != nil || len(js) != 0 {
		t.Fatalf("claim of a finished job = %v, %v", js, err)
	}
	if _, err := s.DeliveryPrune(ctx, &store.DeliveryPruneParams{Before: t0.Add(5 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	_, err = s.ReplayJobGet(ctx, "rpl_1")
	expectErr(t, err, store.ErrReplayJobNotFound)

	job.ID = "rpl_2"
	if err := s.ReplayJobCreate(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := s.EndpointDelete(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	_, err = s.ReplayJobGet(ctx, "rpl_2")
	expectErr(t, err, store.ErrReplayJobNotFound)
}

// A replay's enqueue and requeue step its job in their transaction,
// adding what they queued; a lost job writes nothing.
func testReplayJobWithDeliveries(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	if err := s.ReplayJobCreate(ctx, &store.ReplayJob{ID: "rpl_1", EndpointID: "ep", Owner: "run-a", LeaseUntil: t0.Add(time.Minute),
		CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	step := &store.ReplayJobStep{ID: "rpl_1", Owner: "run-a", AddTotal: 2, Progress: []byte(`{"p":2}`), LeaseUntil: t0.Add(time.Minute),
		State: store.ReplayRunning}
	res, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Replay: true, Now: t0, Job: step,
		Deliveries: []store.Delivery{delivery("ep", "e0", 0), delivery("ep", "e1", 10)}})
	if err != nil || res.Queued != 2 {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	if j := mustJob(t, s, "rpl_1"); j.Total != 2 || j.Queued != 2 || string(j.Progress) != `{"p":2}` {
		t.Fatalf("job after the enqueue = %+v", j)
	}
	lost := *step
	lost.Owner = "run-b"
	_, err = s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Replay: true, Now: t0, Job: &lost,
		Deliveries: []store.Delivery{delivery("ep", "e2", 20)}})
	expectErr(t, err, store.ErrReplayJobLost)
	if d := byEvent(t, s, "ep", "e2"); d != nil {
		t.Fatalf("a lost job's enqueue wrote %+v", d)
	}

	claimed := mustClaim(t, s, "ep", 2, t0).Deliveries
	hv := mustHealthVersion(t, s, "ep")
	if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: hv, Now: t0,
		Results: []store.DeliveryResult{
			{DeliveryID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken, Status: store.DeliveryExhausted},
			{DeliveryID: claimed[1].ID, LeaseToken: claimed[1].LeaseToken, Status: store.DeliveryFailed, NextAttemptAt: t0.Add(time.Hour)},
		}}); err != nil {
		t.Fatal(err)
	}
	ids := []string{claimed[0].ID, claimed[1].ID, "dlv_nope"}
	_, err = s.DeliveryRequeue(ctx, &store.DeliveryRequeueParams{EndpointID: "ep", IDs: ids, Status: store.DeliveryExhausted, Now: t0, Job: &lost})
	expectErr(t, err, store.ErrReplayJobLost)
	step.AddTotal = 1
	n, err := s.DeliveryRequeue(ctx, &store.DeliveryRequeueParams{EndpointID: "ep", IDs: ids, Status: store.DeliveryExhausted,
		Now: t0.Add(time.Minute), Job: step})
	if err != nil || n != 1 {
		t.Fatalf("requeue = %d, %v", n, err)
	}
	d := byEvent(t, s, "ep", claimed[0].EventID)
	if d.Status != store.DeliveryPending || d.RoundAttempts != 0 || d.Attempts != 1 || !d.NextAttemptAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("requeued delivery = %+v", d)
	}
	if d := byEvent(t, s, "ep", claimed[1].EventID); d.Status != store.DeliveryFailed {
		t.Fatalf("a delivery of another status was requeued: %+v", d)
	}
	if j := mustJob(t, s, "rpl_1"); j.Total != 3 || j.Queued != 3 {
		t.Fatalf("job after the requeue = %+v", j)
	}
	// A step without progress keeps the stored one.
	if err := s.ReplayJobUpdate(ctx, &store.ReplayJobUpdateParams{Step: store.ReplayJobStep{ID: "rpl_1", Owner: "run-a",
		State: store.ReplayRunning}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, s, "rpl_1"); string(j.Progress) != `{"p":2}` || !j.LeaseUntil.IsZero() {
		t.Fatalf("job after a step without progress = %+v", j)
	}
	if n, err := s.DeliveryRequeue(ctx, &store.DeliveryRequeueParams{EndpointID: "other", IDs: ids, Status: store.DeliveryFailed,
		Now: t0}); err != nil || n != 0 {
		t.Fatalf("requeue of another endpoint's deliveries = %d, %v", n, err)
	}
}

// Event ids met by the matcher are recorded where first seen: seen again
// at the same place they pass, elsewhere the enqueue conflicts; a publish
// of a sighted id is a duplicate pointing at the sighting.
func testEventSightings(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	seen, err := s.EventIDsSeen(ctx, nil)
	if err != nil || len(seen) != 0 {
		t.Fatalf("seen of nothing = %v, %v", seen, err)
	}
	pub, err := s.EventPublish(ctx, &store.EventPublishParams{Stream: "/events", EventID: "p1", Data: []byte(`{"id":"p1"}` + "\n"), Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	enqueue := func(sg ...store.EventSighting) error {
		_, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Sightings: sg, Now: t0,
			Deliveries: []store.Delivery{delivery("ep", "x", 0)}})
		return err
	}
	if err := enqueue(store.EventSighting{EventID: "x", Position: 0}, store.EventSighting{EventID: "y", Position: 10}); err != nil {
		t.Fatal(err)
	}
	if err := enqueue(store.EventSighting{EventID: "x", Position: 0}); err != nil {
		t.Fatalf("the same sighting again: %v", err)
	}
	expectErr(t, enqueue(store.EventSighting{EventID: "x", Position: 30}), store.ErrCursorConflict)
	// A conflict writes nothing: z is not recorded.
	expectErr(t, enqueue(store.EventSighting{EventID: "z", Position: 40}, store.EventSighting{EventID: "p1", Position: 50}), store.ErrCursorConflict)
	s = f.Reopen(t, s)
	seen, err = s.EventIDsSeen(ctx, []store.EventKey{{ID: "x"}, {ID: "y"}, {ID: "z"}, {ID: "p1"}})
	want := map[store.EventKey]store.EventPlace{{ID: "x"}: {Stream: "/s", Position: 0}, {ID: "y"}: {Stream: "/s", Position: 10},
		{ID: "p1"}: {Stream: "/events", Position: pub.Position}}
	if err != nil || len(seen) != len(want) {
		t.Fatalf("seen = %v, %v; want %v", seen, err, want)
	}
	for id, at := range want {
		if seen[id] != at {
			t.Fatalf("seen[%s] = %v, want %v", id, seen[id], at)
		}
	}
	res, err := s.EventPublish(ctx, &store.EventPublishParams{Stream: "/events", EventID: "y", Data: []byte(`{"id":"y"}` + "\n"), Now: t0})
	if err != nil || !res.Duplicate || res.Stream != "/s" || res.Position != 10 {
		t.Fatalf("publish of a sighted id = %+v, %v", res, err)
	}
	if _, err := s.DeliveryPrune(ctx, &store.DeliveryPruneParams{Before: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if seen, err := s.EventIDsSeen(ctx, []store.EventKey{{ID: "x"}, {ID: "y"}, {ID: "p1"}}); err != nil || len(seen) != 0 {
		t.Fatalf("seen after the retention = %v, %v", seen, err)
	}
}

// Event ids are unique per tenant: the same id published or sighted in
// two tenants (or a tenant and the platform) is recorded twice, each
// where its tenant first saw it; a duplicate is only ever one of the
// same tenant; a sighting conflicts only with its own tenant's place.
func testEventIDsPerTenant(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	publish := func(tenant, stream string) *store.EventPublishResult {
		t.Helper()
		res, err := s.EventPublish(ctx, &store.EventPublishParams{Stream: stream, Tenant: tenant, EventID: "order-1",
			Data: []byte(`{"id":"order-1"}` + "\n"), Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	globex := publish("globex", "/globex")
	acme := publish("acme", "/acme")
	platform := publish("", "/events")
	if globex.Duplicate || acme.Duplicate || platform.Duplicate || acme.Stream != "/acme" || platform.Stream != "/events" {
		t.Fatalf("one id in three tenants: %+v, %+v, %+v", globex, acme, platform)
	}
	if again := publish("acme", "/other"); !again.Duplicate || again.Stream != "/acme" || again.Position != acme.Position {
		t.Fatalf("acme's id again = %+v, want its own first place", again)
	}
	enqueue := func(sg ...store.EventSighting) error {
		_, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/raw", Sightings: sg, Now: t0})
		return err
	}
	// Sighted in a fourth tenant it is new there; in acme it conflicts
	// with acme's publish, and nothing of the call is written.
	if err := enqueue(store.EventSighting{Tenant: "initech", EventID: "order-1", Position: 5}); err != nil {
		t.Fatal(err)
	}
	expectErr(t, enqueue(store.EventSighting{Tenant: "umbrella", EventID: "order-2", Position: 9},
		store.EventSighting{Tenant: "acme", EventID: "order-1", Position: 7}), store.ErrCursorConflict)
	s = f.Reopen(t, s)
	keys := []store.EventKey{{Tenant: "globex", ID: "order-1"}, {Tenant: "acme", ID: "order-1"}, {ID: "order-1"},
		{Tenant: "initech", ID: "order-1"}, {Tenant: "umbrella", ID: "order-2"}, {Tenant: "nobody", ID: "order-1"}}
	seen, err := s.EventIDsSeen(ctx, keys)
	want := map[store.EventKey]store.EventPlace{
		keys[0]: {Stream: "/globex", Position: globex.Position}, keys[1]: {Stream: "/acme", Position: acme.Position},
		keys[2]: {Stream: "/events", Position: platform.Position}, keys[3]: {Stream: "/raw", Position: 5}}
	if err != nil || len(seen) != len(want) {
		t.Fatalf("seen = %v, %v; want %v", seen, err, want)
	}
	for k, at := range want {
		if seen[k] != at {
			t.Fatalf("seen[%+v] = %v, want %v", k, seen[k], at)
		}
	}
}

// An endpoint receiving several tenants' events has one delivery per
// (event tenant, event id): the same id of two tenants is two
// deliveries, each kept with its tenant, and a repeat of either is left
// as it is (a replay makes only that tenant's finished one pending).
func testDeliveriesPerEventTenant(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	of := func(tenant string, pos int64) store.Delivery {
		d := delivery("ep", "order-1", pos)
		d.EventTenant = tenant
		return d
	}
	enqueue := func(replay bool, ds ...store.Delivery) int {
		t.Helper()
		res, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Deliveries: ds, Replay: replay, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		return res.Queued
	}
	if n := enqueue(false, of("acme", 0), of("globex", 10), of("", 20)); n != 3 {
		t.Fatalf("one id of three tenants queued %d deliveries, want 3", n)
	}
	if n := enqueue(false, of("acme", 30)); n != 0 {
		t.Fatalf("acme's id again queued %d", n)
	}
	s = f.Reopen(t, s)
	list, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep"})
	if err != nil || len(list) != 3 {
		t.Fatalf("deliveries = %+v, %v", list, err)
	}
	byTenant := map[string]int64{}
	for _, d := range list {
		byTenant[d.EventTenant] = d.Position
	}
	if byTenant["acme"] != 0 || byTenant["globex"] != 10 || byTenant[""] != 20 {
		t.Fatalf("deliveries by event tenant = %v", byTenant)
	}
	claim := mustClaim(t, s, "ep", 10, t0)
	var results []store.DeliveryResult
	for _, d := range claim.Deliveries {
		results = append(results, store.DeliveryResult{DeliveryID: d.ID, LeaseToken: d.LeaseToken, Status: store.DeliveryDelivered,
			Attempt: store.DeliveryAttempt{DeliveryID: d.ID, At: t0, StatusCode: 200}})
	}
	ep, _ := s.EndpointGet(ctx, "ep")
	if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", Results: results,
		ExpectHealthVersion: ep.HealthVersion, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if n := enqueue(true, of("globex", 10)); n != 1 {
		t.Fatalf("replay of globex's event queued %d, want 1", n)
	}
	pending, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", Status: store.DeliveryPending})
	if err != nil || len(pending) != 1 || pending[0].EventTenant != "globex" {
		t.Fatalf("pending after the replay = %+v, %v", pending, err)
	}
}
