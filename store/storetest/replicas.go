package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// The replica tests: a handle that stops beating has every claim it
// holds ended by a live one at once, whatever is left of the claims'
// leases; a live handle keeps its claims; a handle never reaps itself.
func runReplicas(t *testing.T, f Factory) {
	run(t, f, "ReplicaReap", testReplicaReap)
	run(t, f, "ReplicaLiveKept", testReplicaLiveKept)
	run(t, f, "ReplicaNotSelf", testReplicaNotSelf)
	run(t, f, "DeliveryLeaseOwner", testDeliveryLeaseOwner)
	run(t, f, "DeliveryReleaseOwn", testDeliveryReleaseOwn)
	run(t, f, "ConsumerReleaseOwn", testConsumerReleaseOwn)
}

// deadAfter is the liveness limit of the replica tests.
const deadAfter = 10 * time.Second

func beat(t *testing.T, s store.Store, at time.Duration) {
	t.Helper()
	if err := s.ReplicaBeat(context.Background(), &store.ReplicaBeatParams{Now: t0.Add(at)}); err != nil {
		t.Fatalf("beat: %v", err)
	}
}

func reap(t *testing.T, s store.Store, at time.Duration) *store.ReplicaReapResult {
	t.Helper()
	res, err := s.ReplicaReap(context.Background(), &store.ReplicaReapParams{Now: t0.Add(at), DeadAfter: deadAfter})
	if err != nil {
		t.Fatalf("reap: %v", err)
	}
	return res
}

// holdClaims makes h hold, at t0 with a one minute lease, three delivery
// leases of endpoint "ep", the timer of one consumer, the timer of one
// reserved-API subscription and the named lease "sweep", and returns the
// deliveries.
func holdClaims(t *testing.T, h store.Store) []store.Delivery {
	t.Helper()
	ctx := context.Background()
	mustEndpoint(t, h, endpoint("ep"))
	manyDeliveries(t, h, "ep", 3)
	c := consumer("s:%2Fc", "s", "/c", "/c")
	c.DueAt = t0
	if _, err := h.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{c}}); err != nil {
		t.Fatal(err)
	}
	claimed := mustClaim(t, h, "ep", 10, t0)
	timers, err := h.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: t0, Limit: 10, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sub := dsSub("ds", "", "h")
	sub.DueAt = t0
	if _, err := h.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: sub, Now: t0}); err != nil {
		t.Fatal(err)
	}
	dsTimers, err := h.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: t0, Limit: 10, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	held, err := h.LeaseAcquire(ctx, &store.LeaseAcquireParams{Name: "sweep", TTL: time.Minute, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed.Deliveries) != 3 || len(timers.Consumers) != 1 || len(dsTimers.Consumers) != 1 || !held {
		t.Fatalf("claims taken: %d deliveries, %d timers, %d reserved-API timers, lease %v", len(claimed.Deliveries), len(timers.Consumers), len(dsTimers.Consumers), held)
	}
	return claimed.Deliveries
}

