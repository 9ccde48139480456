package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// The peer tests run two handles on one database, as replicas do, where
// the backend allows it (Store.Peers); a backend that owns its database
// alone runs them on one handle, where the same contract holds, and
// shows that no peer opens.
func runPeers(t *testing.T, f Factory) {
	run(t, f, "PeerOpen", testPeerOpen)
	run(t, f, "PeerClaimsDisjoint", testPeerClaimsDisjoint)
	run(t, f, "PeerTakeover", testPeerTakeover)
	run(t, f, "PeerMaxInFlight", testPeerMaxInFlight)
	run(t, f, "PeerRateLimit", testPeerRateLimit)
	run(t, f, "PeerConsumerClaims", testPeerConsumerClaims)
	run(t, f, "PeerConsumerCAS", testPeerConsumerCAS)
	run(t, f, "PeerNamedLease", testPeerNamedLease)
}

// peerOf returns a second handle on s's database, or s itself when the
// backend has no peers.
func peerOf(t *testing.T, f Factory, s store.Store) store.Store {
	t.Helper()
	p, err := f.Peer(t, s)
	switch {
	case s.Peers() && err != nil:
		t.Fatalf("open a peer: %v", err)
	case !s.Peers() && err == nil:
		t.Fatal("a peer opened a database its backend owns alone")
	case !s.Peers():
		return s
	}
	return p
}

// claimConcurrently runs workers that claim on the handles in turn until
// a claim returns nothing, and counts how often each ID was claimed.
func claimConcurrently(t *testing.T, handles []store.Store, workers int, claim func(store.Store) ([]string, error)) map[string]int {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			for {
				ids, err := claim(handles[i%len(handles)])
				if err != nil {
					errs <- err
					return
				}
				if len(ids) == 0 {
					return
				}
				mu.Lock()
				for _, id := range ids {
					seen[id]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return seen
}

func testPeerOpen(t *testing.T, f Factory) {
	s := f.Open(t)
	p := peerOf(t, f, s)
	mustEndpoint(t, s, endpoint("ep"))
	if _, err := p.EndpointGet(context.Background(), "ep"); err != nil {
		t.Fatalf("the peer does not see the endpoint: %v", err)
	}
}

func manyDeliveries(t *testing.T, s store.Store, ep string, n int) {
	t.Helper()
	ds := make([]store.Delivery, n)
	for i := range ds {
		ds[i] = delivery(ep, fmt.Sprintf("e%03d", i), int64(i))
	}
	mustEnqueue(t, s, ds...)
}

func claimWith(s store.Store, ep string, limit int, lim store.DeliveryLimits, now time.Time) (*store.DeliveryClaimResult, error) {
	return s.DeliveryClaim(context.Background(), &store.DeliveryClaimParams{EndpointID: ep, Limit: limit, Lease: time.Minute,
		DeliveryLimits: lim, Now: now})
}

// Two handles claiming at once take different deliveries, and all of
// them between them.
func testPeerClaimsDisjoint(t *testing.T, f Factory) {
	s := f.Open(t)
	handles := []store.Store{s, peerOf(t, f, s)}
	mustEndpoint(t, s, endpoint("ep"))
	const n = 60
	manyDeliveries(t, s, "ep", n)
	seen := claimConcurrently(t, handles, 8, func(h store.Store) ([]string, error) {
		res, err := claimWith(h, "ep", 3, store.DeliveryLimits{}, t0)
		if err != nil {
			return nil, err
		}
		return eventIDs(res.Deliveries), nil
	})
	if len(seen) != n {
		t.Fatalf("claimed %d distinct deliveries, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("%s claimed %d times", id, c)
		}
	}
}

// A handle that dies holding leases leaves its deliveries to the other
// once the leases end, and its late outcomes are not recorded.
func testPeerTakeover(t *testing.T, f Factory) {
	s := f.Open(t)
	p := peerOf(t, f, s)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	manyDeliveries(t, s, "ep", 3)
	dead := mustClaim(t, s, "ep", 10, t0)
	if len(dead.Deliveries) != 3 {
		t.Fatalf("claim = %d", len(dead.Deliveries))
	}
	if res := mustClaim(t, p, "ep", 10, t0.Add(30*time.Second)); len(res.Deliveries) != 0 || !res.NextDueAt.Equal(t0.Add(time.Minute)) || res.InFlight != 3 {
		t.Fatalf("claim during the leases = %+v", res)
	}
	taken := mustClaim(t, p, "ep", 10, t0.Add(time.Minute))
	if len(taken.Deliveries) != 3 {
		t.Fatalf("takeover = %d deliveries", len(taken.Deliveries))
	}
	ep, err := s.EndpointGet(ctx, "ep")
	if err != nil {
		t.Fatal(err)
	}
	late, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: ep.HealthVersion, Now: t0.Add(time.Minute),
		Results: []store.DeliveryResult{{DeliveryID: dead.Deliveries[0].ID, LeaseToken: dead.Deliveries[0].LeaseToken, Status: store.DeliveryDelivered,
			Attempt: store.DeliveryAttempt{At: t0, StatusCode: 200}}}})
	if err != nil || late.Applied != 0 {
		t.Fatalf("late outcome = %+v, %v", late, err)
	}
}

