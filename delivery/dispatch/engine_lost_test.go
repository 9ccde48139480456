package dispatch

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// lostStore commits the next writes that take leases and then answers
// them with store.ErrUnavailable, as when the database restarts after a
// commit and before its answer: the leases are in the rows, held by this
// live replica, and it never learns of them.
type lostStore struct {
	EngineStore
	// claims and enqueues count the claims that take deliveries, and the
	// enqueues that lease some, still to lose.
	claims, enqueues atomic.Int64
}

func (s *lostStore) DeliveryClaim(ctx context.Context, p *store.DeliveryClaimParams) (*store.DeliveryClaimResult, error) {
	res, err := s.EngineStore.DeliveryClaim(ctx, p)
	if err == nil && len(res.Deliveries) > 0 && s.claims.Add(-1) >= 0 {
		return nil, errAway
	}
	return res, err
}

func (s *lostStore) DeliveryEnqueue(ctx context.Context, p *store.DeliveryEnqueueParams) (*store.DeliveryEnqueueResult, error) {
	res, err := s.EngineStore.DeliveryEnqueue(ctx, p)
	if err == nil && len(res.Leased) > 0 && s.enqueues.Add(-1) >= 0 {
		return nil, errAway
	}
	return res, err
}

// lostRig is a rig on a lostStore, with the default sweep and a lease
// far longer than the wait of the tests.
func lostRig(t *testing.T) (*rig, *lostStore) {
	t.Helper()
	var lost *lostStore
	r := newRig(t, func(cfg *EngineConfig) {
		lost = &lostStore{EngineStore: cfg.Store}
		cfg.Store = lost
		cfg.SweepInterval = DefaultSweepInterval
		cfg.Lease = 10 * time.Minute
	})
	r.rc.SetRespond(func(int, delivery.Event) (int, map[string]string) { return http.StatusOK, nil })
	return r, lost
}

// afterSweep waits until the engine is idle, checks that an answer of
// the kind of write left (a lostStore counter) was lost, and lets the
// next sweep run.
func afterSweep(t *testing.T, left *atomic.Int64, write string) {
	t.Helper()
	synctest.Wait()
	if left.Load() > 0 {
		t.Fatalf("no %s answer was lost", write)
	}
	time.Sleep(DefaultSweepInterval + time.Second)
	synctest.Wait()
}

// A claim committed while its answer was lost does not hold its
// deliveries (and the stream of an ordered endpoint) for the lease: the
// next sweep ends the leases this replica does not send on, and the
// deliveries are sent, once each and in order, within seconds.
func TestLostClaimReleasedBySweep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r, lost := lostRig(t)
		ep := r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{Ordering: delivery.OrderingStream}})
		lost.claims.Store(1)
		r.publish("order.created", "/orders", `{"n":1}`)
		r.publish("order.created", "/orders", `{"n":2}`)
		afterSweep(t, &lost.claims, "claim")
		r.wantEachSentOnce(t, ep.ID, 2)
	})
}

// So for fresh deliveries inserted leased by a match whose answer was
// lost: the match finds the stream matched when it runs again, and the
// sweep ends the leases.
func TestLostLeasedEnqueueReleasedBySweep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r, lost := lostRig(t)
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		synctest.Wait() // the runner's first claim found nothing: fresh deliveries go leased
		lost.enqueues.Store(1)
		r.publish("order.created", "/orders", `{"n":1}`)
		afterSweep(t, &lost.enqueues, "enqueue")
		r.wantEachSentOnce(t, ep.ID, 1)
	})
}

// The sweep ends no lease that a send runs on: a delivery in flight
// while a lost claim's leases are released is recorded once, by its
// sender, and not sent again.
func TestReleaseKeepsLeasesInFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r, lost := lostRig(t)
		release := make(chan struct{})
		answer := sync.OnceFunc(func() { close(release) })
		t.Cleanup(answer) // before the engine stops, should the test fail first
		r.rc.SetRespond(func(n int, _ delivery.Event) (int, map[string]string) {
			if n == 0 {
				<-release // the first request is in flight across the sweep
			}
			return http.StatusOK, nil
		})
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		synctest.Wait()
		r.publish("order.created", "/a", `{"n":1}`)
		synctest.Wait()
		lost.enqueues.Store(1)
		r.publish("order.created", "/b", `{"n":2}`)
		afterSweep(t, &lost.enqueues, "enqueue")
		if got := len(r.rc.Requests()); got != 2 {
			t.Fatalf("%d requests after the sweep, want the one in flight and the released one", got)
		}
		answer()
		synctest.Wait()
		r.wantEachSentOnce(t, ep.ID, 2)
	})
}