// A handle whose beat is older than the limit loses every claim to a
// live peer at once: the peer claims its deliveries and its timer and
// takes its named lease long before their leases end, and the dead
// handle's late outcome is not recorded.
func testReplicaReap(t *testing.T, f Factory) {
	s := f.Open(t)
	p := peerOf(t, f, s)
	if p == s {
		return // no peer can reap this backend's only handle (ReplicaNotSelf)
	}
	ctx := context.Background()
	if s.ReplicaID() == "" || s.ReplicaID() == p.ReplicaID() {
		t.Fatalf("replica ids %q and %q", s.ReplicaID(), p.ReplicaID())
	}
	beat(t, s, 0)
	beat(t, p, 0)
	dead := holdClaims(t, s)
	beat(t, p, 9*time.Second)
	if res := reap(t, p, 9*time.Second); len(res.Replicas) != 0 {
		t.Fatalf("reaped a replica whose beat is within the limit: %+v", res)
	}
	beat(t, p, 11*time.Second)
	res := reap(t, p, 11*time.Second)
	if !slices.Equal(res.Replicas, []string{s.ReplicaID()}) || res.Released != 6 {
		t.Fatalf("reap = %+v, want %s with 6 claims", res, s.ReplicaID())
	}
	if again := reap(t, p, 12*time.Second); len(again.Replicas) != 0 || again.Released != 0 {
		t.Fatalf("a second reap = %+v", again)
	}
	now := t0.Add(11 * time.Second)
	if taken := mustClaim(t, p, "ep", 10, now); len(taken.Deliveries) != 3 {
		t.Fatalf("the peer claimed %d of the dead handle's deliveries", len(taken.Deliveries))
	}
	timers, err := p.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: now, Limit: 10, Lease: time.Minute})
	// Both kinds of consumer: a query-string subscription's and a
	// reserved-API subscription's.
	if err != nil || len(timers.Consumers) != 2 || timers.Consumers[0].ID != "__ds/ds" || timers.Consumers[1].ID != "s:%2Fc" {
		t.Fatalf("the peer claimed %+v, %v of the dead handle's timers", timers, err)
	}
	if held, err := p.LeaseAcquire(ctx, &store.LeaseAcquireParams{Name: "sweep", TTL: time.Minute, Now: now}); err != nil || !held {
		t.Fatalf("the peer took the dead handle's named lease: %v, %v", held, err)
	}
	ep, err := s.EndpointGet(ctx, "ep")
	if err != nil {
		t.Fatal(err)
	}
	late, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: ep.HealthVersion, Now: now,
		Results: []store.DeliveryResult{{DeliveryID: dead[0].ID, LeaseToken: dead[0].LeaseToken, Status: store.DeliveryDelivered,
			Attempt: store.DeliveryAttempt{At: t0, StatusCode: 200}}}})
	if err != nil || late.Applied != 0 {
		t.Fatalf("the dead handle's late outcome = %+v, %v", late, err)
	}
	// A reaped handle that beats again is alive again.
	beat(t, s, 20*time.Second)
	if res := reap(t, p, 25*time.Second); len(res.Replicas) != 0 {
		t.Fatalf("reaped a handle that beats again: %+v", res)
	}
}

// A handle that keeps beating keeps its claims, however long they run.
func testReplicaLiveKept(t *testing.T, f Factory) {
	s := f.Open(t)
	p := peerOf(t, f, s)
	if p == s {
		return
	}
	beat(t, s, 0)
	holdClaims(t, s)
	beat(t, s, 25*time.Second)
	beat(t, p, 30*time.Second)
	if res := reap(t, p, 30*time.Second); len(res.Replicas) != 0 || res.Released != 0 {
		t.Fatalf("reaped a live handle: %+v", res)
	}
	if res := mustClaim(t, p, "ep", 10, t0.Add(30*time.Second)); len(res.Deliveries) != 0 {
		t.Fatalf("the peer claimed %d deliveries of a live handle", len(res.Deliveries))
	}
}

// A handle never reaps itself, however old its own beat: on a backend
// without peers nothing is ever reaped, and its claims run their leases.
func testReplicaNotSelf(t *testing.T, f Factory) {
	s := f.Open(t)
	beat(t, s, 0)
	holdClaims(t, s)
	if res := reap(t, s, time.Hour); len(res.Replicas) != 0 || res.Released != 0 {
		t.Fatalf("a handle reaped itself: %+v", res)
	}
	if res := mustClaim(t, s, "ep", 10, t0.Add(30*time.Second)); len(res.Deliveries) != 0 || res.InFlight != 3 {
		t.Fatalf("claims after a reap of oneself = %+v", res)
	}
}