// max_in_flight holds across handles: the claim counts every handle's
// running leases, and so does a leased insert.
func testPeerMaxInFlight(t *testing.T, f Factory) {
	s := f.Open(t)
	p := peerOf(t, f, s)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	manyDeliveries(t, s, "ep", 10)
	lim := store.DeliveryLimits{MaxInFlight: 3}
	a, err := claimWith(s, "ep", 2, lim, t0)
	if err != nil || len(a.Deliveries) != 2 {
		t.Fatalf("claim a = %+v, %v", a, err)
	}
	b, err := claimWith(p, "ep", 10, lim, t0)
	if err != nil || len(b.Deliveries) != 1 || b.InFlight != 3 {
		t.Fatalf("claim b = %+v, %v", b, err)
	}
	if c, err := claimWith(p, "ep", 10, lim, t0); err != nil || len(c.Deliveries) != 0 {
		t.Fatalf("claim at the bound = %+v, %v", c, err)
	}
	// A leased insert is held to the bound too: one slot frees, so one
	// of two fresh deliveries is leased, the other waits for a claim.
	ep, err := s.EndpointGet(ctx, "ep")
	if err != nil {
		t.Fatal(err)
	}
	d := a.Deliveries[0]
	if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "ep", ExpectHealthVersion: ep.HealthVersion, Now: t0,
		Results: []store.DeliveryResult{{DeliveryID: d.ID, LeaseToken: d.LeaseToken, Status: store.DeliveryDelivered,
			Attempt: store.DeliveryAttempt{At: t0, StatusCode: 200}}}}); err != nil {
		t.Fatal(err)
	}
	fresh := []store.Delivery{delivery("ep", "f1", 100), delivery("ep", "f2", 101)}
	for i := range fresh {
		fresh[i].LeaseUntil = t0.Add(time.Minute)
	}
	res, err := p.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Deliveries: fresh, Now: t0,
		Limits: map[string]store.DeliveryLimits{"ep": lim}})
	if err != nil || res.Queued != 2 || len(res.Leased) != 1 || res.Leased[0].EventID != "f1" {
		t.Fatalf("leased insert = %+v, %v", res, err)
	}
	// Concurrent claims on both handles never hold more than the bound.
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Go(func() {
			res, err := claimWith([]store.Store{s, p}[i%2], "ep", 5, lim, t0.Add(2*time.Minute))
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			total += len(res.Deliveries)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if total != 3 {
		t.Fatalf("concurrent claims took %d, want the bound 3", total)
	}
}

// rate_limit holds across handles: one bucket in the database.
func testPeerRateLimit(t *testing.T, f Factory) {
	s := f.Open(t)
	handles := []store.Store{s, peerOf(t, f, s)}
	mustEndpoint(t, s, endpoint("ep"))
	manyDeliveries(t, s, "ep", 100)
	lim := store.DeliveryLimits{Rate: 10} // a burst of 1
	first, err := claimWith(handles[0], "ep", 10, lim, t0)
	if err != nil || len(first.Deliveries) != 1 || !first.RetryAt.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("first claim = %+v, %v", first, err)
	}
	if res, err := claimWith(handles[1], "ep", 10, lim, t0.Add(50*time.Millisecond)); err != nil || len(res.Deliveries) != 0 ||
		!res.RetryAt.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("claim on the peer before a token = %+v, %v", res, err)
	}
	// Both handles claim every 10 ms for two seconds: 20 deliveries in
	// all (one at t0, then one a tenth of a second), not 40.
	total := 1
	for ms := 10; ms <= 2000; ms += 10 {
		res, err := claimWith(handles[(ms/10)%2], "ep", 10, lim, t0.Add(time.Duration(ms)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		total += len(res.Deliveries)
	}
	if total != 21 {
		t.Fatalf("%d deliveries in 2 s at 10/s", total)
	}
}

// Two handles claiming due timers at once take different consumers, and
// all of them between them: each timer fires once.
func testPeerConsumerClaims(t *testing.T, f Factory) {
	s := f.Open(t)
	handles := []store.Store{s, peerOf(t, f, s)}
	ctx := context.Background()
	var cs []store.Consumer
	for i := range 40 {
		c := consumer(fmt.Sprintf("s:%%2Fc%02d", i), "s", fmt.Sprintf("/c%02d", i), fmt.Sprintf("/c%02d", i))
		c.DueAt = t0.Add(time.Duration(i) * time.Millisecond)
		cs = append(cs, c)
	}
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: cs}); err != nil {
		t.Fatal(err)
	}
	seen := claimConcurrently(t, handles, 6, func(h store.Store) ([]string, error) {
		res, err := h.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: t0.Add(time.Second), Limit: 4, Lease: time.Minute})
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(res.Consumers))
		for i, c := range res.Consumers {
			ids[i] = c.ID
		}
		return ids, nil
	})
	if len(seen) != len(cs) {
		t.Fatalf("claimed %d consumers, want %d", len(seen), len(cs))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s claimed %d times", id, n)
		}
	}
}