// A delivery read while it is leased names the replica that holds it and
// until when, by id and in the list; one never claimed or finished names
// none, nor one whose holder was reaped.
func testDeliveryLeaseOwner(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	manyDeliveries(t, s, "ep", 3)
	claimed := mustClaim(t, s, "ep", 2, t0).Deliveries
	if len(claimed) != 2 {
		t.Fatalf("claimed %d deliveries", len(claimed))
	}
	got, err := s.DeliveryGet(ctx, claimed[0].ID)
	if err != nil || got.LeaseOwner != s.ReplicaID() || !got.LeaseUntil.Equal(t0.Add(time.Minute)) {
		t.Fatalf("claimed delivery = owner %q until %v, %v; want %q until %v", got.LeaseOwner, got.LeaseUntil, err, s.ReplicaID(), t0.Add(time.Minute))
	}
	hv := mustHealthVersion(t, s, "ep")
	if res, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: hv, Now: t0,
		Results: []store.DeliveryResult{{DeliveryID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken, Status: store.DeliveryDelivered,
			Attempt: store.DeliveryAttempt{At: t0, StatusCode: 200}}}}); err != nil || res.Applied != 1 {
		t.Fatalf("complete = %+v, %v", res, err)
	}
	list, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", Limit: 10})
	if err != nil || len(list) != 3 {
		t.Fatalf("list = %d deliveries, %v", len(list), err)
	}
	owners := map[string]string{}
	for _, d := range list {
		owners[d.ID] = d.LeaseOwner
		if (d.LeaseOwner == "") != d.LeaseUntil.IsZero() {
			t.Fatalf("listed %s: owner %q until %v", d.ID, d.LeaseOwner, d.LeaseUntil)
		}
	}
	if owners[claimed[0].ID] != "" || owners[claimed[1].ID] != s.ReplicaID() || len(owners) != 3 {
		t.Fatalf("listed owners = %v; want only %s held by %q", owners, claimed[1].ID, s.ReplicaID())
	}
	p := peerOf(t, f, s)
	if p == s {
		return // no peer can reap this backend's only handle
	}
	beat(t, s, 0)
	beat(t, p, 11*time.Second)
	if res := reap(t, p, 11*time.Second); res.Released == 0 {
		t.Fatalf("reap = %+v", res)
	}
	if got, err := p.DeliveryGet(ctx, claimed[1].ID); err != nil || got.LeaseOwner != "" || !got.LeaseUntil.IsZero() {
		t.Fatalf("reaped delivery = owner %q until %v, %v", got.LeaseOwner, got.LeaseUntil, err)
	}
}

// A live handle ends its own leases that it does not send on (a claim
// whose answer was lost): the ones of the tokens it keeps, the ones a
// claim still under way may have taken (ending at or after Before), and
// every other handle's stay; the released deliveries are claimable at
// once, and a late outcome of their old lease is not recorded.
func testDeliveryReleaseOwn(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	manyDeliveries(t, s, "ep", 5)
	sent := mustClaim(t, s, "ep", 2, t0).Deliveries                     // e000, e001: in flight
	lost := mustClaim(t, s, "ep", 2, t0.Add(time.Second)).Deliveries    // e002, e003: the answer was lost
	late := mustClaim(t, s, "ep", 1, t0.Add(10*time.Second)).Deliveries // e004: a claim under way
	if len(sent) != 2 || len(lost) != 2 || len(late) != 1 {
		t.Fatalf("claimed %d, %d and %d deliveries", len(sent), len(lost), len(late))
	}
	p := peerOf(t, f, s)
	if p != s {
		mustEndpoint(t, s, endpoint("ep2"))
		manyDeliveries(t, s, "ep2", 1)
		if res := mustClaim(t, p, "ep2", 1, t0); len(res.Deliveries) != 1 {
			t.Fatalf("the peer claimed %d deliveries", len(res.Deliveries))
		}
	}
	now := t0.Add(10 * time.Second)
	n, err := s.DeliveryReleaseOwn(ctx, &store.DeliveryReleaseOwnParams{Keep: []int64{sent[0].LeaseToken}, Before: t0.Add(5*time.Second + time.Minute), Now: now})
	if err != nil || n != 2 {
		t.Fatalf("release own = %d, %v; want the 2 deliveries of the lost claim", n, err)
	}
	if got := eventIDs(mustClaim(t, p, "ep", 10, now).Deliveries); !slices.Equal(got, eventIDs(lost)) {
		t.Fatalf("claimed after the release: %v, want %v", got, eventIDs(lost))
	}
	if p != s {
		if res := mustClaim(t, p, "ep2", 1, now); len(res.Deliveries) != 0 {
			t.Fatal("the peer's lease was released")
		}
	}
	hv := mustHealthVersion(t, s, "ep")
	outcome := func(d store.Delivery) store.DeliveryResult {
		return store.DeliveryResult{DeliveryID: d.ID, LeaseToken: d.LeaseToken, Status: store.DeliveryDelivered, Attempt: store.DeliveryAttempt{At: now, StatusCode: 200}}
	}
	res, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: hv, Now: now,
		Results: []store.DeliveryResult{outcome(sent[0]), outcome(lost[0]), outcome(late[0])}})
	if err != nil || res.Applied != 2 {
		t.Fatalf("outcomes of a kept, a released and a later lease = %+v, %v; want 2 applied", res, err)
	}
	// Leases that ended already are claimable: nothing to release.
	if n, err := s.DeliveryReleaseOwn(ctx, &store.DeliveryReleaseOwnParams{Before: t0.Add(time.Hour), Now: t0.Add(30 * time.Minute)}); err != nil || n != 0 {
		t.Fatalf("release of ended leases = %d, %v", n, err)
	}
}