// Writers of one consumer on two handles are serialised by the
// compare-and-set on its version: each read-modify-write that succeeds
// saw the one before, so no increment is lost.
func testPeerConsumerCAS(t *testing.T, f Factory) {
	s := f.Open(t)
	handles := []store.Store{s, peerOf(t, f, s)}
	ctx := context.Background()
	c := consumer("s:%2Fx", "s", "/x", "/x")
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{c}}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			h := handles[i%2]
			for done := 0; done < each; {
				got, err := h.ConsumerGet(ctx, c.ID)
				if err != nil {
					errs <- err
					return
				}
				got.Attempts++
				_, err = h.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: *got, ExpectVersion: got.Version})
				switch {
				case errors.Is(err, store.ErrConsumerConflict):
				case err != nil:
					errs <- err
					return
				default:
					done++
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := handles[1].ConsumerGet(ctx, c.ID)
	if err != nil || got.Attempts != writers*each || got.Version != writers*each+1 {
		t.Fatalf("after the race = %+v, %v", got, err)
	}
}

// A named lease is held by one handle at a time and taken over when it
// ends. A handle opened after a backend without peers closed takes it at
// once: the holder is gone.
func testPeerNamedLease(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	acquire := func(h store.Store, at time.Duration) bool {
		t.Helper()
		ok, err := h.LeaseAcquire(ctx, &store.LeaseAcquireParams{Name: "sweep", TTL: 10 * time.Second, Now: t0.Add(at)})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !acquire(s, 0) || !acquire(s, 5*time.Second) {
		t.Fatal("the first handle does not hold the lease")
	}
	p := peerOf(t, f, s)
	if p != s {
		if acquire(p, 14*time.Second) {
			t.Fatal("the peer took a running lease")
		}
		if !acquire(p, 15*time.Second) || acquire(s, 16*time.Second) {
			t.Fatal("the lease was not taken over when it ended")
		}
	}
	s = f.Reopen(t, s)
	if got := acquire(s, 17*time.Second); got != !s.Peers() {
		t.Fatalf("a new handle took the lease: %v, want %v", got, !s.Peers())
	}
}