// A live handle ends its own timer claims that it does not fire (a
// ConsumerClaimDue whose answer was lost), of both kinds of consumer:
// the ones it keeps, the ones a claim still under way may have taken
// (ending at or after Before), and every other handle's stay; the
// released timers are claimable at once.
func testConsumerReleaseOwn(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	due := func(id string, at time.Duration) store.Consumer {
		c := consumer(id, "s", "/"+id, "/"+id)
		c.DueAt = t0.Add(at)
		return c
	}
	// kept is being fired; lost and the reserved-API subscription were
	// taken by the claim whose answer was lost; late by a claim under way.
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{due("kept", 0), due("lost", time.Second), due("late", 10*time.Second)}}); err != nil {
		t.Fatal(err)
	}
	sub := dsSub("ds", "", "h")
	sub.DueAt = t0.Add(time.Second)
	if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: sub, Now: t0}); err != nil {
		t.Fatal(err)
	}
	claim := func(h store.Store, at time.Duration, limit int) []string {
		t.Helper()
		res, err := h.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: t0.Add(at), Limit: limit, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range res.Consumers {
			ids = append(ids, c.ID)
		}
		return ids
	}
	if got := claim(s, 0, 10); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("first claim = %v", got)
	}
	if got := claim(s, time.Second, 10); !slices.Equal(got, []string{"__ds/ds", "lost"}) {
		t.Fatalf("lost claim = %v", got)
	}
	if got := claim(s, 10*time.Second, 10); !slices.Equal(got, []string{"late"}) {
		t.Fatalf("claim under way = %v", got)
	}
	p := peerOf(t, f, s)
	if p != s {
		if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{due("peers", 0)}}); err != nil {
			t.Fatal(err)
		}
		if got := claim(p, 0, 10); !slices.Equal(got, []string{"peers"}) {
			t.Fatalf("the peer claimed %v", got)
		}
	}
	n, err := s.ConsumerReleaseOwn(ctx, &store.ConsumerReleaseOwnParams{Keep: []string{"kept"}, Before: t0.Add(5*time.Second + time.Minute), Now: t0.Add(10 * time.Second)})
	if err != nil || n != 2 {
		t.Fatalf("release own = %d, %v; want the 2 timers of the lost claim", n, err)
	}
	if got := claim(p, 10*time.Second, 10); !slices.Equal(got, []string{"__ds/ds", "lost"}) {
		t.Fatalf("claimed after the release: %v, want the lost claim's timers", got)
	}
	// Claims that ended already are claimable: nothing to release.
	if n, err := s.ConsumerReleaseOwn(ctx, &store.ConsumerReleaseOwnParams{Before: t0.Add(time.Hour), Now: t0.Add(30 * time.Minute)}); err != nil || n != 0 {
		t.Fatalf("release of ended claims = %d, %v", n, err)
	}
}
